//! The software device's test hooks: the one way the typed layer and programs reach the
//! software provider other than through the verbs (which go through the backend seam on every
//! device).
//!
//! ```
//! use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
//! let ctx = Context::open(software::DEFAULT_DEVICE)?; // "sw0"
//! let cq = Cq::builder(&ctx).cqe(4).build()?;
//! software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
//! assert_eq!(software::live_objects(&ctx).map(|l| l.cqs), Some(1));
//! let mut wc = [const { WorkCompletion::new() }; 4];
//! assert_eq!(cq.poll(&mut wc)?.len(), 1);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [software device](crate::guide::software_device) page says what the device
//! models, how it agrees with rxe, and how to configure it.
//!
//! The software device is an in-process verbs provider, the crate's embedded default (its
//! implementation is a private backend beside rdma-core's). It fills the very C structures a
//! hardware provider fills, so the typed layer's data path is the same code on it and on
//! rdma-core; its control path follows the kernel's rules as rxe shows them, and it moves data
//! between its QPs synchronously within the process, as rxe does. An RC request completes inside
//! the call that carried it out, unless the device's [`SwConfig::ack_delay`] makes its
//! acknowledgement come later, as rxe's does (sw0 takes it from `TYPED_VERBS_SW_ACK_DELAY_US`):
//! then the peer's answer can complete first, and code that assumes otherwise fails on any
//! machine, not only on rxe.
//!
//! A device named [`DEFAULT_DEVICE`] with [`SwConfig::default`] is always in the device list.
//! [`register`] adds more, each with its own limits, so a test can make one behave like a given
//! real device. [`inject`] puts a completion into a CQ, so polling can be tested without traffic;
//! [`live_objects`] counts what a context holds, so a test can show that no path leaks.
//!
//! The provider reports errnos; the hooks here turn them into an [`Error`] naming the hook, and
//! fail with [`ErrorKind::NotSoftware`] on a real device's objects before reaching it.

use crate::backend::software as provider;
use crate::cq::wc::{WcOpcode, WcStatus};
use crate::cq::AnyCq;
use crate::device::Context;
use crate::error::{Error, ErrorKind, Result, Verb};
use provider::{Cqe, Pushed};

pub use provider::{LiveObjects, SwConfig, DEFAULT_DEVICE};

/// Adds a software device named `name` with `config` to the device list. It stays registered for
/// the life of the process, like a device that was plugged in.
///
/// Fails with EEXIST if a software device already has that name, and with EINVAL for an empty
/// name, a name of more than 63 bytes, a config with zero `num_comp_vectors` or `max_cqe`, or a
/// limit that `struct ibv_device_attr` cannot carry (its `int` fields: above `i32::MAX`).
///
/// # Errors
/// The software device's errno ([`ErrorKind::Os`], verb naming the hook): `EEXIST` for a name
/// already registered, `EINVAL` for an empty name, one over 63 bytes, zero `num_comp_vectors` or
/// `max_cqe`, or a limit over `i32::MAX`.
///
/// ```
/// use typed_verbs::{software::{self, SwConfig}, Context};
/// software::register("sw-like-rxe", SwConfig::like_rxe())?;
/// let ctx = Context::open("sw-like-rxe")?;
/// assert!(ctx.is_software());
/// assert!(software::register("sw-like-rxe", SwConfig::default()).is_err()); // EEXIST
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn register(name: &str, config: SwConfig) -> Result<()> {
    provider::register(name, config).map_err(|e| Error::os(Verb::RegisterSoftwareDevice, e))
}

/// The objects a software context holds now; `None` for a context on a real device.
///
/// ```
/// use typed_verbs::{software, Context, Pd};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// assert_eq!(software::live_objects(&ctx).map(|l| l.pds), Some(1));
/// drop(pd);
/// assert_eq!(software::live_objects(&ctx).map(|l| l.pds), Some(0));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn live_objects(ctx: &Context) -> Option<LiveObjects> {
    // SAFETY: the live context of `ctx`.
    unsafe { provider::live_objects(ctx.as_raw()) }
}

/// Raises the async event `event_type` about port `port` on a software context, as the kernel
/// reports a port's event: it waits until `ibv_get_async_event` reads it. Any value that names
/// no object may be raised, including one `enum ibv_event_type` does not have (a newer kernel's),
/// to test how such a value is read ([`AsyncEvent::Other`](crate::AsyncEvent::Other)).
///
/// Fails with [`ErrorKind::NotSoftware`] on a real device's context, with EINVAL for a type
/// that names a CQ, QP, SRQ or WQ (it would need a live object) or for port 0, and with EBADF
/// for a context without an async event fd.
///
/// # Errors
/// [`ErrorKind::NotSoftware`] on a real device's context; the software device's errno
/// ([`ErrorKind::Os`]): `EINVAL` for an event type that names an object or for port 0, `EBADF`
/// for a context without an async event fd.
///
/// ```
/// use typed_verbs::{software, AsyncEvent, Context};
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, 42, 1)?; // a type the headers lack
/// assert_eq!(*ctx.get_async_event()?, AsyncEvent::Other(42));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn raise_port_event(ctx: &Context, event_type: u32, port: u8) -> Result<()> {
    let raw = ctx.as_raw();
    require_software(raw, Verb::RaiseAsyncEvent)?;
    // SAFETY: a live software context (checked above).
    unsafe { provider::raise_port_event(raw, event_type, port) }
        .map_err(|e| Error::os(Verb::RaiseAsyncEvent, e))
}

/// Puts `completion` into `cq`, a CQ of the software device, as the device would after a work
/// request finished. The hook that lets polling be tested before traffic exists.
///
/// Fails with [`ErrorKind::NotSoftware`] on a real device's CQ, and with
/// [`ErrorKind::CqOverrun`] when the CQ already holds `cqe` completions (a device would move the
/// CQ to the error state). A CQ created with IGNORE_OVERRUN instead drops the completion and
/// counts it (see [`lost_completions`]): "CQEs might be lost".
///
/// # Errors
/// [`ErrorKind::NotSoftware`] on a real device's CQ; [`ErrorKind::CqOverrun`] when the CQ is
/// full (and was not created with IGNORE_OVERRUN).
///
/// ```
/// use typed_verbs::{software, Context, Cq, ErrorKind, InjectedCompletion, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let cq = Cq::builder(&ctx).cqe(1).build()?;
/// let n = cq.cqe(); // at least 1
/// for i in 0..n {
///     software::inject(&cq, InjectedCompletion::success(i.into(), WcOpcode::RECV))?;
/// }
/// let full = software::inject(&cq, InjectedCompletion::success(99, WcOpcode::RECV)).unwrap_err();
/// assert_eq!(full.kind, ErrorKind::CqOverrun);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn inject<Q: AnyCq + ?Sized>(cq: &Q, completion: InjectedCompletion) -> Result<()> {
    let raw = cq.as_raw_cq();
    // SAFETY: `cq` is a live CQ, so its context pointer is live too.
    require_software(unsafe { (*raw).context }, Verb::InjectCompletion)?;
    // SAFETY: a live software CQ (checked above).
    match unsafe { provider::push(raw, &completion.cqe) } {
        Pushed::Stored | Pushed::Lost => Ok(()),
        Pushed::Overrun => Err(Error {
            verb: Verb::InjectCompletion,
            kind: ErrorKind::CqOverrun,
        }),
    }
}

/// How many completions a software CQ created with IGNORE_OVERRUN dropped because it was full;
/// `None` for a real device's CQ.
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// // SAFETY: this program accepts losing completions past the CQ's size (it counts them).
/// let cq = unsafe { CqEx::<Standard>::builder(&ctx).cqe(1).ignore_overrun() }.build()?;
/// for i in 0..=u64::from(cq.cqe()) {
///     software::inject(&cq, InjectedCompletion::success(i, WcOpcode::RECV))?;
/// }
/// assert_eq!(software::lost_completions(&cq), Some(1));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn lost_completions<Q: AnyCq + ?Sized>(cq: &Q) -> Option<u64> {
    let raw = cq.as_raw_cq();
    // SAFETY: a live CQ, so its context is live; checked to be a software CQ first.
    unsafe { crate::backend::is_software((*raw).context).then(|| provider::lost_completions(raw)) }
}

/// Whether a software CQ has overrun (and would be in the error state); `None` for a real
/// device's CQ.
///
/// ```
/// # use typed_verbs::{software, Context, Cq};
/// let ctx = Context::open("sw0")?;
/// let cq = Cq::builder(&ctx).cqe(4).build()?;
/// assert_eq!(software::has_overrun(&cq), Some(false));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub fn has_overrun<Q: AnyCq + ?Sized>(cq: &Q) -> Option<bool> {
    let raw = cq.as_raw_cq();
    // SAFETY: as in `lost_completions`.
    unsafe { crate::backend::is_software((*raw).context).then(|| provider::has_overrun(raw)) }
}

/// Fails with [`ErrorKind::NotSoftware`] unless `ctx` is a software context.
fn require_software(ctx: *mut crate::ffi::sys::ibv_context, verb: Verb) -> Result<()> {
    if crate::backend::is_software(ctx) {
        Ok(())
    } else {
        Err(Error {
            verb,
            kind: ErrorKind::NotSoftware,
        })
    }
}

/// A completion to put into a software-device CQ with [`inject`]: what the device would write
/// after a work request finished. Fields that are not set read as zero.
///
/// ```
/// use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<wc_flags!(BYTE_LEN | IMM | SRC_QP)>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(100).imm_data(5).src_qp(0x42))?;
/// software::inject(&cq, InjectedCompletion::error(2, WcStatus::WR_FLUSH_ERR, 0))?;
/// let mut seen = 0;
/// while cq.poll_batch(|b| match b.completion().result() {
///     Ok(wc) => assert_eq!((wc.byte_len(), wc.imm_data(), wc.src_qp()), (100, Some(5), 0x42)),
///     Err(wc) => assert_eq!(wc.status(), WcStatus::WR_FLUSH_ERR),
/// })?.is_some() { seen += 1; }
/// assert_eq!(seen, 2);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedCompletion {
    cqe: Cqe,
}

/// Setters of fields written as given: `name: type`, each with its docs.
macro_rules! field_setters {
    ($($(#[$doc:meta])* $f:ident: $t:ty;)*) => {$(
        $(#[$doc])*
        pub fn $f(mut self, v: $t) -> Self {
            self.cqe.$f = v;
            self
        }
    )*};
}

impl InjectedCompletion {
    /// A successful completion of work request `wr_id` with `opcode`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(3, WcOpcode::RDMA_WRITE))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").opcode(), WcOpcode::RDMA_WRITE))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn success(wr_id: u64, opcode: WcOpcode) -> Self {
        let cqe = Cqe {
            wr_id,
            status: WcStatus::SUCCESS.raw(),
            opcode: opcode.raw(),
            ..Cqe::default()
        };
        InjectedCompletion { cqe }
    }

    /// A failed completion of `wr_id`: `status` (not [`WcStatus::SUCCESS`]) and the device's
    /// `vendor_err`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(3, WcStatus::RETRY_EXC_ERR, 0))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().status(), WcStatus::RETRY_EXC_ERR))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn error(wr_id: u64, status: WcStatus, vendor_err: u32) -> Self {
        let cqe = Cqe {
            wr_id,
            status: status.raw(),
            vendor_err,
            ..Cqe::default()
        };
        InjectedCompletion { cqe }
    }

    /// Sets `byte_len`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(4096))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").byte_len(), 4096))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn byte_len(mut self, v: u32) -> Self {
        self.cqe.byte_len = v;
        self
    }
    /// Sets immediate data (host byte order) and the completion's `IBV_WC_WITH_IMM` flag.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(0xabcd))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").imm_data(), Some(0xabcd)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn imm_data(mut self, v: u32) -> Self {
        self.cqe.imm_or_inv = v.to_be();
        self.cqe.wc_flags =
            (self.cqe.wc_flags | crate::ffi::IBV_WC_WITH_IMM) & !crate::ffi::IBV_WC_WITH_INV;
        self
    }
    /// Sets an invalidated rkey and the completion's `IBV_WC_WITH_INV` flag.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).invalidated_rkey(0x55))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").invalidated_rkey(), Some(0x55)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn invalidated_rkey(mut self, v: u32) -> Self {
        self.cqe.imm_or_inv = v;
        self.cqe.wc_flags =
            (self.cqe.wc_flags | crate::ffi::IBV_WC_WITH_INV) & !crate::ffi::IBV_WC_WITH_IMM;
        self
    }
    field_setters! {
        /// Sets `qp_num`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).qp_num(12))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").qp_num(), 12))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        qp_num: u32;
        /// Sets `src_qp`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).src_qp(34))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").src_qp(), 34))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        src_qp: u32;
    }
    /// Sets `slid`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).slid(5))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").slid(), 5))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slid(mut self, v: u16) -> Self {
        self.cqe.slid = v.into();
        self
    }
    field_setters! {
        /// Sets `sl`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).sl(2))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").sl(), 2))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        sl: u8;
        /// Sets `dlid_path_bits`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).dlid_path_bits(1))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").dlid_path_bits(), 1))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        dlid_path_bits: u8;
        /// Sets `pkey_index`.
        ///
        /// ```
        /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
        /// # let ctx = Context::open("sw0")?;
        /// let cq = Cq::builder(&ctx).cqe(4).build()?; // the legacy ibv_wc has pkey_index
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).pkey_index(3))?;
        /// let mut wc = [const { WorkCompletion::new() }; 1];
        /// assert_eq!(cq.poll(&mut wc)?[0].success().unwrap().pkey_index(), 3);
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pkey_index: u16;
        /// Sets the device timestamp (HCA clock units).
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).completion_ts(99))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").completion_ts(), 99))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        completion_ts: u64;
        /// Sets the wall-clock timestamp in nanoseconds.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).completion_wallclock_ns(1_000_000))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").completion_wallclock_ns(), 1_000_000))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        completion_wallclock_ns: u64;
        /// Sets `cvlan`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).cvlan(10))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").cvlan(), 10))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        cvlan: u16;
        /// Sets `flow_tag`.
        ///
        /// ```
        /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
        /// # let ctx = Context::open("sw0")?;
        /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
        /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).flow_tag(77))?;
        /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").flow_tag(), 77))?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        flow_tag: u32;
    }
    /// Sets the completion's `IBV_WC_GRH` flag (a UD receive whose buffer starts with a GRH).
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).with_grh())?;
    /// cq.poll_batch(|b| assert_ne!(b.completion().result().expect("success").completion_flags() & 1, 0))?; // IBV_WC_GRH
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn with_grh(mut self) -> Self {
        self.cqe.wc_flags |= 1 << 0;
        self
    }
    /// Makes the completion solicited, as the receive of a message sent with
    /// `IBV_SEND_SOLICITED` is: it raises a completion event on a CQ armed with
    /// `req_notify(true)` (solicited only). Not visible in the completion itself.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(4).channel(&channel).build()?;
    /// cq.req_notify(true)?; // solicited only
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).solicited())?;
    /// assert!(channel.try_get_cq_event()?.is_some());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn solicited(mut self) -> Self {
        self.cqe.solicited = true;
        self
    }
}

/// The software device's key counter, for the crate's own tests: where this thread's next
/// registration starts looking for a key, its last index, and how many keys are live.
#[cfg(test)]
pub(crate) mod keys {
    pub(crate) use super::provider::MrKeys;
    pub(crate) use super::provider::MAX_KEY_INDEX;
}

#[cfg(test)]
mod tests {
    use super::keys::{MrKeys, MAX_KEY_INDEX};
    use crate::device::Context;
    use crate::mr::access::Access;
    use crate::mr::Mr;
    use crate::pd::Pd;

    /// The key counter at its wrap, two contexts: no registration gets a key that is live in
    /// either context, neither when the counter comes back to a live key's index nor when it
    /// starts again at 1.
    #[test]
    fn no_key_is_handed_out_twice_while_live_across_contexts_and_the_wrap() {
        let (c1, c2) = (Context::open("sw0").unwrap(), Context::open("sw0").unwrap());
        let (p1, p2) = (Pd::new(&c1).unwrap(), Pd::new(&c2).unwrap());
        let reg = |pd| Mr::new(pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap();
        let mut live = vec![reg(&p1)];
        // The counter comes back to the index of a key live in the other context.
        MrKeys::set_next(live[0].lkey() >> 8);
        live.push(reg(&p2));
        // It is about to wrap: its last index, then back to 1, whose key may be live.
        MrKeys::set_next(MAX_KEY_INDEX);
        live.push(reg(&p2));
        live.push(reg(&p1));
        MrKeys::set_next(live[3].lkey() >> 8);
        live.push(reg(&p2));
        assert_eq!(
            live[2].lkey() >> 8,
            MAX_KEY_INDEX,
            "the counter's last index"
        );
        assert!(live[3].lkey() >> 8 < MAX_KEY_INDEX, "the counter wrapped");
        let keys: std::collections::HashSet<u32> = live.iter().map(|m| m.lkey()).collect();
        assert_eq!(keys.len(), live.len(), "a key handed out twice: {keys:x?}");
        assert!(MrKeys::live() >= live.len());
    }
}
