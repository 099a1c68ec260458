//! Work-completion vocabulary shared by both kinds of CQ: typed status and opcode, and the
//! legacy `ibv_wc` entry that `ibv_poll_cq` fills.
//!
//! ```
//! use typed_verbs::{WcOpcode, WcStatus};
//! assert_eq!(WcStatus::SUCCESS.name(), Some("SUCCESS"));
//! assert!(WcOpcode::RECV_RDMA_WITH_IMM.is_recv());
//! ```
//!
//! The guide's [faults](crate::guide::faults) page says which status a work request completes
//! with when its peer dies.

use crate::ffi::sys;

macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident : $module:ident { $($(#[$vm:meta])* $v:ident = $c:ident,)* }) => {
        $(#[$m])*
        ///
        /// A transparent newtype over the C value, so reading one from a completion costs nothing;
        /// match on its constants. A value a newer provider adds is kept as is.
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $name(u32);
        impl $name {
            $($(#[$vm])* pub const $v: $name = $name(sys::$module::$c);)*
            /// From the C value.
            ///
            /// ```
            /// use typed_verbs::{WcOpcode, WcStatus};
            /// assert_eq!(WcStatus::from_raw(0), WcStatus::SUCCESS);
            /// assert_eq!(WcOpcode::from_raw(128), WcOpcode::RECV);
            /// ```
            #[inline(always)]
            pub const fn from_raw(v: u32) -> Self {
                $name(v)
            }
            /// The C value.
            ///
            /// ```
            /// assert_eq!(typed_verbs::WcStatus::WR_FLUSH_ERR.raw(), 5);
            /// ```
            #[inline(always)]
            pub const fn raw(self) -> u32 {
                self.0
            }
            /// The C name without its prefix (`SUCCESS`, `RECV`, ...), or `None` for a value this
            /// crate does not know.
            ///
            /// ```
            /// use typed_verbs::WcStatus;
            /// assert_eq!(WcStatus::LOC_PROT_ERR.name(), Some("LOC_PROT_ERR"));
            /// assert_eq!(WcStatus::from_raw(999).name(), None);
            /// ```
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $(sys::$module::$c => Some(stringify!($v)),)*
                    _ => None,
                }
            }
        }
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }
    };
}

c_enum! {
    /// `enum ibv_wc_status`.
    ///
    /// ```
    /// use typed_verbs::WcStatus;
    /// let s = WcStatus::from_raw(5); // as a provider wrote it
    /// assert_eq!((s, s.name()), (WcStatus::WR_FLUSH_ERR, Some("WR_FLUSH_ERR")));
    /// assert_eq!(format!("{:?}", WcStatus::from_raw(1000)), "WcStatus(1000)"); // unknown: kept
    /// ```
    WcStatus: ibv_wc_status {
        /// `IBV_WC_SUCCESS`
        SUCCESS = IBV_WC_SUCCESS,
        /// `IBV_WC_LOC_LEN_ERR`
        LOC_LEN_ERR = IBV_WC_LOC_LEN_ERR,
        /// `IBV_WC_LOC_QP_OP_ERR`
        LOC_QP_OP_ERR = IBV_WC_LOC_QP_OP_ERR,
        /// `IBV_WC_LOC_EEC_OP_ERR`
        LOC_EEC_OP_ERR = IBV_WC_LOC_EEC_OP_ERR,
        /// `IBV_WC_LOC_PROT_ERR`
        LOC_PROT_ERR = IBV_WC_LOC_PROT_ERR,
        /// `IBV_WC_WR_FLUSH_ERR`
        WR_FLUSH_ERR = IBV_WC_WR_FLUSH_ERR,
        /// `IBV_WC_MW_BIND_ERR`
        MW_BIND_ERR = IBV_WC_MW_BIND_ERR,
        /// `IBV_WC_BAD_RESP_ERR`
        BAD_RESP_ERR = IBV_WC_BAD_RESP_ERR,
        /// `IBV_WC_LOC_ACCESS_ERR`
        LOC_ACCESS_ERR = IBV_WC_LOC_ACCESS_ERR,
        /// `IBV_WC_REM_INV_REQ_ERR`
        REM_INV_REQ_ERR = IBV_WC_REM_INV_REQ_ERR,
        /// `IBV_WC_REM_ACCESS_ERR`
        REM_ACCESS_ERR = IBV_WC_REM_ACCESS_ERR,
        /// `IBV_WC_REM_OP_ERR`
        REM_OP_ERR = IBV_WC_REM_OP_ERR,
        /// `IBV_WC_RETRY_EXC_ERR`
        RETRY_EXC_ERR = IBV_WC_RETRY_EXC_ERR,
        /// `IBV_WC_RNR_RETRY_EXC_ERR`
        RNR_RETRY_EXC_ERR = IBV_WC_RNR_RETRY_EXC_ERR,
        /// `IBV_WC_LOC_RDD_VIOL_ERR`
        LOC_RDD_VIOL_ERR = IBV_WC_LOC_RDD_VIOL_ERR,
        /// `IBV_WC_REM_INV_RD_REQ_ERR`
        REM_INV_RD_REQ_ERR = IBV_WC_REM_INV_RD_REQ_ERR,
        /// `IBV_WC_REM_ABORT_ERR`
        REM_ABORT_ERR = IBV_WC_REM_ABORT_ERR,
        /// `IBV_WC_INV_EECN_ERR`
        INV_EECN_ERR = IBV_WC_INV_EECN_ERR,
        /// `IBV_WC_INV_EEC_STATE_ERR`
        INV_EEC_STATE_ERR = IBV_WC_INV_EEC_STATE_ERR,
        /// `IBV_WC_FATAL_ERR`
        FATAL_ERR = IBV_WC_FATAL_ERR,
        /// `IBV_WC_RESP_TIMEOUT_ERR`
        RESP_TIMEOUT_ERR = IBV_WC_RESP_TIMEOUT_ERR,
        /// `IBV_WC_GENERAL_ERR`
        GENERAL_ERR = IBV_WC_GENERAL_ERR,
        /// `IBV_WC_TM_ERR`
        TM_ERR = IBV_WC_TM_ERR,
        /// `IBV_WC_TM_RNDV_INCOMPLETE`
        TM_RNDV_INCOMPLETE = IBV_WC_TM_RNDV_INCOMPLETE,
    }
}

c_enum! {
    /// `enum ibv_wc_opcode`: what the completed work request was.
    ///
    /// ```
    /// use typed_verbs::WcOpcode;
    /// assert!(WcOpcode::RECV.is_recv() && !WcOpcode::SEND.is_recv());
    /// assert_eq!(WcOpcode::RDMA_WRITE.name(), Some("RDMA_WRITE"));
    /// ```
    WcOpcode: ibv_wc_opcode {
        /// `IBV_WC_SEND`
        SEND = IBV_WC_SEND,
        /// `IBV_WC_RDMA_WRITE`
        RDMA_WRITE = IBV_WC_RDMA_WRITE,
        /// `IBV_WC_RDMA_READ`
        RDMA_READ = IBV_WC_RDMA_READ,
        /// `IBV_WC_COMP_SWAP`
        COMP_SWAP = IBV_WC_COMP_SWAP,
        /// `IBV_WC_FETCH_ADD`
        FETCH_ADD = IBV_WC_FETCH_ADD,
        /// `IBV_WC_BIND_MW`
        BIND_MW = IBV_WC_BIND_MW,
        /// `IBV_WC_LOCAL_INV`
        LOCAL_INV = IBV_WC_LOCAL_INV,
        /// `IBV_WC_TSO`
        TSO = IBV_WC_TSO,
        /// `IBV_WC_RECV`
        RECV = IBV_WC_RECV,
        /// `IBV_WC_RECV_RDMA_WITH_IMM`
        RECV_RDMA_WITH_IMM = IBV_WC_RECV_RDMA_WITH_IMM,
    }
}

impl WcOpcode {
    /// Whether this completes a receive (the opcodes from `IBV_WC_RECV` on).
    ///
    /// ```
    /// use typed_verbs::WcOpcode;
    /// assert!(WcOpcode::RECV.is_recv());
    /// assert!(!WcOpcode::RDMA_READ.is_recv());
    /// ```
    pub fn is_recv(self) -> bool {
        self.raw() & sys::ibv_wc_opcode::IBV_WC_RECV != 0
    }
}

/// One entry of the array that [`crate::cq::Cq::poll`] fills: `struct ibv_wc`, with typed accessors.
/// The fields other than `wr_id`, `status` and `vendor_err` are valid only on success, so they
/// are read through [`WorkCompletion::success`].
///
/// ```
/// use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
/// let ctx = Context::open("sw0")?;
/// let cq = Cq::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(64))?;
/// software::inject(&cq, InjectedCompletion::error(2, WcStatus::LOC_PROT_ERR, 7))?;
/// let mut wc = [const { WorkCompletion::new() }; 4];
/// for c in cq.poll(&mut wc)? {
///     match c.success() {
///         Some(ok) => assert_eq!((ok.opcode(), ok.byte_len()), (WcOpcode::RECV, 64)),
///         None => assert_eq!((c.status(), c.vendor_err()), (WcStatus::LOC_PROT_ERR, 7)),
///     }
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[repr(transparent)]
pub struct WorkCompletion(sys::ibv_wc);

static_assertions::assert_eq_size!(WorkCompletion, sys::ibv_wc);
static_assertions::assert_eq_align!(WorkCompletion, sys::ibv_wc);

impl WorkCompletion {
    /// An empty entry, for the caller's array.
    ///
    /// ```
    /// let wc = [const { typed_verbs::WorkCompletion::new() }; 16]; // an array for Cq::poll
    /// assert_eq!(wc[0].wr_id(), 0);
    /// ```
    pub const fn new() -> Self {
        // SAFETY: ibv_wc is plain C data; all-zero is a valid value.
        WorkCompletion(unsafe { std::mem::zeroed() })
    }
    /// `wr_id` of the work request.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(9, WcOpcode::SEND))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let c = &cq.poll(&mut wc)?[0];
    /// assert_eq!(c.wr_id(), 9);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn wr_id(&self) -> u64 {
        self.0.wr_id
    }
    /// The status.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(9, WcStatus::LOC_LEN_ERR, 0))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let c = &cq.poll(&mut wc)?[0];
    /// assert_eq!(c.status(), WcStatus::LOC_LEN_ERR);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn status(&self) -> WcStatus {
        WcStatus::from_raw(self.0.status)
    }
    /// `vendor_err`: the device's own error code of a failed completion.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(9, WcStatus::LOC_LEN_ERR, 0x21))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let c = &cq.poll(&mut wc)?[0];
    /// assert_eq!(c.vendor_err(), 0x21);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn vendor_err(&self) -> u32 {
        self.0.vendor_err
    }
    /// The success-only fields, or `None` for a failed completion.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// assert!(cq.poll(&mut wc)?[0].success().is_some());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline]
    pub fn success(&self) -> Option<&WcSuccess> {
        // SAFETY: WcSuccess is repr(transparent) over the same ibv_wc.
        (self.0.status == sys::ibv_wc_status::IBV_WC_SUCCESS)
            .then(|| unsafe { &*(self as *const WorkCompletion as *const WcSuccess) })
    }
}

impl Default for WorkCompletion {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WorkCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkCompletion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// A successful legacy completion: every field of `struct ibv_wc` (`ibv_poll_cq` returns all).
///
/// ```
/// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
/// # let ctx = Context::open("sw0")?;
/// # let cq = Cq::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(9))?;
/// let mut wc = [const { WorkCompletion::new() }; 1];
/// let ok = cq.poll(&mut wc)?[0].success().expect("success");
/// assert_eq!(ok.imm_data(), Some(9));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[repr(transparent)]
pub struct WcSuccess(sys::ibv_wc);

impl WcSuccess {
    /// `wr_id`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.wr_id(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn wr_id(&self) -> u64 {
        self.0.wr_id
    }
    /// The opcode.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.opcode(), WcOpcode::RECV);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn opcode(&self) -> WcOpcode {
        WcOpcode::from_raw(self.0.opcode)
    }
    /// `byte_len`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(8))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.byte_len(), 8);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }
    /// Immediate data in host byte order, when the completion carries it (`IBV_WC_WITH_IMM`).
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(3))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.imm_data(), Some(3));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn imm_data(&self) -> Option<u32> {
        // SAFETY: the union's two members are both u32.
        (self.0.wc_flags & crate::ffi::IBV_WC_WITH_IMM != 0)
            .then(|| u32::from_be(unsafe { self.0.imm_data_invalidated_rkey_union.imm_data }))
    }
    /// The invalidated rkey, when the completion carries one (`IBV_WC_WITH_INV`).
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).invalidated_rkey(4))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.invalidated_rkey(), Some(4));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn invalidated_rkey(&self) -> Option<u32> {
        // SAFETY: as above.
        (self.0.wc_flags & crate::ffi::IBV_WC_WITH_INV != 0)
            .then_some(unsafe { self.0.imm_data_invalidated_rkey_union.invalidated_rkey })
    }
    /// `qp_num`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).qp_num(5))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.qp_num(), 5);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn qp_num(&self) -> u32 {
        self.0.qp_num
    }
    /// `src_qp`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).src_qp(6))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.src_qp(), 6);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn src_qp(&self) -> u32 {
        self.0.src_qp
    }
    /// The completion's own flags (`IBV_WC_GRH`, `IBV_WC_WITH_IMM`, ...).
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(1))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.wc_flags() & 2, 2); // IBV_WC_WITH_IMM
    /// # assert!(true);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn wc_flags(&self) -> u32 {
        self.0.wc_flags
    }
    /// `pkey_index`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).pkey_index(2))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// assert_eq!(cq.poll(&mut wc)?[0].success().unwrap().pkey_index(), 2);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn pkey_index(&self) -> u16 {
        self.0.pkey_index
    }
    /// `slid`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).slid(7))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.slid(), 7);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn slid(&self) -> u16 {
        self.0.slid
    }
    /// `sl`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).sl(1))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.sl(), 1);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn sl(&self) -> u8 {
        self.0.sl
    }
    /// `dlid_path_bits`.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WcStatus, WorkCompletion};
    /// # let ctx = Context::open("sw0")?;
    /// # let cq = Cq::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).dlid_path_bits(2))?;
    /// let mut wc = [const { WorkCompletion::new() }; 1];
    /// let ok = cq.poll(&mut wc)?[0].success().expect("success");
    /// assert_eq!(ok.dlid_path_bits(), 2);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn dlid_path_bits(&self) -> u8 {
        self.0.dlid_path_bits
    }
}
