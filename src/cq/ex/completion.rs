//! One completion of a batch: its status as a type, and the readers its CQ's flags allow.

use super::*;

/// What is known of a completion's status: [`Unchecked`], [`Success`] or [`Failure`].
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::error(4, WcStatus::REM_ACCESS_ERR, 0x11))?;
/// cq.poll_batch(|batch| {
///     let c = batch.completion(); // Completion<_, Unchecked>: wr_id and status
///     match c.result() {
///         Ok(_ok) => unreachable!(),   // Completion<_, Success>
///         Err(failed) => assert_eq!(failed.vendor_err(), 0x11), // Completion<_, Failure>
///     }
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait StatusState: sealed::Sealed {}
/// The status has not been looked at: only `wr_id` and `status` can be read.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { let _c: typed_verbs::Completion<'_, _, typed_verbs::Unchecked> = b.completion(); })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Unchecked {}
/// A successful completion: the opcode and the fields of the CQ's flags can be read.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { if let Ok(c) = b.completion().result() { let _ = c.byte_len(); } })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Success {}
/// A failed completion: only `wr_id`, `status` and `vendor_err` are valid.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| { if let Err(c) = b.completion().result() { let _ = c.vendor_err(); } })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Failure {}
impl sealed::Sealed for Unchecked {}
impl sealed::Sealed for Success {}
impl sealed::Sealed for Failure {}
impl StatusState for Unchecked {}
impl StatusState for Success {}
impl StatusState for Failure {}

/// Implemented by [`Success`] only: the fields other than wr_id, status and vendor_err are valid
/// only on a successful completion ("some fields are only valid in certain opcodes and status
/// codes").
///
/// ```compile_fail,E0277
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// # let mut cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(4).build()?;
/// cq.poll_batch(|b| b.completion().byte_len())?; // the status is not known to be success
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "this field is valid only on a successful completion: check the status with `.result()` and read it from the `Ok` side",
    label = "the completion's status is not known to be success here",
    note = "a failed completion has only wr_id, status and vendor_err"
)]
pub trait Succeeded: StatusState + sealed::Sealed {}
impl Succeeded for Success {}

/// The completion a batch points at: reads go straight to the provider's `ibv_wc_read_*`
/// function pointers, only for the fields the CQ's flags `F` requested and, past wr_id and
/// status, only once the status is known to be success (`S`).
///
/// ```
/// use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<wc_flags!(BYTE_LEN | QP_NUM)>::builder(&ctx).cqe(16).build()?;
/// software::inject(&cq, InjectedCompletion::success(5, WcOpcode::RECV).byte_len(32).qp_num(17))?;
/// cq.poll_batch(|batch| {
///     let wc = batch.completion().result().expect("success");
///     assert_eq!((wc.opcode(), wc.byte_len(), wc.qp_num()), (WcOpcode::RECV, 32, 17));
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct Completion<'b, F: WcFlags, S: StatusState = Unchecked> {
    pub(super) cq: NonNull<sys::ibv_cq_ex>,
    pub(super) _m: PhantomData<(&'b (), F, S, *const ())>,
}

/// Implemented by nothing: the bound of [`Completion`]'s `Send` and `Sync` impls, which
/// therefore never apply, so that the compiler's error says why a completion stays on its
/// thread rather than naming a raw pointer inside it.
///
/// ```
/// use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
/// software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV))?;
/// let mut ids = Vec::new(); // plain values, free to go to any thread
/// cq.poll_batch(|batch| ids.extend(batch.completion().result().ok().map(|wc| wc.wr_id())))?;
/// std::thread::spawn(move || assert_eq!(ids, [7])).join().unwrap();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "a `Completion` cannot leave the thread that polls: it is read from the CQ inside the batch, under the lock `ibv_start_poll` took; copy its fields (`wr_id`, `status`, `byte_len`, ...) and send those values",
    label = "a completion used on another thread",
    note = "a completion borrows its batch, which lives inside the closure of `poll_batch` on the polling thread"
)]
pub trait CompletionStaysOnItsThread: sealed::Sealed {}

// SAFETY: never applies (no type implements `CompletionStaysOnItsThread`, which is sealed): a
// completion is neither Send nor Sync, as without these impls; they only name the reason.
unsafe impl<F: WcFlags + CompletionStaysOnItsThread, S: StatusState> Send for Completion<'_, F, S> {}
// SAFETY: as above.
unsafe impl<F: WcFlags + CompletionStaysOnItsThread, S: StatusState> Sync for Completion<'_, F, S> {}

impl<'b, F: WcFlags, S: StatusState> Completion<'b, F, S> {
    /// `wr_id` of the completed work request.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::success(77, WcOpcode::SEND))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().wr_id(), 77))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn wr_id(&self) -> u64 {
        // SAFETY: inside a batch; the field belongs to the current completion.
        unsafe { (*self.cq.as_ptr()).wr_id }
    }

    /// The completion's status.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::WR_FLUSH_ERR, 0))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().status(), WcStatus::WR_FLUSH_ERR))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn status(&self) -> WcStatus {
        // SAFETY: as above.
        WcStatus::from_raw(unsafe { (*self.cq.as_ptr()).status })
    }

    #[inline(always)]
    fn cast<S2: StatusState>(self) -> Completion<'b, F, S2> {
        Completion {
            cq: self.cq,
            _m: PhantomData,
        }
    }
}

impl<'b, F: WcFlags> Completion<'b, F, Unchecked> {
    /// Splits on the status: `Ok` for success, with the opcode and the flagged fields; `Err`
    /// for a failure, with `vendor_err`.
    ///
    /// # Errors
    /// `Err` with the completion as [`Failure`] when its status is not `IBV_WC_SUCCESS`: only
    /// `wr_id`, `status` and `vendor_err` can be read from it.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// # let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::WR_FLUSH_ERR, 0))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().err().unwrap().status(), WcStatus::WR_FLUSH_ERR))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[allow(clippy::result_large_err)]
    #[inline(always)]
    pub fn result(
        self,
    ) -> std::result::Result<Completion<'b, F, Success>, Completion<'b, F, Failure>> {
        // SAFETY: inside a batch.
        if unsafe { (*self.cq.as_ptr()).status } == sys::ibv_wc_status::IBV_WC_SUCCESS {
            Ok(self.cast())
        } else {
            Err(self.cast())
        }
    }
}

impl<F: WcFlags> Completion<'_, F, Failure> {
    /// `ibv_wc_read_vendor_err`: the device's own code for the failure.
    ///
    /// ```
    /// # use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcStatus};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    /// software::inject(&cq, InjectedCompletion::error(1, WcStatus::REM_ACCESS_ERR, 0x33))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().err().unwrap().vendor_err(), 0x33))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn vendor_err(&self) -> u32 {
        // SAFETY: inside a batch, on the current completion.
        unsafe { cq_ex_call!(self.cq.as_ptr(), read_vendor_err) }
    }
}

macro_rules! flagged_reads {
    ($($(#[$m:meta])* $name:ident -> $t:ty = $read:ident, $flag:ident;)*) => {$(
        $(#[$m])*
        #[doc = concat!("\n\n```\n# use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};\n# let ctx = Context::open(\"sw0\")?;\nlet mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag\nsoftware::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).", stringify!($name), "(1))?;\ncq.poll_batch(|b| assert_eq!(b.completion().result().expect(\"success\").", stringify!($name), "(), 1))?;\n# Ok::<(), typed_verbs::Error>(())\n```")]
        #[inline(always)]
        pub fn $name(&self) -> $t
        where
            F: $flag,
            S: Succeeded,
        {
            // SAFETY: inside a batch, on a successful completion, of a CQ created with the
            // field's flag (the bounds), so the provider's read function is valid to call.
            unsafe { cq_ex_call!(self.cq.as_ptr(), $read) }
        }
    )*};
}

impl<F: WcFlags, S: StatusState> Completion<'_, F, S> {
    /// `ibv_wc_read_opcode`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).byte_len(1))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").opcode(), WcOpcode::RECV))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn opcode(&self) -> WcOpcode
    where
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion.
        WcOpcode::from_raw(unsafe { cq_ex_call!(self.cq.as_ptr(), read_opcode) })
    }

    /// `ibv_wc_read_wc_flags`: the completion's own flags (`IBV_WC_GRH`, `IBV_WC_WITH_IMM`, ...).
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(5))?;
    /// cq.poll_batch(|b| {
    ///     let flags = b.completion().result().expect("success").completion_flags();
    ///     assert_ne!(flags & 2, 0); // IBV_WC_WITH_IMM
    /// })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn completion_flags(&self) -> u32
    where
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion.
        unsafe { cq_ex_call!(self.cq.as_ptr(), read_wc_flags) }
    }

    /// `ibv_wc_read_imm_data`, in host byte order: `Some` when the completion carries immediate
    /// data (its own `IBV_WC_WITH_IMM` flag), `None` otherwise. Needs `IMM` in the CQ's flags.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(0xbeef))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").imm_data(), Some(0xbeef)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn imm_data(&self) -> Option<u32>
    where
        F: WithImm,
        S: Succeeded,
    {
        // SAFETY: inside a batch, on a successful completion of a CQ with IMM.
        unsafe {
            let own = cq_ex_call!(self.cq.as_ptr(), read_wc_flags);
            (own & ffi::IBV_WC_WITH_IMM != 0)
                .then(|| u32::from_be(cq_ex_call!(self.cq.as_ptr(), read_imm_data)))
        }
    }

    /// `ibv_wc_read_invalidated_rkey`: `Some` when the completion carries one (its own
    /// `IBV_WC_WITH_INV` flag). It shares the immediate-data field, so it needs `IMM`.
    ///
    /// ```
    /// # use typed_verbs::{software, AllFields, Context, CqEx, InjectedCompletion, WcOpcode};
    /// # let ctx = Context::open("sw0")?;
    /// let mut cq = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?; // sw0 has every flag
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).invalidated_rkey(0x1234))?;
    /// cq.poll_batch(|b| assert_eq!(b.completion().result().expect("success").invalidated_rkey(), Some(0x1234)))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    #[inline(always)]
    pub fn invalidated_rkey(&self) -> Option<u32>
    where
        F: WithImm,
        S: Succeeded,
    {
        // SAFETY: as for imm_data.
        unsafe {
            let own = cq_ex_call!(self.cq.as_ptr(), read_wc_flags);
            (own & ffi::IBV_WC_WITH_INV != 0).then(|| cq_ex_call!(self.cq.as_ptr(), read_imm_data))
        }
    }

    flagged_reads! {
        /// `ibv_wc_read_byte_len`.
        byte_len -> u32 = read_byte_len, WithByteLen;
        /// `ibv_wc_read_qp_num`: the local QP the completion belongs to.
        qp_num -> u32 = read_qp_num, WithQpNum;
        /// `ibv_wc_read_src_qp`: the remote QP of a UD receive.
        src_qp -> u32 = read_src_qp, WithSrcQp;
        /// `ibv_wc_read_slid`.
        slid -> u32 = read_slid, WithSlid;
        /// `ibv_wc_read_sl`.
        sl -> u8 = read_sl, WithSl;
        /// `ibv_wc_read_dlid_path_bits`.
        dlid_path_bits -> u8 = read_dlid_path_bits, WithDlidPathBits;
        /// `ibv_wc_read_completion_ts`: the device timestamp, in HCA clock units.
        completion_ts -> u64 = read_completion_ts, WithCompletionTimestamp;
        /// `ibv_wc_read_completion_wallclock_ns`: the timestamp in wall-clock nanoseconds.
        completion_wallclock_ns -> u64 = read_completion_wallclock_ns, WithCompletionTimestampWallclock;
        /// `ibv_wc_read_cvlan`.
        cvlan -> u16 = read_cvlan, WithCvlan;
        /// `ibv_wc_read_flow_tag`.
        flow_tag -> u32 = read_flow_tag, WithFlowTag;
    }
}

impl<F: WcFlags, S: StatusState> std::fmt::Debug for Completion<'_, F, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

crate::object::debug_handle!(CqEx<'a, F, T, C> where F: WcFlags, T: Threading);
