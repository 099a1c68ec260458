//! Devices and contexts: the device list (rdma-core's devices first, then the software devices),
//! opening a device by name, and querying its attributes and ports.
//!
//! ```
//! use typed_verbs::{devices, Context};
//! let ctx = Context::open("sw0")?; // by name; Context::open_from_env reads TYPED_VERBS_DEVICE
//! assert!(ctx.attr().phys_port_cnt >= 1);
//! assert_eq!(ctx.query_port(1)?.state, 4); // IBV_PORT_ACTIVE
//! for dev in devices()? {
//!     let ctx = dev.open()?;
//!     println!("{}: {} port(s), max_qp {}", ctx.device_name(), ctx.attr().phys_port_cnt, ctx.attr().max_qp);
//! }
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [software device](crate::guide::software_device) page says what `sw0` models and
//! how a program chooses it or a real device.

use crate::backend;
#[cfg(feature = "software-device")]
use crate::backend::SwDevice;
use crate::error::{DestroyError, Error, ErrorKind, Result, Verb};
use crate::ffi::sys;
use std::ffi::CStr;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Arc;

/// The environment variable that names the device [`Context::open_from_env`] opens (and the
/// tests and examples use). Unset or empty, it opens the first real device, and the software
/// device only on a machine without one: see [`Context::open_from_env`].
pub const DEVICE_ENV: &str = "TYPED_VERBS_DEVICE";

/// rdma-core's device array, freed when the last [`Device`] of it is dropped.
struct RawList(NonNull<*mut sys::ibv_device>);
// SAFETY: the array is only read after ibv_get_device_list returns, and freed once.
unsafe impl Send for RawList {}
// SAFETY: as above.
unsafe impl Sync for RawList {}
impl Drop for RawList {
    fn drop(&mut self) {
        // SAFETY: from ibv_get_device_list, freed exactly once here.
        unsafe { sys::ibv_free_device_list(self.0.as_ptr()) }
    }
}

enum DeviceRef {
    #[cfg(feature = "software-device")]
    Software(Arc<SwDevice>),
    RdmaCore {
        _list: Arc<RawList>,
        dev: NonNull<sys::ibv_device>,
    },
}

/// An RDMA device that can be opened.
///
/// ```
/// let list = typed_verbs::devices()?;
/// for d in &list {
///     println!("{} (software: {})", d.name(), d.is_software());
/// }
/// let sw0 = list.iter().find(|d| d.name() == "sw0").expect("the software device");
/// let ctx = sw0.open()?;
/// # drop(ctx);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Device {
    name: String,
    dev: DeviceRef,
}

// SAFETY: an ibv_device is immutable after enumeration; rdma-core allows opening it from any
// thread.
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name)
            .field("software", &self.is_software())
            .finish()
    }
}

/// Every device: the devices libibverbs finds (`ibv_get_device_list`, in its order), then the
/// registered software devices (with the `software-device` feature, on by default), so that the
/// first device of the list is a real one whenever the machine has one.
///
/// A machine without any RDMA device (libibverbs says ENOSYS) lists the software devices alone.
/// Under Miri, which cannot call C, the list is the software devices alone.
///
/// # Errors
/// The errno of `ibv_get_device_list` ([`ErrorKind::Os`]), but for `ENOSYS` (no RDMA support
/// in the kernel), which gives the software devices alone.
///
/// ```
/// let names: Vec<String> = typed_verbs::devices()?.iter().map(|d| d.name().to_owned()).collect();
/// assert!(names.iter().any(|n| n == "sw0"));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn devices() -> Result<Vec<Device>> {
    #[cfg_attr(not(feature = "software-device"), allow(unused_mut))]
    let mut out = if cfg!(miri) {
        Vec::new()
    } else {
        rdma_core_devices()?
    };
    #[cfg(feature = "software-device")]
    out.extend(backend::software_devices().into_iter().map(|d| Device {
        name: d.name.clone(),
        dev: DeviceRef::Software(d),
    }));
    Ok(out)
}

/// The devices libibverbs lists; none where it says ENOSYS (no RDMA device, or no kernel support).
fn rdma_core_devices() -> Result<Vec<Device>> {
    let mut out = Vec::new();
    let mut n = 0;
    // SAFETY: plain call; the result is checked for NULL.
    let list = unsafe { sys::ibv_get_device_list(&mut n) };
    match NonNull::new(list) {
        None => {
            let e = Error::last_os(Verb::GetDeviceList);
            if e.errno() != libc::ENOSYS {
                return Err(e);
            }
        }
        Some(list) => {
            let list = Arc::new(RawList(list));
            for i in 0..n.max(0) as usize {
                // SAFETY: the array has `n` valid entries.
                let dev = unsafe { *list.0.as_ptr().add(i) };
                let Some(dev) = NonNull::new(dev) else { break };
                // SAFETY: a live device; the name is a NUL-terminated string inside it.
                let name = unsafe { CStr::from_ptr(sys::ibv_get_device_name(dev.as_ptr())) };
                let name = name.to_string_lossy().into_owned();
                out.push(Device {
                    name,
                    dev: DeviceRef::RdmaCore {
                        _list: list.clone(),
                        dev,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// Which of `list` [`Context::open_from_env`] opens when [`DEVICE_ENV`] is unset: the first
/// real device, else the first software device; `None` for an empty list.
fn default_device<T>(list: &[T], is_software: impl Fn(&T) -> bool) -> Option<usize> {
    list.iter()
        .position(|d| !is_software(d))
        .or_else(|| list.iter().position(&is_software))
}

impl Device {
    /// The device's name (`sw0`, `rxe0`, `mlx5_0`, ...).
    ///
    /// ```
    /// let names: Vec<String> = typed_verbs::devices()?.iter().map(|d| d.name().to_owned()).collect();
    /// assert!(names.contains(&"sw0".to_owned()));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a software device.
    ///
    /// ```
    /// let sw: Vec<_> = typed_verbs::devices()?.into_iter().filter(|d| d.is_software()).collect();
    /// assert!(!sw.is_empty());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_software(&self) -> bool {
        match self.dev {
            #[cfg(feature = "software-device")]
            DeviceRef::Software(_) => true,
            DeviceRef::RdmaCore { .. } => false,
        }
    }

    /// Opens the device (`ibv_open_device`) and reads its attributes.
    ///
    /// # Errors
    /// The errno of `ibv_open_device` ([`ErrorKind::Os`]), e.g. `EACCES` without permission on
    /// the device's uverbs file, or of the `ibv_query_device` that follows it.
    ///
    /// ```
    /// let dev = typed_verbs::devices()?.into_iter().find(|d| d.name() == "sw0").unwrap();
    /// let ctx = dev.open()?;
    /// assert_eq!(ctx.device_name(), "sw0");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn open(&self) -> Result<Context> {
        let raw = match &self.dev {
            #[cfg(feature = "software-device")]
            DeviceRef::Software(d) => backend::open_software(d),
            DeviceRef::RdmaCore { dev, .. } => {
                // SAFETY: a live device of a live list.
                let ctx = unsafe { sys::ibv_open_device(dev.as_ptr()) };
                NonNull::new(ctx).ok_or_else(|| Error::last_os(Verb::OpenDevice))?
            }
        };
        Context::from_raw(raw, self.name.clone())
    }
}

/// What the typed layer's checks read of a context, read once per context rather than per
/// call: the device's attributes (`ibv_query_device`, when the context is opened) and each
/// port's table lengths (`ibv_query_port` of each port, the first time a check needs them).
/// These do not change while the context is open. A port's live values (its state, active MTU,
/// LID) do, and are not kept: what needs them queries the port
/// ([`Qp::endpoint`](crate::Qp::endpoint)).
struct Cached {
    dev: sys::ibv_device_attr,
    /// Set once, the first time a check needs it (a lock of the crate's own, which the
    /// sanitizer lane's helgrind sees; std's `OnceLock` orders through a futex it does not).
    ports: crate::sync::Mutex<Option<Arc<[PortTables]>>>,
}

/// A port's table lengths, as `ibv_query_port` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortTables {
    /// "Length of partition table".
    pub(crate) pkey_tbl_len: u16,
    /// "Length of source GID table" (a negative one read as 0).
    pub(crate) gid_tbl_len: u32,
}

/// The open contexts' [`Cached`], by the context's address: entered when a [`Context`] opens,
/// left before its `ibv_close_device` (a context the crate did not open is not in it, and is
/// queried on each call).
static CACHE: crate::sync::RwLock<std::collections::BTreeMap<usize, Arc<Cached>>> =
    crate::sync::RwLock::new(std::collections::BTreeMap::new());

fn cached(ctx: *mut sys::ibv_context) -> Option<Arc<Cached>> {
    CACHE.read().get(&(ctx as usize)).cloned()
}

/// The context `ctx` is about to be closed: its entry leaves the cache (a new context at the
/// same address must not find it).
fn uncache(ctx: *mut sys::ibv_context) {
    CACHE.write().remove(&(ctx as usize));
}

/// The device's attributes (the limits a create is checked against: of a QP, SRQ, AH, slot
/// region): read once, when the context was opened (`ibv_query_device` through the seam for a
/// context this crate did not open).
///
/// # Safety
/// `ctx` is a live context.
pub(crate) unsafe fn device_attr(
    ctx: *mut sys::ibv_context,
    verb: Verb,
) -> Result<sys::ibv_device_attr> {
    if let Some(c) = cached(ctx) {
        return Ok(c.dev);
    }
    // SAFETY: ibv_device_attr is plain C data.
    let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
    // SAFETY: caller's contract; `a` valid for writes.
    unsafe { backend::of(ctx).query_device(ctx, &mut a) }.map_err(|e| Error::os(verb, e))?;
    Ok(a)
}

/// Each port's table lengths (ports 1, 2, ...): read once per context, the first time they are
/// needed (`ibv_query_port` of each port), or on each call for a context this crate did not
/// open. The errno is `ibv_query_port`'s.
///
/// # Safety
/// `ctx` is a live context.
pub(crate) unsafe fn port_tables(
    ctx: *mut sys::ibv_context,
) -> std::result::Result<Arc<[PortTables]>, i32> {
    /// `ibv_query_port` of each of the device's `count` ports.
    ///
    /// # Safety
    /// `ctx` is a live context.
    unsafe fn query(
        ctx: *mut sys::ibv_context,
        count: u8,
    ) -> std::result::Result<Arc<[PortTables]>, i32> {
        (1..=count)
            .map(|port| {
                // SAFETY: plain C data.
                let mut p: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
                // SAFETY: caller's contract; a port the device has; `p` valid for writes.
                unsafe { backend::of(ctx).query_port(ctx, port, &mut p) }?;
                Ok(PortTables {
                    pkey_tbl_len: p.pkey_tbl_len,
                    gid_tbl_len: p.gid_tbl_len.max(0) as u32,
                })
            })
            .collect()
    }
    let Some(c) = cached(ctx) else {
        // SAFETY: caller's contract.
        let dev = unsafe { device_attr(ctx, Verb::QueryDevice) }.map_err(|e| e.errno())?;
        // SAFETY: caller's contract.
        return unsafe { query(ctx, dev.phys_port_cnt) };
    };
    if let Some(p) = c.ports.lock().clone() {
        return Ok(p);
    }
    // SAFETY: caller's contract. Two threads may both query the first time (the lock is not
    // held across the calls); one keeps its answer, and both answers are the same (the tables
    // do not change).
    let p = unsafe { query(ctx, c.dev.phys_port_cnt) }?;
    let kept = c.ports.lock().get_or_insert(p).clone();
    Ok(kept)
}

/// The attributes of a device (`struct ibv_device_attr`), the limits the typed layer checks
/// requests against before any FFI call.
///
/// ```
/// let ctx = typed_verbs::Context::open("sw0")?;
/// let attr = ctx.attr();
/// println!("max_cqe {} max_qp_wr {} ports {}", attr.max_cqe, attr.max_qp_wr, attr.phys_port_cnt);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct DeviceAttr {
    pub fw_ver: String,
    pub node_guid: u64,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    pub max_sge: u32,
    pub max_cq: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    /// RDMA reads and atomics a QP may have outstanding as the responder: the largest
    /// `max_dest_rd_atomic`.
    pub max_qp_rd_atom: u32,
    /// RDMA reads and atomics a QP may initiate at once: the largest `max_rd_atomic`.
    pub max_qp_init_rd_atom: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_srq_sge: u32,
    pub max_mcast_grp: u32,
    pub max_mcast_qp_attach: u32,
    pub max_ah: u32,
    pub phys_port_cnt: u8,
}

impl DeviceAttr {
    fn from_raw(a: &sys::ibv_device_attr) -> Self {
        let u = |v: i32| v.max(0) as u32;
        // SAFETY: fw_ver is a NUL-terminated array (zero-filled by both backends).
        let fw = unsafe { CStr::from_ptr(a.fw_ver.as_ptr()) };
        DeviceAttr {
            fw_ver: fw.to_string_lossy().into_owned(),
            node_guid: u64::from_be(a.node_guid),
            vendor_id: a.vendor_id,
            vendor_part_id: a.vendor_part_id,
            max_qp: u(a.max_qp),
            max_qp_wr: u(a.max_qp_wr),
            max_sge: u(a.max_sge),
            max_cq: u(a.max_cq),
            max_cqe: u(a.max_cqe),
            max_mr: u(a.max_mr),
            max_pd: u(a.max_pd),
            max_qp_rd_atom: u(a.max_qp_rd_atom),
            max_qp_init_rd_atom: u(a.max_qp_init_rd_atom),
            max_srq: u(a.max_srq),
            max_srq_wr: u(a.max_srq_wr),
            max_srq_sge: u(a.max_srq_sge),
            max_mcast_grp: u(a.max_mcast_grp),
            max_mcast_qp_attach: u(a.max_mcast_qp_attach),
            max_ah: u(a.max_ah),
            phys_port_cnt: a.phys_port_cnt,
        }
    }
}

/// The attributes of a port (`struct ibv_port_attr`).
///
/// ```
/// let ctx = typed_verbs::Context::open("sw0")?;
/// let port = ctx.query_port(1)?;
/// println!("state {} active_mtu {} link_layer {}", port.state, port.active_mtu, port.link_layer);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct PortAttr {
    /// `enum ibv_port_state` (4 is ACTIVE).
    pub state: u32,
    /// `enum ibv_mtu` (1: 256 ... 5: 4096).
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: u32,
    /// The length of the port's P_Key table ("Length of partition table").
    pub pkey_tbl_len: u16,
    pub lid: u16,
    /// 1: InfiniBand, 2: Ethernet (RoCE).
    pub link_layer: u8,
}

struct ContextInner {
    raw: NonNull<sys::ibv_context>,
    name: String,
    attr: DeviceAttr,
}

/// An open device context (`struct ibv_context`). Everything else is created from it and
/// holds it (borrows it, or keeps it alive through an `Arc`: [`crate::object::parent`]), so it cannot
/// be closed while any of them lives.
///
/// ```
/// use typed_verbs::{Context, Pd};
/// let ctx = Context::open("sw0")?; // or Context::open_from_env()?
/// println!("{}: {} ports, max_qp {}", ctx.device_name(), ctx.attr().phys_port_cnt, ctx.attr().max_qp);
/// let pd = Pd::new(&ctx)?;
/// drop(pd);
/// ctx.close()?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// Closing a context while an object it made lives does not compile:
///
/// ```compile_fail,E0505
/// # use typed_verbs::{Context, Pd};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// ctx.close()?; // error[E0505]: cannot move out of `ctx` because it is borrowed
/// drop(pd);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Context {
    /// Taken (and freed after `ibv_close_device`) by `Drop` or `close`.
    inner: ManuallyDrop<Box<ContextInner>>,
}

// SAFETY: libibverbs contexts are thread-safe; the Rust-side fields are immutable.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl Context {
    fn from_raw(raw: NonNull<sys::ibv_context>, name: String) -> Result<Context> {
        // SAFETY: ibv_device_attr is plain C data.
        let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: a live context just opened; `a` is valid for writes.
        let queried = unsafe { backend::of(raw.as_ptr()).query_device(raw.as_ptr(), &mut a) };
        if let Err(e) = queried {
            // SAFETY: the context was opened above and nothing else uses it: close it so that
            // the error path leaks nothing.
            let _ = unsafe { backend::of(raw.as_ptr()).close_device(raw.as_ptr()) };
            return Err(Error::os(Verb::QueryDevice, e));
        }
        let cached = Cached {
            dev: a,
            ports: crate::sync::Mutex::new(None),
        };
        CACHE
            .write()
            .insert(raw.as_ptr() as usize, Arc::new(cached));
        Ok(Context {
            inner: ManuallyDrop::new(Box::new(ContextInner {
                raw,
                name,
                attr: DeviceAttr::from_raw(&a),
            })),
        })
    }

    /// Opens the device named `name`: a software device or one libibverbs lists.
    ///
    /// # Errors
    /// - [`ErrorKind::NoSuchDevice`] when no device of that name is listed (errno `ENODEV`).
    /// - The errno of `ibv_get_device_list`, `ibv_open_device` or `ibv_query_device`
    ///   ([`ErrorKind::Os`]), e.g. `EACCES` without permission on the device.
    ///
    /// ```
    /// use typed_verbs::{Context, ErrorKind};
    /// let ctx = Context::open("sw0")?;
    /// let err = Context::open("no-such-device").unwrap_err();
    /// assert!(matches!(err.kind, ErrorKind::NoSuchDevice(_)));
    /// # drop(ctx);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn open(name: &str) -> Result<Context> {
        devices()?
            .into_iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| Error {
                verb: Verb::OpenDevice,
                kind: ErrorKind::NoSuchDevice(name.to_owned()),
            })?
            .open()
    }

    /// Opens the device named by [`DEVICE_ENV`]; when the variable is unset (or empty), the
    /// first real device of [`devices`], and the [software device](crate::software) `sw0` only
    /// on a machine without any real device.
    ///
    /// A program that must not run on the software device checks [`Context::is_software`], or
    /// builds without the `software-device` feature. This function prints and logs nothing: the
    /// choice is the documented rule above, and a library writing to stderr on a normal path
    /// would be noise in every program that uses it. To run on `sw0` next to real devices, name
    /// it: `TYPED_VERBS_DEVICE=sw0`.
    ///
    /// # Errors
    ///
    /// What [`Context::open`] returns for the named device ([`ErrorKind::NoSuchDevice`] too for a
    /// name that is not UTF-8, which names no device); with the variable unset, the error of
    /// `ibv_get_device_list` or of opening the chosen device, and `ENODEV` from
    /// `ibv_get_device_list` when there is no device at all (no real device, and the
    /// `software-device` feature off).
    ///
    /// ```
    /// use typed_verbs::Context;
    /// // TYPED_VERBS_DEVICE=rxe0 cargo run ... picks rxe0.
    /// let ctx = Context::open_from_env()?;
    /// println!("running on {}", ctx.device_name());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn open_from_env() -> Result<Context> {
        match std::env::var(DEVICE_ENV) {
            Ok(name) if !name.is_empty() => Context::open(&name),
            // A name that is not UTF-8 names no device: an error, not the default device.
            Err(std::env::VarError::NotUnicode(name)) => Err(Error {
                verb: Verb::OpenDevice,
                kind: ErrorKind::NoSuchDevice(name.to_string_lossy().into_owned()),
            }),
            _ => {
                let mut list = devices()?;
                let i = default_device(&list, Device::is_software)
                    .ok_or_else(|| Error::os(Verb::GetDeviceList, libc::ENODEV))?;
                list.swap_remove(i).open()
            }
        }
    }

    /// The name of the device this context is open on.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert_eq!(ctx.device_name(), "sw0");
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn device_name(&self) -> &str {
        &self.inner.name
    }

    /// Whether this context is on a software device.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(ctx.is_software());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_software(&self) -> bool {
        backend::is_software(self.as_raw())
    }

    /// The device's attributes, read when the context was opened.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(ctx.attr().max_qp_wr >= 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn attr(&self) -> &DeviceAttr {
        &self.inner.attr
    }

    /// `ibv_query_device`: reads the attributes again.
    ///
    /// # Errors
    /// The device's errno from `ibv_query_device` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let attr = ctx.query_device()?;
    /// assert_eq!(attr.max_cqe, ctx.attr().max_cqe);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_device(&self) -> Result<DeviceAttr> {
        // SAFETY: ibv_device_attr is plain C data.
        let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, `a` valid for writes.
        unsafe { backend::of(self.as_raw()).query_device(self.as_raw(), &mut a) }
            .map_err(|e| Error::os(Verb::QueryDevice, e))?;
        Ok(DeviceAttr::from_raw(&a))
    }

    /// `port` in `1..=phys_port_cnt`, or [`ErrorKind::OutOfRange`] naming `port_num` (for
    /// `verb`): checked before a verb that takes a port number.
    pub(crate) fn check_port(&self, verb: Verb, port: u8) -> Result<()> {
        let cnt = self.inner.attr.phys_port_cnt;
        if port == 0 || port > cnt {
            return Err(Error::range(verb, "port_num", port.into(), 1, cnt.into()));
        }
        Ok(())
    }

    /// `ibv_query_port`. Ports are numbered from 1.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `port_num` for a port outside `1..=phys_port_cnt`, before
    ///   the call.
    /// - The device's errno from `ibv_query_port` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let port = ctx.query_port(1)?;
    /// assert!(port.gid_tbl_len > 0);
    /// assert!(ctx.query_port(0).is_err()); // ports are numbered from 1
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        self.check_port(Verb::QueryPort, port)?;
        // SAFETY: ibv_port_attr is plain C data.
        let mut p: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, `p` valid for writes.
        unsafe { backend::of(self.as_raw()).query_port(self.as_raw(), port, &mut p) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        Ok(PortAttr {
            state: p.state,
            max_mtu: p.max_mtu,
            active_mtu: p.active_mtu,
            gid_tbl_len: p.gid_tbl_len.max(0) as u32,
            pkey_tbl_len: p.pkey_tbl_len,
            lid: p.lid,
            link_layer: p.link_layer,
        })
    }

    /// `context->num_comp_vectors`: a CQ's `comp_vector` must be below it.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(ctx.num_comp_vectors() >= 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn num_comp_vectors(&self) -> u32 {
        // SAFETY: a live context; the field is written once at open.
        unsafe { (*self.as_raw()).num_comp_vectors.max(0) as u32 }
    }

    /// The C context, for calls this crate does not wrap. It stays owned by `self`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// assert!(unsafe { (*ctx.as_raw()).num_comp_vectors } > 0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::ibv_context {
        self.inner.raw.as_ptr()
    }

    /// `ibv_close_device`. Every object of the context is gone by now (they borrow it), but for
    /// a QP dropped inside this thread's polling batch, whose destroy waits for the batch's end
    /// ([the safety model](crate::safety)): then the close is refused with
    /// [`ErrorKind::BatchOpen`] (rdma-core would close the
    /// context under that QP); dropping the context instead closes it after the QP.
    ///
    /// If the close fails, the error is returned and the context dropped (its `Drop` closes it
    /// after that QP, or tries once more); [`try_close`](Self::try_close) gives it back.
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] while a QP of this context dropped inside this thread's polling
    ///   batch waits for the batch's end.
    /// - The device's errno from `ibv_close_device` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// let ctx = typed_verbs::Context::open("sw0")?;
    /// ctx.close()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn close(self) -> Result<()> {
        Ok(self.try_close()?)
    }

    /// `ibv_close_device`, as [`close`](Self::close); on failure the context comes back,
    /// still open, inside the error.
    ///
    /// # Errors
    /// As [`close`](Self::close); the [`DestroyError`] holds the context, still open.
    ///
    /// ```
    /// let ctx = typed_verbs::Context::open("sw0")?;
    /// if let Err(e) = ctx.try_close() {
    ///     eprintln!("{}; closing {} later", e.error, e.object.device_name());
    /// }
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_close(self) -> Result<(), DestroyError<Self>> {
        if crate::object::teardown::waiting(self.as_raw()) {
            return Err(DestroyError {
                object: self,
                error: Error {
                    verb: Verb::CloseDevice,
                    kind: crate::error::ErrorKind::BatchOpen,
                },
            });
        }
        let raw = self.as_raw();
        uncache(raw);
        // SAFETY: a live context, closed once with success (then `self` is not dropped). Its
        // objects borrow it, so none is left but leaked ones, which nothing safe reaches again
        // (the software device refuses with EBUSY), and none is queued behind a batch (checked
        // above).
        match unsafe { backend::of(raw).close_device(raw) } {
            Ok(()) => {
                let mut this = ManuallyDrop::new(self);
                // SAFETY: the Box is dropped exactly once here, without running Context::drop.
                drop(unsafe { ManuallyDrop::take(&mut this.inner) });
                Ok(())
            }
            Err(e) => Err(DestroyError {
                object: self,
                error: Error::os(Verb::CloseDevice, e),
            }),
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        /// `ibv_close_device`, then the context's own allocation (`inner`, a leaked
        /// `Box<ContextInner>`), which the device list and the backends may read until then.
        unsafe fn close(raw: *mut std::os::raw::c_void, inner: *mut std::os::raw::c_void) {
            let raw = raw.cast::<sys::ibv_context>();
            uncache(raw);
            // SAFETY: `drop`'s context, closed once; `inner` its box, freed once. An error
            // cannot be reported from drop (use `close`): the context then stays open, and
            // its box allocated.
            unsafe {
                if backend::of(raw).close_device(raw).is_ok() {
                    drop(Box::from_raw(inner.cast::<ContextInner>()));
                }
            }
        }
        let raw = self.as_raw();
        // SAFETY: taken once, here; `self.inner` is not used again.
        let inner = Box::into_raw(unsafe { ManuallyDrop::take(&mut self.inner) });
        // SAFETY: dropped once: a live context whose objects are gone (they borrow it), queued
        // before it, or leaked (nothing safe reaches those again); closed once by `close`.
        unsafe { crate::object::drop_or_queue(raw, raw.cast(), inner.cast(), close) }
    }
}

impl crate::sealed::SealedParent for Context {}
impl crate::object::parent::ParentObject for Context {}

#[cfg(test)]
mod tests {
    use super::default_device;

    /// `open_from_env`'s choice with the variable unset, on injected device lists (name, is it
    /// software).
    #[test]
    fn the_default_device_is_the_first_real_one_and_software_only_without_one() {
        let pick = |list: &[(&'static str, bool)]| default_device(list, |d| d.1).map(|i| list[i].0);
        assert_eq!(pick(&[("mlx5_0", false), ("sw0", true)]), Some("mlx5_0"));
        // Whatever the order of the list, a real device wins.
        assert_eq!(pick(&[("sw0", true), ("rxe0", false)]), Some("rxe0"));
        assert_eq!(
            pick(&[("sw0", true), ("rxe0", false), ("mlx5_0", false)]),
            Some("rxe0")
        );
        assert_eq!(pick(&[("sw0", true), ("sw1", true)]), Some("sw0"));
        assert_eq!(pick(&[]), None);
    }

    /// The device list puts every real device before every software device.
    #[test]
    fn real_devices_come_first_in_the_list() {
        let list = super::devices().expect("device list");
        let first_software = list.iter().position(|d| d.is_software());
        if let Some(i) = first_software {
            assert!(
                list[i..].iter().all(|d| d.is_software()),
                "a real device follows a software device: {list:?}"
            );
        }
        #[cfg(feature = "software-device")]
        assert!(first_software.is_some(), "sw0 is always listed: {list:?}");
    }
}
