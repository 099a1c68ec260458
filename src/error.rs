//! Typed errors: every error names the verb that failed and why (an errno, or the limit that a
//! request broke before any FFI call was made).
//!
//! ```
//! use typed_verbs::{Context, Cq, ErrorKind, Verb};
//! let ctx = Context::open("sw0")?;
//! let e = Cq::builder(&ctx).cqe(0).build().unwrap_err(); // refused before the call
//! assert_eq!(e.verb, Verb::CreateCq);
//! assert!(matches!(e.kind, ErrorKind::OutOfRange { what: "cqe", value: 0, min: 1, .. }));
//! assert_eq!(e.errno(), libc::EINVAL);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page lists what is checked at run time. A
//! misuse the types catch is a compile error instead; the guide's
//! [diagnostics](crate::guide::diagnostics) page gives the first line of each such error.

use std::fmt;

/// The verb an error comes from, named as in libibverbs.
///
/// ```
/// use typed_verbs::{Cq, Context, Verb};
/// let ctx = Context::open("sw0")?;
/// let err = Cq::builder(&ctx).cqe(0).build().unwrap_err();
/// assert_eq!((err.verb, err.verb.name()), (Verb::CreateCq, "ibv_create_cq"));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum Verb {
    GetDeviceList,
    OpenDevice,
    CloseDevice,
    QueryDevice,
    QueryPort,
    AllocPd,
    DeallocPd,
    AllocParentDomain,
    RegMr,
    DeregMr,
    /// Copying out of a memory region (not a libibverbs verb).
    MrRead,
    /// Copying into a memory region (not a libibverbs verb).
    MrWrite,
    /// Allocating a page-aligned buffer, `PageBuf::new` (not a libibverbs verb).
    AllocBuf,
    /// Mapping huge pages, `HugeBuf::new` (not a libibverbs verb).
    AllocHugeBuf,
    CreateCompChannel,
    DestroyCompChannel,
    CreateCq,
    CreateCqEx,
    DestroyCq,
    PollCq,
    StartPoll,
    NextPoll,
    ReqNotifyCq,
    GetCqEvent,
    GetAsyncEvent,
    CreateSrq,
    ModifySrq,
    QuerySrq,
    DestroySrq,
    CreateQp,
    /// `ibv_create_qp_ex`, creating an extended QP ([`Ex`](crate::qp::Ex)).
    CreateQpEx,
    /// A work request of an extended QP's batch (ibv_wr_post(3): its builder and setters),
    /// refused before any of them is called.
    WrPost,
    /// `ibv_wr_complete`: the provider refused the batch, and none of it was posted.
    WrComplete,
    QueryQp,
    /// `ibv_modify_qp` moving a QP from state `from` to state `to` (the same state for a
    /// modify that stays, such as INIT → INIT): an error names the transition refused.
    ModifyQp {
        /// The state the QP was in.
        from: QpStateName,
        /// The state asked for.
        to: QpStateName,
    },
    DestroyQp,
    QueryGid,
    PostSend,
    PostRecv,
    PostSrqRecv,
    CreateAh,
    DestroyAh,
    AttachMcast,
    DetachMcast,
    /// The software device's completion-injection hook (not a libibverbs verb).
    InjectCompletion,
    /// Registering a software device (not a libibverbs verb).
    RegisterSoftwareDevice,
    /// The software device's async-event hook (not a libibverbs verb).
    RaiseAsyncEvent,
    CreateEventChannel,
    CreateId,
    DestroyId,
    BindAddr,
    ResolveAddr,
    ResolveRoute,
    Listen,
    Connect,
    Accept,
    Reject,
    Establish,
    Disconnect,
    InitQpAttr,
    GetCmEvent,
    AckCmEvent,
}

impl Verb {
    /// The C name of the verb.
    ///
    /// ```
    /// assert_eq!(typed_verbs::Verb::PostSend.name(), "ibv_post_send");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Verb::GetDeviceList => "ibv_get_device_list",
            Verb::OpenDevice => "ibv_open_device",
            Verb::CloseDevice => "ibv_close_device",
            Verb::QueryDevice => "ibv_query_device",
            Verb::QueryPort => "ibv_query_port",
            Verb::AllocPd => "ibv_alloc_pd",
            Verb::DeallocPd => "ibv_dealloc_pd",
            Verb::AllocParentDomain => "ibv_alloc_parent_domain",
            Verb::RegMr => "ibv_reg_mr",
            Verb::DeregMr => "ibv_dereg_mr",
            Verb::MrRead => "Mr::read",
            Verb::MrWrite => "Mr::write",
            Verb::AllocBuf => "PageBuf::new",
            Verb::AllocHugeBuf => "HugeBuf::new",
            Verb::CreateCompChannel => "ibv_create_comp_channel",
            Verb::DestroyCompChannel => "ibv_destroy_comp_channel",
            Verb::CreateCq => "ibv_create_cq",
            Verb::CreateCqEx => "ibv_create_cq_ex",
            Verb::DestroyCq => "ibv_destroy_cq",
            Verb::PollCq => "ibv_poll_cq",
            Verb::StartPoll => "ibv_start_poll",
            Verb::NextPoll => "ibv_next_poll",
            Verb::ReqNotifyCq => "ibv_req_notify_cq",
            Verb::GetCqEvent => "ibv_get_cq_event",
            Verb::GetAsyncEvent => "ibv_get_async_event",
            Verb::CreateSrq => "ibv_create_srq",
            Verb::ModifySrq => "ibv_modify_srq",
            Verb::QuerySrq => "ibv_query_srq",
            Verb::DestroySrq => "ibv_destroy_srq",
            Verb::CreateQp => "ibv_create_qp",
            Verb::CreateQpEx => "ibv_create_qp_ex",
            Verb::WrPost => "ibv_wr_post",
            Verb::WrComplete => "ibv_wr_complete",
            Verb::QueryQp => "ibv_query_qp",
            Verb::ModifyQp { .. } => "ibv_modify_qp",
            Verb::QueryGid => "ibv_query_gid",
            Verb::PostSend => "ibv_post_send",
            Verb::PostRecv => "ibv_post_recv",
            Verb::PostSrqRecv => "ibv_post_srq_recv",
            Verb::CreateAh => "ibv_create_ah",
            Verb::DestroyAh => "ibv_destroy_ah",
            Verb::DestroyQp => "ibv_destroy_qp",
            Verb::AttachMcast => "ibv_attach_mcast",
            Verb::DetachMcast => "ibv_detach_mcast",
            Verb::InjectCompletion => "software::inject",
            Verb::RegisterSoftwareDevice => "software::register",
            Verb::RaiseAsyncEvent => "software::raise_port_event",
            Verb::CreateEventChannel => "rdma_create_event_channel",
            Verb::CreateId => "rdma_create_id",
            Verb::DestroyId => "rdma_destroy_id",
            Verb::BindAddr => "rdma_bind_addr",
            Verb::ResolveAddr => "rdma_resolve_addr",
            Verb::ResolveRoute => "rdma_resolve_route",
            Verb::Listen => "rdma_listen",
            Verb::Connect => "rdma_connect",
            Verb::Accept => "rdma_accept",
            Verb::Reject => "rdma_reject",
            Verb::Establish => "rdma_establish",
            Verb::Disconnect => "rdma_disconnect",
            Verb::InitQpAttr => "rdma_init_qp_attr",
            Verb::GetCmEvent => "rdma_get_cm_event",
            Verb::AckCmEvent => "rdma_ack_cm_event",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verb::ModifyQp { from, to } => write!(f, "{} {from}->{to}", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

/// A QP state as an error names it (`enum ibv_qp_state`), e.g. in
/// [`Verb::ModifyQp`]'s transition.
///
/// ```
/// use typed_verbs::prelude::*;
/// use typed_verbs::{QpStateName, Verb};
/// let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// let err = qp.to_init(UdInit { port_num: 9, pkey_index: 0, qkey: 1 }).unwrap_err(); // no port 9
/// assert_eq!(err.verb, Verb::ModifyQp { from: QpStateName::Reset, to: QpStateName::Init });
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QpStateName {
    /// `IBV_QPS_RESET`
    Reset,
    /// `IBV_QPS_INIT`
    Init,
    /// `IBV_QPS_RTR`
    Rtr,
    /// `IBV_QPS_RTS`
    Rts,
    /// `IBV_QPS_SQD`
    Sqd,
    /// `IBV_QPS_SQE`
    Sqe,
    /// `IBV_QPS_ERR`
    Err,
    /// A value the build's headers do not name (read as an integer, as C wrote it).
    Other(u32),
}

impl QpStateName {
    /// The state of `enum ibv_qp_state` value `raw`.
    ///
    /// ```
    /// use typed_verbs::{ffi::sys::ibv_qp_state, QpStateName};
    /// assert_eq!(QpStateName::from_raw(ibv_qp_state::IBV_QPS_RTS), QpStateName::Rts);
    /// assert_eq!(QpStateName::from_raw(77), QpStateName::Other(77));
    /// ```
    pub fn from_raw(raw: crate::ffi::sys::ibv_qp_state::Type) -> Self {
        use crate::ffi::sys::ibv_qp_state::*;
        match raw {
            IBV_QPS_RESET => QpStateName::Reset,
            IBV_QPS_INIT => QpStateName::Init,
            IBV_QPS_RTR => QpStateName::Rtr,
            IBV_QPS_RTS => QpStateName::Rts,
            IBV_QPS_SQD => QpStateName::Sqd,
            IBV_QPS_SQE => QpStateName::Sqe,
            IBV_QPS_ERR => QpStateName::Err,
            n => QpStateName::Other(n),
        }
    }
}

impl fmt::Display for QpStateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            QpStateName::Reset => "RESET",
            QpStateName::Init => "INIT",
            QpStateName::Rtr => "RTR",
            QpStateName::Rts => "RTS",
            QpStateName::Sqd => "SQD",
            QpStateName::Sqe => "SQE",
            QpStateName::Err => "ERR",
            QpStateName::Other(n) => return write!(f, "state {n}"),
        };
        f.write_str(name)
    }
}

/// Why a verb failed.
///
/// ```
/// use typed_verbs::{Context, Cq, ErrorKind};
/// let ctx = Context::open("sw0")?;
/// let max_cqe = u64::from(ctx.attr().max_cqe);
/// match Cq::builder(&ctx).cqe(ctx.attr().max_cqe + 1).build() {
///     Err(e) => match e.kind {
///         ErrorKind::OutOfRange { what, value, max, .. } => assert_eq!((what, value, max), ("cqe", max_cqe + 1, max_cqe)),
///         ErrorKind::Os(errno) => panic!("the device refused: errno {errno}"),
///         other => panic!("{other:?}"),
///     },
///     Ok(_) => unreachable!(),
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The device (or libibverbs) refused the request with this errno.
    Os(i32),
    /// A request broke a limit; checked before any FFI call, so the device never saw it.
    /// A C program passing the same value would have got `EINVAL`.
    OutOfRange {
        /// The attribute, named as in the C struct (`cqe`, `comp_vector`, `cap.max_send_wr`, ...).
        what: &'static str,
        /// The value asked for.
        value: u64,
        /// The smallest value allowed.
        min: u64,
        /// The largest value allowed (from the device's attributes where there is one).
        max: u64,
    },
    /// No device of that name in the device list.
    NoSuchDevice(String),
    /// The CQ of a software-device hook is full and was not created with IGNORE_OVERRUN.
    CqOverrun,
    /// The object does not belong to the software device (a hook was called on a real device).
    NotSoftware,
    /// The provider did not fill a function pointer the object needs (named as in the C struct,
    /// e.g. `read_byte_len`); checked once at creation, so the data path need not check it.
    /// A C program would crash calling it; errno `EOPNOTSUPP`.
    MissingProviderOp(&'static str),
    /// An object passed to the verb belongs to another context (or, for a CQ's parent domain,
    /// is not one). Checked before the FFI call; a C program would get `EINVAL`.
    WrongContext(&'static str),
    /// The call would wait for a CQ lock that a polling batch holds (mlx5 holds it from
    /// `ibv_start_poll` to `ibv_end_poll`), and could wait for ever: the calling thread is inside
    /// [`CqEx::poll_batch`](crate::cq::ex::CqEx::poll_batch) and the call is a QP's destroy or move to
    /// RESET (they take its CQs' locks), `ibv_poll_cq` or a second batch; or, out of a batch, a
    /// QP's destroy or move to RESET waited a second for its CQs (a batch that long, one whose
    /// closure waits for this thread, two CQs that never left a gap, or other teardowns of the
    /// CQ that held it that long); or `Context::close` while a dropped QP of the context waits
    /// for a batch's end.
    /// Refused before the call (see the crate's `teardown` rules in [`safety`](crate::safety)).
    /// Do it after the batch; a QP dropped instead is destroyed when the batch ends. Errno
    /// `EDEADLK`.
    BatchOpen,
    /// An object passed to the verb is of the right context but another protection domain,
    /// where the verbs require the same one (a UD send's address handle and its QP). Checked
    /// before the FFI call; a C program would get `EINVAL` or a failed completion.
    WrongPd(&'static str),
    /// No huge pages to map: the kernel has none configured (`vm.nr_hugepages`) or all are in
    /// use (`ENOMEM` from `mmap`), lacks hugetlb support (`ENOSYS`, `EINVAL`), or has no huge
    /// page size (`EOPNOTSUPP`). The errno is the one given.
    NoHugePages(i32),
    /// [`Slot`](crate::Slot)s rest on the device checking every local address against the
    /// range a region is addressed by, its iova (slot regions are addressed in the upper half of
    /// the address space, where no plain region is); the device, whose vendor id is given, is
    /// not one known to (siw and rdmavt's hfi1 and qib check the virtual address instead).
    /// Known: the software device, rxe, and Mellanox/NVIDIA's mlx4 and mlx5. Checked before
    /// `ibv_reg_mr`; errno `EOPNOTSUPP`.
    SlotsUnsupported(u32),
    /// Another thread polls the CQ: its [`Poller`](crate::Poller) lives (one exists at a time
    /// per CQ), or a batch is open on it through [`CqEx::poll_batch`](crate::cq::ex::CqEx::poll_batch).
    /// One batch at a time per CQ, and a second is refused rather than waited for (a batch's
    /// closure that waited for a thread that polls the same CQ would wait for ever). Poll
    /// through the poller that has it, drop it first, or try again after the batch. Errno
    /// `EBUSY`.
    PollerTaken,
    /// The peer rejected the connection (`RDMA_CM_EVENT_REJECTED`): the reject reason
    /// (`status`: on InfiniBand and RoCE the IB CM's, 28 for a consumer's `rdma_reject`, 8 when
    /// nobody listens on the port) and the private data the peer sent with it. Errno
    /// `ECONNREFUSED`.
    Rejected {
        /// The event's status: the transport's reject reason.
        status: i32,
        /// The peer's private data (as long as the event reported it).
        private_data: Vec<u8>,
    },
    /// The connection manager answered with an error event (`RDMA_CM_EVENT_ADDR_ERROR`,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`, `RDMA_CM_EVENT_UNREACHABLE`, `RDMA_CM_EVENT_CONNECT_ERROR`)
    /// or with an event the verb does not wait for. `status` is the event's: a negative errno
    /// or a transport value. Errno: the status's when it is a negative errno, `EPROTO`
    /// otherwise.
    CmEvent {
        /// The event type, read as an integer.
        event: CmEventKind,
        /// The event's status.
        status: i32,
    },
    /// No event came for the CM verb within the time it was given (the CM itself did not
    /// answer, not even with an error event). Errno `ETIMEDOUT`.
    CmTimedOut(std::time::Duration),
    /// `rdma_init_qp_attr` left out an attribute the transition needs (named as in
    /// `struct ibv_qp_attr`). Errno `EPROTO`.
    MissingAttr(&'static str),
    /// The QP given to a CM verb is on another device than the CM id (which the address
    /// resolution or the connect request bound to a device): checked before the call; build the
    /// QP on a context of the id's device. Errno `EINVAL`.
    NotOnCmDevice,
    /// The device has no extended QP for these send ops: `ibv_create_qp_ex` with
    /// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS` answered `EOPNOTSUPP` (the provider has no
    /// `create_qp_ex`, as siw and irdma; refuses the attribute, as mlx4 and qedr; or lacks one of
    /// the ops, as rxe lacks LOCAL_INV on UC). The legacy `Qp::post_send` path works on every
    /// device: build the QP without `send_ops`. Errno `EOPNOTSUPP`.
    SendOpsUnsupported {
        /// The device's name.
        device: String,
        /// The `send_ops_flags` asked for.
        send_ops: u64,
    },
    /// The request would meet a known bug of the device's provider that would corrupt it, and
    /// is refused before the call (named; e.g. rxe's `ibv_wr_set_sge_list` before rdma-core 64,
    /// which sends `num_sge` times the first SGE's length). Errno `EOPNOTSUPP`.
    ProviderBug(&'static str),
    /// The GID table entry named is inside the port's table (`gid_tbl_len`) but holds no GID:
    /// `ibv_query_gid` reads an all-zero GID there (rdma-core's "Preserve API behavior for empty
    /// GID"), which as an address would silently name no one. Checked after `ibv_query_gid`,
    /// before the value is used. Use an index that holds a GID (`show_gids`, or
    /// [`Context::query_gid`](crate::Context::query_gid) of each index). Errno `ENODATA`, as the
    /// kernel's `rdma_get_gid_attr` gives for an empty entry.
    EmptyGid {
        /// The port (from 1).
        port: u8,
        /// The GID index.
        index: u32,
    },
}

/// An error of a verb: which verb, and why.
///
/// ```
/// use typed_verbs::{Context, ErrorKind, Verb};
/// let err = Context::open("mlx9_9").unwrap_err();
/// assert_eq!(err.verb, Verb::OpenDevice);
/// assert_eq!(err.kind, ErrorKind::NoSuchDevice("mlx9_9".into()));
/// assert_eq!(err.errno(), libc::ENODEV); // what a C program would have seen
/// println!("{err}"); // names the verb and why
/// // `?` takes it into Box<dyn Error>, anyhow::Error and the like: it is Send + Sync + 'static.
/// let boxed: Box<dyn std::error::Error + Send + Sync> = err.into();
/// # drop(boxed);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The verb that failed.
    pub verb: Verb,
    /// Why it failed.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn os(verb: Verb, errno: i32) -> Self {
        Error {
            verb,
            kind: ErrorKind::Os(errno),
        }
    }

    /// An error from the errno the last failed C call left behind.
    pub(crate) fn last_os(verb: Verb) -> Self {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .filter(|&e| e != 0)
            .unwrap_or(libc::EIO);
        Error::os(verb, errno)
    }

    pub(crate) fn range(verb: Verb, what: &'static str, value: u64, min: u64, max: u64) -> Self {
        Error {
            verb,
            kind: ErrorKind::OutOfRange {
                what,
                value,
                min,
                max,
            },
        }
    }

    /// The errno a C program would see for this failure: the device's own for [`ErrorKind::Os`],
    /// `EINVAL` for a limit checked up front, `ENODEV` for an unknown device, `ENOSPC` for an
    /// overrun, `EOPNOTSUPP` for a software-only hook on a real device.
    ///
    /// ```
    /// let err = typed_verbs::Context::open("no-such").unwrap_err();
    /// assert_eq!(err.errno(), libc::ENODEV);
    /// ```
    pub fn errno(&self) -> i32 {
        match self.kind {
            ErrorKind::Os(e) => e,
            ErrorKind::OutOfRange { .. } => libc::EINVAL,
            ErrorKind::NoSuchDevice(_) => libc::ENODEV,
            ErrorKind::CqOverrun => libc::ENOSPC,
            ErrorKind::NotSoftware => libc::EOPNOTSUPP,
            ErrorKind::WrongContext(_) => libc::EINVAL,
            ErrorKind::WrongPd(_) => libc::EINVAL,
            ErrorKind::MissingProviderOp(_) => libc::EOPNOTSUPP,
            ErrorKind::BatchOpen => libc::EDEADLK,
            ErrorKind::NoHugePages(e) => e,
            ErrorKind::SlotsUnsupported(_) => libc::EOPNOTSUPP,
            ErrorKind::PollerTaken => libc::EBUSY,
            ErrorKind::Rejected { .. } => libc::ECONNREFUSED,
            ErrorKind::CmEvent { status, .. } if status < 0 && status > -4096 => -status,
            ErrorKind::CmEvent { .. } => libc::EPROTO,
            ErrorKind::CmTimedOut(_) => libc::ETIMEDOUT,
            ErrorKind::MissingAttr(_) => libc::EPROTO,
            ErrorKind::NotOnCmDevice => libc::EINVAL,
            ErrorKind::SendOpsUnsupported { .. } => libc::EOPNOTSUPP,
            ErrorKind::ProviderBug(_) => libc::EOPNOTSUPP,
            ErrorKind::EmptyGid { .. } => libc::ENODATA,
        }
    }

    /// True when the device does not support what was asked (`EOPNOTSUPP`).
    ///
    /// ```
    /// # use typed_verbs::{software::{self, SwConfig}, Context, CqEx, AllFields};
    /// software::register("sw-doc-unsupported", SwConfig::like_rxe())?; // rxe's features
    /// let ctx = Context::open("sw-doc-unsupported")?;
    /// let err = CqEx::<AllFields>::builder(&ctx).cqe(4).build().unwrap_err();
    /// assert!(err.is_unsupported()); // EOPNOTSUPP: rxe has the standard wc_flags only
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn is_unsupported(&self) -> bool {
        self.errno() == libc::EOPNOTSUPP
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // The errno's name; its number and text are the source's (`io::Error`), so that a
            // report of the chain prints them once.
            ErrorKind::Os(e) => match (errno_name(*e), os_error(*e)) {
                (Some(name), _) => write!(f, "{} failed: {name}", self.verb),
                (None, Some(_)) => write!(f, "{} failed", self.verb),
                (None, None) => write!(f, "{} failed: errno {e}", self.verb),
            },
            ErrorKind::OutOfRange {
                what,
                value,
                min,
                max,
            } => write!(
                f,
                "{}: {what} = {value} is out of range: it must be at least {min} and at most {max}",
                self.verb
            ),
            ErrorKind::NoSuchDevice(name) => {
                write!(f, "{}: no RDMA device named {name:?}", self.verb)
            }
            ErrorKind::CqOverrun => write!(f, "{}: the CQ is full (overrun)", self.verb),
            ErrorKind::NotSoftware => {
                write!(f, "{}: the object is not on the software device", self.verb)
            }
            ErrorKind::MissingProviderOp(op) => {
                write!(f, "{}: the provider has no {op} function", self.verb)
            }
            ErrorKind::WrongContext(what) => {
                write!(f, "{}: {what} belongs to another device context", self.verb)
            }
            ErrorKind::PollerTaken => write!(
                f,
                "{}: another thread polls this CQ (its poller lives, one at a time per CQ, or a \
                 batch is open on it): poll through the poller, drop it first, or try again \
                 after the batch",
                self.verb
            ),
            ErrorKind::BatchOpen => write!(
                f,
                "{}: a CQ lock this call takes is held by a polling batch (this thread's, or \
                 other threads' batches or teardowns for longer than a teardown waits): waiting \
                 could be for ever; make it after the batch (a QP dropped instead is destroyed \
                 when the batch ends)",
                self.verb
            ),
            ErrorKind::WrongPd(what) => {
                write!(
                    f,
                    "{}: {what} belongs to another protection domain",
                    self.verb
                )
            }
            ErrorKind::NoHugePages(e) => write!(
                f,
                "{}: no huge pages available ({}); reserve some with vm.nr_hugepages",
                self.verb,
                errno_name(*e).unwrap_or("the errno below")
            ),
            ErrorKind::Rejected {
                status,
                private_data,
            } => write!(
                f,
                "{} rejected by the peer: status {status}{}, {} bytes of private data",
                self.verb,
                reject_reason(*status).map_or(String::new(), |r| format!(" ({r})")),
                private_data.len()
            ),
            ErrorKind::CmEvent { event, status } => match errno_name(-*status) {
                Some(name) if *status < 0 => {
                    write!(f, "{} failed: {event}, status {status} ({name})", self.verb)
                }
                _ => write!(f, "{} failed: {event}, status {status}", self.verb),
            },
            ErrorKind::CmTimedOut(t) => write!(
                f,
                "{}: no answer from the connection manager within {t:?} (timed out)",
                self.verb
            ),
            ErrorKind::MissingAttr(what) => write!(
                f,
                "{}: the connection manager gave no {what}, which the QP's transition needs",
                self.verb
            ),
            ErrorKind::SendOpsUnsupported { device, send_ops } => write!(
                f,
                "{}: device {device:?} has no extended QP for send_ops_flags {send_ops:#x} \
                 (EOPNOTSUPP): post with the legacy ibv_post_send path (a QP built without \
                 send_ops), which works on every device",
                self.verb
            ),
            ErrorKind::ProviderBug(bug) => write!(
                f,
                "{}: refused, as the device's provider would corrupt the request: {bug}",
                self.verb
            ),
            ErrorKind::NotOnCmDevice => write!(
                f,
                "{}: the QP is on another device than the CM id: build it on a context of the \
                 device the id's address resolved to",
                self.verb
            ),
            ErrorKind::SlotsUnsupported(vendor) => write!(
                f,
                "{}: slots need a device that checks local addresses against a region's iova, \
                 and this one (vendor id {vendor:#x}) is not known to: use plain regions \
                 (Mr::new, Mr::scoped) on it",
                self.verb
            ),
            ErrorKind::EmptyGid { port, index } => write!(
                f,
                "{}: GID index {index} of port {port} holds no GID (an empty table entry): use \
                 an index that holds one",
                self.verb
            ),
        }
    }
}

/// The source of an error with an errno ([`ErrorKind::Os`], [`ErrorKind::NoHugePages`]) is
/// the `io::Error` of that errno ("Invalid argument (os error 22)"); the error's own text names
/// the errno (`EINVAL`) without its number, so that a report of the whole chain prints it once.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.kind {
            ErrorKind::Os(e) | ErrorKind::NoHugePages(e) => {
                os_error(e).map(|e| e as &(dyn std::error::Error + 'static))
            }
            _ => None,
        }
    }
}

/// The IB CM's reject reasons (`enum ib_cm_rej_reason`) that a connect commonly meets.
fn reject_reason(status: i32) -> Option<&'static str> {
    Some(match status {
        1 => "no QP",
        2 => "no EEC",
        3 => "no resources",
        4 => "timeout",
        8 => "invalid service ID: nobody listens on that port",
        28 => "consumer-defined: the peer called rdma_reject",
        _ => return None,
    })
}

/// The errnos an [`Error`] can name as its source: Linux's are below 4096 (`MAX_ERRNO`).
const OS_ERRORS: usize = 4096;

/// The `io::Error` of `errno`, made once per errno (an `Error` stays plain data: `Clone`, `Eq`).
///
/// The table is made once and never freed, under the crate's lock rather than a `OnceLock`:
/// the lock's happens-before edge is the one valgrind's thread checkers are told about
/// (`crate::sync`), so the table's reads on other threads are not reported as races.
fn os_error(errno: i32) -> Option<&'static std::io::Error> {
    static TABLE: crate::sync::Mutex<Option<&'static [std::io::Error]>> =
        crate::sync::Mutex::new(None);
    let i = usize::try_from(errno)
        .ok()
        .filter(|&i| i > 0 && i < OS_ERRORS)?;
    let mut made = TABLE.lock();
    let table = match *made {
        Some(table) => table,
        None => {
            let table: &'static [std::io::Error] = Box::leak(
                (0..OS_ERRORS as i32)
                    .map(std::io::Error::from_raw_os_error)
                    .collect(),
            );
            *made = Some(table);
            table
        }
    };
    drop(made);
    Some(&table[i])
}

/// The symbolic name of `errno` (`"EINVAL"`), as the man pages write it.
fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::ENOTBLK => "ENOTBLK",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::EDOM => "EDOM",
        libc::ERANGE => "ERANGE",
        libc::EDEADLK => "EDEADLK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOLCK => "ENOLCK",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENOMSG => "ENOMSG",
        libc::EIDRM => "EIDRM",
        libc::ECHRNG => "ECHRNG",
        libc::EL2NSYNC => "EL2NSYNC",
        libc::EL3HLT => "EL3HLT",
        libc::EL3RST => "EL3RST",
        libc::ELNRNG => "ELNRNG",
        libc::EUNATCH => "EUNATCH",
        libc::ENOCSI => "ENOCSI",
        libc::EL2HLT => "EL2HLT",
        libc::EBADE => "EBADE",
        libc::EBADR => "EBADR",
        libc::EXFULL => "EXFULL",
        libc::ENOANO => "ENOANO",
        libc::EBADRQC => "EBADRQC",
        libc::EBADSLT => "EBADSLT",
        libc::EBFONT => "EBFONT",
        libc::ENOSTR => "ENOSTR",
        libc::ENODATA => "ENODATA",
        libc::ETIME => "ETIME",
        libc::ENOSR => "ENOSR",
        libc::ENONET => "ENONET",
        libc::ENOPKG => "ENOPKG",
        libc::EREMOTE => "EREMOTE",
        libc::ENOLINK => "ENOLINK",
        libc::EADV => "EADV",
        libc::ESRMNT => "ESRMNT",
        libc::ECOMM => "ECOMM",
        libc::EPROTO => "EPROTO",
        libc::EMULTIHOP => "EMULTIHOP",
        libc::EDOTDOT => "EDOTDOT",
        libc::EBADMSG => "EBADMSG",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ENOTUNIQ => "ENOTUNIQ",
        libc::EBADFD => "EBADFD",
        libc::EREMCHG => "EREMCHG",
        libc::ELIBACC => "ELIBACC",
        libc::ELIBBAD => "ELIBBAD",
        libc::ELIBSCN => "ELIBSCN",
        libc::ELIBMAX => "ELIBMAX",
        libc::ELIBEXEC => "ELIBEXEC",
        libc::EILSEQ => "EILSEQ",
        libc::ERESTART => "ERESTART",
        libc::ESTRPIPE => "ESTRPIPE",
        libc::EUSERS => "EUSERS",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EDESTADDRREQ => "EDESTADDRREQ",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EPROTOTYPE => "EPROTOTYPE",
        libc::ENOPROTOOPT => "ENOPROTOOPT",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::ESOCKTNOSUPPORT => "ESOCKTNOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EPFNOSUPPORT => "EPFNOSUPPORT",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETDOWN => "ENETDOWN",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ENETRESET => "ENETRESET",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ENOBUFS => "ENOBUFS",
        libc::EISCONN => "EISCONN",
        libc::ENOTCONN => "ENOTCONN",
        libc::ESHUTDOWN => "ESHUTDOWN",
        libc::ETOOMANYREFS => "ETOOMANYREFS",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTDOWN => "EHOSTDOWN",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::EALREADY => "EALREADY",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::ESTALE => "ESTALE",
        libc::EUCLEAN => "EUCLEAN",
        libc::ENOTNAM => "ENOTNAM",
        libc::ENAVAIL => "ENAVAIL",
        libc::EISNAM => "EISNAM",
        libc::EREMOTEIO => "EREMOTEIO",
        libc::EDQUOT => "EDQUOT",
        libc::ENOMEDIUM => "ENOMEDIUM",
        libc::EMEDIUMTYPE => "EMEDIUMTYPE",
        libc::ECANCELED => "ECANCELED",
        libc::ENOKEY => "ENOKEY",
        libc::EKEYEXPIRED => "EKEYEXPIRED",
        libc::EKEYREVOKED => "EKEYREVOKED",
        libc::EKEYREJECTED => "EKEYREJECTED",
        libc::EOWNERDEAD => "EOWNERDEAD",
        libc::ENOTRECOVERABLE => "ENOTRECOVERABLE",
        libc::ERFKILL => "ERFKILL",
        _ => return None,
    })
}

// `?` into `Box<dyn Error + Send + Sync>` and anyhow needs these; every field is plain data.
static_assertions::assert_impl_all!(Error: Send, Sync, std::error::Error);
const _: fn() = || {
    fn is_static<T: 'static>() {}
    is_static::<Error>();
};

/// A destroy that failed: the error, and the object back so that the caller may retry. What
/// `try_destroy` (and [`Context::try_close`](crate::device::Context::try_close)) return; `destroy`
/// returns the plain [`Error`] and drops the object, and `?` turns this one into an [`Error`]
/// the same way (`From`).
///
/// ```
/// use typed_verbs::{Context, Pd};
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// match pd.try_destroy() {
///     Ok(()) => {}
///     Err(typed_verbs::DestroyError { object, error }) => {
///         eprintln!("{error}; retrying later");
///         drop(object); // or keep it and try again
///     }
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub struct DestroyError<T> {
    /// The object that is still alive.
    pub object: T,
    /// Why the destroy failed.
    pub error: Error,
}

impl<T> fmt::Display for DestroyError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<T: fmt::Debug> std::error::Error for DestroyError<T> {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error alone: the object is dropped, and its `Drop` tries the destroy once more (and,
/// if that fails too, leaks the C object rather than freeing what the device may still use).
impl<T> From<DestroyError<T>> for Error {
    fn from(e: DestroyError<T>) -> Error {
        e.error
    }
}

/// The crate's result type.
///
/// ```
/// fn open_pd(name: &str) -> typed_verbs::Result<usize> {
///     let ctx = typed_verbs::Context::open(name)?;
///     let pd = typed_verbs::Pd::new(&ctx)?;
///     Ok(pd.as_raw() as usize)
/// }
/// assert!(open_pd("sw0").is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An `enum rdma_cm_event_type` value, read as an integer (a value the build's headers do not
/// name prints as its number).
///
/// ```
/// use typed_verbs::cm::CmEventKind;
/// assert_eq!(CmEventKind::from_raw(8).to_string(), "RDMA_CM_EVENT_REJECTED");
/// assert_eq!(CmEventKind::from_raw(99).to_string(), "rdma_cm event 99");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CmEventKind(pub u32);

impl CmEventKind {
    /// The event type `raw`.
    ///
    /// ```
    /// assert_eq!(typed_verbs::cm::CmEventKind::from_raw(1).name(), Some("RDMA_CM_EVENT_ADDR_ERROR"));
    /// ```
    pub fn from_raw(raw: u32) -> Self {
        CmEventKind(raw)
    }

    /// The C name, when the type is one rdma_cma.h names.
    ///
    /// ```
    /// assert_eq!(typed_verbs::cm::CmEventKind::from_raw(7).name(), Some("RDMA_CM_EVENT_UNREACHABLE"));
    /// ```
    pub fn name(self) -> Option<&'static str> {
        use crate::ffi::sys::rdma_cm_event_type::*;
        Some(match self.0 {
            RDMA_CM_EVENT_ADDR_RESOLVED => "RDMA_CM_EVENT_ADDR_RESOLVED",
            RDMA_CM_EVENT_ADDR_ERROR => "RDMA_CM_EVENT_ADDR_ERROR",
            RDMA_CM_EVENT_ROUTE_RESOLVED => "RDMA_CM_EVENT_ROUTE_RESOLVED",
            RDMA_CM_EVENT_ROUTE_ERROR => "RDMA_CM_EVENT_ROUTE_ERROR",
            RDMA_CM_EVENT_CONNECT_REQUEST => "RDMA_CM_EVENT_CONNECT_REQUEST",
            RDMA_CM_EVENT_CONNECT_RESPONSE => "RDMA_CM_EVENT_CONNECT_RESPONSE",
            RDMA_CM_EVENT_CONNECT_ERROR => "RDMA_CM_EVENT_CONNECT_ERROR",
            RDMA_CM_EVENT_UNREACHABLE => "RDMA_CM_EVENT_UNREACHABLE",
            RDMA_CM_EVENT_REJECTED => "RDMA_CM_EVENT_REJECTED",
            RDMA_CM_EVENT_ESTABLISHED => "RDMA_CM_EVENT_ESTABLISHED",
            RDMA_CM_EVENT_DISCONNECTED => "RDMA_CM_EVENT_DISCONNECTED",
            RDMA_CM_EVENT_DEVICE_REMOVAL => "RDMA_CM_EVENT_DEVICE_REMOVAL",
            RDMA_CM_EVENT_MULTICAST_JOIN => "RDMA_CM_EVENT_MULTICAST_JOIN",
            RDMA_CM_EVENT_MULTICAST_ERROR => "RDMA_CM_EVENT_MULTICAST_ERROR",
            RDMA_CM_EVENT_ADDR_CHANGE => "RDMA_CM_EVENT_ADDR_CHANGE",
            RDMA_CM_EVENT_TIMEWAIT_EXIT => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
            _ => return None,
        })
    }
}

impl std::fmt::Display for CmEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "rdma_cm event {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::error::Error as _;

    /// `ibv_modify_qp` from `from` to `to`, failed with `errno`.
    fn modify_qp_failed(from: QpStateName, to: QpStateName, errno: i32) -> Error {
        Error::os(Verb::ModifyQp { from, to }, errno)
    }

    #[test]
    fn a_refused_transition_names_it_and_prints_the_errno_once() {
        let e = modify_qp_failed(QpStateName::Reset, QpStateName::Init, libc::EINVAL);
        assert_eq!(e.to_string(), "ibv_modify_qp RESET->INIT failed: EINVAL");
        let source = e
            .source()
            .expect("an OS error has the io::Error as its source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the source is an io::Error");
        assert_eq!(io.raw_os_error(), Some(libc::EINVAL));
        // The chain, as error reporters print it: the errno's number once.
        let chain = format!("{e}: {source}");
        assert_eq!(chain.matches("22").count(), 1, "{chain}");
    }

    #[test]
    fn other_verbs_and_errnos_print_their_names() {
        let e = Error::os(Verb::CreateCqEx, libc::EOPNOTSUPP);
        assert_eq!(e.to_string(), "ibv_create_cq_ex failed: EOPNOTSUPP");
        let e = Error::os(Verb::QueryGid, libc::ENODATA);
        assert_eq!(e.to_string(), "ibv_query_gid failed: ENODATA");
        let e = modify_qp_failed(QpStateName::Rtr, QpStateName::Rts, libc::ETIMEDOUT);
        assert_eq!(e.to_string(), "ibv_modify_qp RTR->RTS failed: ETIMEDOUT");
        // No name, and no io::Error: the number in the text.
        let e = Error::os(Verb::PostSend, -3);
        assert_eq!(e.to_string(), "ibv_post_send failed: errno -3");
        assert!(e.source().is_none());
    }

    #[test]
    fn errors_without_an_errno_of_the_os_have_no_source() {
        let e = Error::range(Verb::CreateCq, "cqe", 0, 1, 4096);
        assert_eq!(
            e.to_string(),
            "ibv_create_cq: cqe = 0 is out of range: it must be at least 1 and at most 4096"
        );
        assert!(e.source().is_none());
        let e = Error {
            verb: Verb::AllocHugeBuf,
            kind: ErrorKind::NoHugePages(libc::ENOMEM),
        };
        assert_eq!(
            e.to_string(),
            "HugeBuf::new: no huge pages available (ENOMEM); reserve some with vm.nr_hugepages"
        );
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.and_then(|e| e.raw_os_error()), Some(libc::ENOMEM));
    }

    #[test]
    fn a_destroy_error_has_its_errors_source() {
        let e = DestroyError {
            object: (),
            error: Error::os(Verb::DestroyCq, libc::EBUSY),
        };
        assert_eq!(e.to_string(), "ibv_destroy_cq failed: EBUSY");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.and_then(|e| e.raw_os_error()), Some(libc::EBUSY));
    }
}
