//! The poll-loop benchmark of typed-verbs: one workload, five ways to drain it.
//!
//! The workload: one extended CQ of the software device `sw0` with
//! `wc_flags!(BYTE_LEN | IMM | QP_NUM | SRC_QP)`, filled with [`N`] completions ([`Workload`]),
//! then drained completely, at most [`MAX_BATCH`] per batch, by one of the variants. Each
//! variant folds the same fields of each completion, in the same order, into a `u64` checksum
//! with [`mix`]: wr_id, opcode, byte_len, imm_data (0 if none), qp_num, src_qp for a success;
//! wr_id, status, vendor_err for a failure. Every variant must give [`Workload::checksum`].
//!
//! | variant | function | what it is |
//! |---|---|---|
//! | generated | [`drain_generated`] | the loop `typed_verbs::completion_record!` writes |
//! | c | `c_drain` (C, through [`drain_c`]) | the same loop by hand against verbs.h's inline functions, `-O2` |
//! | checked | [`drain_checked`] | a wrapper with runtime flags: every read tests its flag, returns a `Result` |
//! | vec | [`drain_vec`] | a wrapper whose poll returns a `Vec` of owned completions per batch |
//! | poll_cq | [`drain_poll_cq`] | `ibv_poll_cq` into a stack `[ibv_wc; 16]` |
//!
//! Each drain function has an unmangled name, so callgrind can collect inside it alone
//! (`--toggle-collect=drain_generated`); `scripts/bench.sh` runs them all.

pub mod post;
pub mod post_ex;
pub mod recv;
use std::fmt;
use std::mem::MaybeUninit;
use std::os::raw::c_int;
use typed_verbs::cq_ex::flags;
use typed_verbs::ffi::sys;
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::{
    software, wc_flags, AccessFlags, AddressVector, ConnectedInit, Context, CqEx, GlobalRoute,
    InjectedCompletion, Mtu, Qp, Rc, RcRtr, RcRts, RecvSide, Shared, WcOpcode, WcStatus,
};

/// The CQ's `wc_flags`: the four optional fields the workload reads.
pub type BenchFlags = wc_flags!(BYTE_LEN | IMM | QP_NUM | SRC_QP);
/// The benchmark's CQ.
pub type BenchCq<'a> = CqEx<'a, BenchFlags>;

/// Completions per fill, and so per drain.
pub const N: usize = 4096;
/// The most completions one batch (one `ibv_start_poll` .. `ibv_end_poll`) takes.
pub const MAX_BATCH: usize = 16;
/// The checksum's start value (FNV-1a's offset basis). `c/poll_loop.c` has the same.
pub const CHECKSUM_SEED: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV's 64-bit prime. `c/poll_loop.c` has the same.
const CHECKSUM_PRIME: u64 = 0x0000_0100_0000_01b3;
/// `IBV_WC_WITH_IMM` in a completion's own flags.
const WC_WITH_IMM: u32 = sys::ibv_wc_flags::IBV_WC_WITH_IMM.0;

/// Folds one field into the checksum: `(h ^ x) * prime`, as `mix` in `c/poll_loop.c`.
#[inline(always)]
pub fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(CHECKSUM_PRIME)
}

/// Opens `sw0`'s context.
pub fn open() -> typed_verbs::Result<Context> {
    Context::open("sw0")
}

/// The address of `ctx`'s own port 1 (GID index 0): the loopback of the RC pairs of the post
/// and receive benchmarks.
pub fn loopback_av(ctx: &Context) -> AddressVector {
    AddressVector {
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: 1,
        grh: Some(GlobalRoute {
            dgid: ctx.query_gid(1, 0).expect("gid"),
            flow_label: 0,
            sgid_index: 0,
            hop_limit: 1,
            traffic_class: 0,
        }),
    }
}

/// Brings an RC QP from RESET to RTS towards `dest` on the same port, granting `access`.
pub fn rc_up<'a, R: RecvSide>(
    ctx: &Context,
    qp: Qp<'a, Rc, R, Shared, (), Reset>,
    dest: u32,
    access: AccessFlags,
) -> Qp<'a, Rc, R, Shared, (), Rts> {
    let init = ConnectedInit {
        port_num: 1,
        pkey_index: 0,
        access,
    };
    let rtr = RcRtr {
        av: loopback_av(ctx),
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: dest,
        rq_psn: 0,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
    };
    let rts = RcRts {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    let qp = qp.to_init(init).expect("init");
    let qp = qp.to_rtr(rtr).expect("rtr");
    qp.to_rts(rts).expect("rts")
}

/// Creates the benchmark's CQ: room for the [`N`] completions of a fill.
pub fn create_cq(ctx: &Context) -> typed_verbs::Result<BenchCq<'_>> {
    BenchCq::builder(ctx).cqe(N as u32).build()
}

/// One completion of the workload, as the harness writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// A successful completion with the four flagged fields; `imm` is `None` without immediate
    /// data.
    Success {
        /// wr_id
        wr_id: u64,
        /// opcode
        opcode: WcOpcode,
        /// byte_len
        byte_len: u32,
        /// imm_data (host order), if any
        imm: Option<u32>,
        /// qp_num
        qp_num: u32,
        /// src_qp
        src_qp: u32,
    },
    /// A failed completion.
    Error {
        /// wr_id
        wr_id: u64,
        /// status (not SUCCESS)
        status: WcStatus,
        /// vendor_err
        vendor_err: u32,
    },
}

impl Spec {
    /// The completion [`software::inject`] puts into the CQ.
    pub fn injected(&self) -> InjectedCompletion {
        match *self {
            Spec::Success {
                wr_id,
                opcode,
                byte_len,
                imm,
                qp_num,
                src_qp,
            } => {
                let c = InjectedCompletion::success(wr_id, opcode)
                    .byte_len(byte_len)
                    .qp_num(qp_num)
                    .src_qp(src_qp);
                match imm {
                    Some(v) => c.imm_data(v),
                    None => c,
                }
            }
            Spec::Error {
                wr_id,
                status,
                vendor_err,
            } => InjectedCompletion::error(wr_id, status, vendor_err),
        }
    }

    /// The checksum step of this completion: what every variant must fold.
    pub fn fold(&self, h: u64) -> u64 {
        match *self {
            Spec::Success {
                wr_id,
                opcode,
                byte_len,
                imm,
                qp_num,
                src_qp,
            } => fold_success(
                h,
                wr_id,
                opcode.raw(),
                byte_len,
                imm.unwrap_or(0),
                qp_num,
                src_qp,
            ),
            Spec::Error {
                wr_id,
                status,
                vendor_err,
            } => fold_error(h, wr_id, status.raw(), vendor_err),
        }
    }
}

#[inline(always)]
fn fold_success(
    h: u64,
    wr_id: u64,
    opcode: u32,
    byte_len: u32,
    imm: u32,
    qp_num: u32,
    src_qp: u32,
) -> u64 {
    let h = mix(h, wr_id);
    let h = mix(h, opcode.into());
    let h = mix(h, byte_len.into());
    let h = mix(h, imm.into());
    let h = mix(h, qp_num.into());
    mix(h, src_qp.into())
}

#[inline(always)]
fn fold_error(h: u64, wr_id: u64, status: u32, vendor_err: u32) -> u64 {
    let h = mix(h, wr_id);
    let h = mix(h, status.into());
    mix(h, vendor_err.into())
}

/// The [`N`] completions of one fill and the checksum that draining them must give.
///
/// A fixed pseudo-random mix (the same on every run): about 98% successes, of which about three
/// quarters carry immediate data (RECV or RECV_RDMA_WITH_IMM), the rest RECV, SEND or RDMA_WRITE
/// without; every success has a byte_len, a qp_num (one of four QPs) and a src_qp. About 2% fail,
/// with one of four statuses and a vendor_err.
pub struct Workload {
    specs: Vec<Spec>,
    injected: Vec<InjectedCompletion>,
    checksum: u64,
}

impl Workload {
    /// The workload.
    pub fn new() -> Self {
        // xorshift64*: deterministic, and irregular enough that the branch predictor cannot
        // learn the success/error and imm/no-imm pattern by heart.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let statuses = [
            WcStatus::WR_FLUSH_ERR,
            WcStatus::REM_ACCESS_ERR,
            WcStatus::RETRY_EXC_ERR,
            WcStatus::LOC_LEN_ERR,
        ];
        let specs: Vec<Spec> = (0..N as u64)
            .map(|i| {
                let r = next();
                let wr_id = 0x1000_0000 + i;
                if r % 64 < 1 || r % 100 == 7 {
                    return Spec::Error {
                        wr_id,
                        status: statuses[(r >> 8) as usize % statuses.len()],
                        vendor_err: (r >> 16) as u32 & 0xff,
                    };
                }
                let with_imm = (r >> 8) % 4 != 0;
                let opcode = match ((r >> 12) % 4, with_imm) {
                    (0 | 1, true) => WcOpcode::RECV_RDMA_WITH_IMM,
                    (_, true) | (0 | 1, false) => WcOpcode::RECV,
                    (2, false) => WcOpcode::SEND,
                    (_, false) => WcOpcode::RDMA_WRITE,
                };
                Spec::Success {
                    wr_id,
                    opcode,
                    byte_len: (r >> 16) as u32 % 4097,
                    imm: with_imm.then_some((r >> 32) as u32),
                    qp_num: 0x11 + (r >> 30) as u32 % 4,
                    src_qp: (r >> 40) as u32 & 0xff_ffff,
                }
            })
            .collect();
        let injected = specs.iter().map(Spec::injected).collect();
        let checksum = specs.iter().fold(CHECKSUM_SEED, |h, s| s.fold(h));
        Workload {
            specs,
            injected,
            checksum,
        }
    }

    /// The completions, in the order they are injected.
    pub fn specs(&self) -> &[Spec] {
        &self.specs
    }

    /// The checksum of a complete drain.
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// Puts the [`N`] completions into `cq` (which must be empty, or have room).
    pub fn fill(&self, cq: &BenchCq<'_>) {
        for c in &self.injected {
            software::inject(cq, *c).expect("inject a completion into the software CQ");
        }
    }
}

impl Default for Workload {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------------------------
// (a) The loop `completion_record!` generates.

typed_verbs::completion_record! {
    /// What the benchmark reads of a successful completion.
    pub struct BenchRecord { wr_id, opcode, byte_len, imm_data, qp_num, src_qp }
    /// What it reads of a failed one.
    pub struct BenchError { wr_id, status, vendor_err }
    max_batch = 16;
}

/// Variant (a): `BenchRecord::poll` (the generated loop) until it takes nothing.
#[no_mangle]
#[inline(never)]
pub fn drain_generated(cq: &mut BenchCq<'_>) -> typed_verbs::Result<u64> {
    let mut h = CHECKSUM_SEED;
    // The handler folds each field as it reads it from the view, as the C loop does.
    while BenchRecord::poll(cq, |r| {
        h = match r {
            Ok(s) => {
                let h = mix(h, s.wr_id());
                let h = mix(h, s.opcode().raw().into());
                let h = mix(h, s.byte_len().into());
                let h = mix(h, s.imm_data().unwrap_or(0).into());
                let h = mix(h, s.qp_num().into());
                mix(h, s.src_qp().into())
            }
            Err(e) => fold_error(h, e.wr_id, e.status.raw(), e.vendor_err),
        }
    })? != 0
    {}
    Ok(h)
}

// ---------------------------------------------------------------------------------------------
// (b) The same loop in C (c/poll_loop.c).

extern "C" {
    /// `c/poll_loop.c`: drains `cq`; 0 and the checksum, or the failing poll's error code.
    fn c_drain(cq: *mut sys::ibv_cq_ex, checksum: *mut u64) -> c_int;
}

/// Variant (b): calls the C loop `c_drain` on the CQ. The callgrind runs collect inside
/// `c_drain` itself.
pub fn drain_c(cq: &mut BenchCq<'_>) -> Result<u64, c_int> {
    let mut h = 0;
    // SAFETY: a live extended CQ, held exclusively (`&mut`), so no batch is open on it and the
    // C loop may open and end its own; `h` is valid for the write.
    match unsafe { c_drain(cq.as_raw(), &mut h) } {
        0 => Ok(h),
        e => Err(e),
    }
}

// ---------------------------------------------------------------------------------------------
// (c) and (d): wrappers as other Rust crates write them, over rdma-sys's inline functions.

/// A failure of the runtime-checked wrappers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckedError {
    /// `ibv_start_poll` or `ibv_next_poll` failed with this code.
    Poll(c_int),
    /// The field's flag was not requested when the CQ was created.
    NotRequested(&'static str),
}

impl fmt::Display for CheckedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckedError::Poll(e) => write!(f, "polling failed with error {e}"),
            CheckedError::NotRequested(field) => {
                write!(f, "`{field}` was not requested at CQ creation")
            }
        }
    }
}

impl std::error::Error for CheckedError {}

/// A runtime-checked extended CQ, as crates without typed flags write it: the C pointer and the
/// `wc_flags` as a value. Every flagged read tests the flag first; every call goes through
/// rdma-sys's `ibv_*` inline functions, which `unwrap` the provider's function pointer.
pub struct CheckedCq {
    cq: *mut sys::ibv_cq_ex,
    wc_flags: u64,
}

impl CheckedCq {
    /// Wraps `cq`, created with `wc_flags`.
    ///
    /// # Safety
    /// `cq` is a live extended CQ created with `wc_flags` that outlives the wrapper, and nothing
    /// else polls it while the wrapper lives.
    pub unsafe fn from_raw(cq: *mut sys::ibv_cq_ex, wc_flags: u64) -> Self {
        CheckedCq { cq, wc_flags }
    }

    /// `ibv_start_poll`: `None` when the CQ is empty.
    #[inline]
    pub fn start_poll(&mut self) -> Result<Option<CheckedBatch<'_>>, CheckedError> {
        let mut attr = sys::ibv_poll_cq_attr { comp_mask: 0 };
        // SAFETY: a live CQ (from_raw's contract); `&mut self` means no batch is open.
        match unsafe { sys::ibv_start_poll(self.cq, &mut attr) } {
            0 => Ok(Some(CheckedBatch { cq: self })),
            ENOENT => Ok(None),
            e => Err(CheckedError::Poll(e)),
        }
    }

    /// Polls one batch of at most `max` completions into a new `Vec`: what wrappers that hand
    /// out owned completions do. Empty when the CQ is.
    pub fn poll_vec(&mut self, max: usize) -> Result<Vec<OwnedCompletion>, CheckedError> {
        let mut out = Vec::with_capacity(max);
        let Some(mut batch) = self.start_poll()? else {
            return Ok(out);
        };
        loop {
            out.push(batch.owned());
            if out.len() == max || !batch.next_poll()? {
                break;
            }
        }
        Ok(out)
    }
}

/// `ENOENT` (Linux), which `ibv_start_poll`/`ibv_next_poll` return when there is no completion.
const ENOENT: c_int = 2;

/// An open batch of a [`CheckedCq`]: `ibv_end_poll` on drop.
pub struct CheckedBatch<'a> {
    cq: &'a CheckedCq,
}

impl CheckedBatch<'_> {
    #[inline]
    fn has(&self, flag: u64, field: &'static str) -> Result<(), CheckedError> {
        if self.cq.wc_flags & flag != 0 {
            Ok(())
        } else {
            Err(CheckedError::NotRequested(field))
        }
    }

    /// `ibv_next_poll`: `false` when there is no further completion.
    #[inline]
    pub fn next_poll(&mut self) -> Result<bool, CheckedError> {
        // SAFETY: inside the batch this guard opened.
        match unsafe { sys::ibv_next_poll(self.cq.cq) } {
            0 => Ok(true),
            ENOENT => Ok(false),
            e => Err(CheckedError::Poll(e)),
        }
    }

    /// `wr_id`.
    #[inline]
    pub fn wr_id(&self) -> u64 {
        // SAFETY: inside a batch, the field belongs to the current completion.
        unsafe { (*self.cq.cq).wr_id }
    }

    /// `status`.
    #[inline]
    pub fn status(&self) -> u32 {
        // SAFETY: as for wr_id.
        unsafe { (*self.cq.cq).status }
    }

    /// `ibv_wc_read_opcode`.
    #[inline]
    pub fn opcode(&self) -> u32 {
        // SAFETY: inside a batch; rdma-sys unwraps the function pointer.
        unsafe { sys::ibv_wc_read_opcode(self.cq.cq) }
    }

    /// `ibv_wc_read_vendor_err`.
    #[inline]
    pub fn vendor_err(&self) -> u32 {
        // SAFETY: as for opcode.
        unsafe { sys::ibv_wc_read_vendor_err(self.cq.cq) }
    }

    /// `ibv_wc_read_byte_len`, if the CQ has BYTE_LEN.
    #[inline]
    pub fn byte_len(&self) -> Result<u32, CheckedError> {
        self.has(flags::BYTE_LEN, "byte_len")?;
        // SAFETY: inside a batch, and the CQ was created with the field's flag.
        Ok(unsafe { sys::ibv_wc_read_byte_len(self.cq.cq) })
    }

    /// `ibv_wc_read_imm_data` in host order if the completion has IBV_WC_WITH_IMM, if the CQ has
    /// IMM.
    #[inline]
    pub fn imm_data(&self) -> Result<Option<u32>, CheckedError> {
        self.has(flags::IMM, "imm_data")?;
        // SAFETY: as for byte_len.
        unsafe {
            Ok((sys::ibv_wc_read_wc_flags(self.cq.cq) & WC_WITH_IMM != 0)
                .then(|| u32::from_be(sys::ibv_wc_read_imm_data(self.cq.cq))))
        }
    }

    /// `ibv_wc_read_qp_num`, if the CQ has QP_NUM.
    #[inline]
    pub fn qp_num(&self) -> Result<u32, CheckedError> {
        self.has(flags::QP_NUM, "qp_num")?;
        // SAFETY: as for byte_len.
        Ok(unsafe { sys::ibv_wc_read_qp_num(self.cq.cq) })
    }

    /// `ibv_wc_read_src_qp`, if the CQ has SRC_QP.
    #[inline]
    pub fn src_qp(&self) -> Result<u32, CheckedError> {
        self.has(flags::SRC_QP, "src_qp")?;
        // SAFETY: as for byte_len.
        Ok(unsafe { sys::ibv_wc_read_src_qp(self.cq.cq) })
    }

    /// The current completion as an owned value: the fields the CQ has, the success fields only
    /// on success.
    #[inline]
    pub fn owned(&self) -> OwnedCompletion {
        let (wr_id, status) = (self.wr_id(), self.status());
        if status == sys::ibv_wc_status::IBV_WC_SUCCESS {
            OwnedCompletion {
                wr_id,
                status,
                opcode: self.opcode(),
                vendor_err: 0,
                byte_len: self.byte_len().ok(),
                imm_data: self.imm_data().ok().flatten(),
                qp_num: self.qp_num().ok(),
                src_qp: self.src_qp().ok(),
            }
        } else {
            OwnedCompletion {
                wr_id,
                status,
                opcode: 0,
                vendor_err: self.vendor_err(),
                byte_len: None,
                imm_data: None,
                qp_num: None,
                src_qp: None,
            }
        }
    }
}

impl Drop for CheckedBatch<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: ends the batch start_poll opened, once.
        unsafe { sys::ibv_end_poll(self.cq.cq) }
    }
}

/// A completion copied out of the CQ, as Vec-returning wrappers hand it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnedCompletion {
    /// wr_id
    pub wr_id: u64,
    /// status
    pub status: u32,
    /// opcode (0 on failure)
    pub opcode: u32,
    /// vendor_err (0 on success)
    pub vendor_err: u32,
    /// byte_len, if the CQ has it
    pub byte_len: Option<u32>,
    /// imm_data in host order, if the CQ has it and the completion carries it
    pub imm_data: Option<u32>,
    /// qp_num, if the CQ has it
    pub qp_num: Option<u32>,
    /// src_qp, if the CQ has it
    pub src_qp: Option<u32>,
}

/// Variant (c): the runtime-checked wrapper; a flag missing from the CQ is an error.
#[no_mangle]
#[inline(never)]
pub fn drain_checked(cq: &mut CheckedCq) -> Result<u64, CheckedError> {
    let mut h = CHECKSUM_SEED;
    while let Some(mut batch) = cq.start_poll()? {
        let mut taken = 0;
        loop {
            h = if batch.status() == sys::ibv_wc_status::IBV_WC_SUCCESS {
                fold_success(
                    h,
                    batch.wr_id(),
                    batch.opcode(),
                    batch.byte_len()?,
                    batch.imm_data()?.unwrap_or(0),
                    batch.qp_num()?,
                    batch.src_qp()?,
                )
            } else {
                fold_error(h, batch.wr_id(), batch.status(), batch.vendor_err())
            };
            taken += 1;
            if taken == MAX_BATCH || !batch.next_poll()? {
                break;
            }
        } // the batch drops: ibv_end_poll
    }
    Ok(h)
}

/// Variant (d): a `Vec` of owned completions per batch, folded by the caller.
#[no_mangle]
#[inline(never)]
pub fn drain_vec(cq: &mut CheckedCq) -> Result<u64, CheckedError> {
    let mut h = CHECKSUM_SEED;
    loop {
        let batch = cq.poll_vec(MAX_BATCH)?;
        if batch.is_empty() {
            break;
        }
        for c in &batch {
            h = if c.status == sys::ibv_wc_status::IBV_WC_SUCCESS {
                fold_success(
                    h,
                    c.wr_id,
                    c.opcode,
                    c.byte_len.unwrap_or(0),
                    c.imm_data.unwrap_or(0),
                    c.qp_num.unwrap_or(0),
                    c.src_qp.unwrap_or(0),
                )
            } else {
                fold_error(h, c.wr_id, c.status, c.vendor_err)
            };
        }
    }
    Ok(h)
}

// ---------------------------------------------------------------------------------------------
// (e) The legacy verb.

/// Variant (e): `ibv_poll_cq` (rdma-sys) on the CQ's `ibv_cq` into a stack array of
/// [`MAX_BATCH`] entries, until it returns 0.
#[no_mangle]
#[inline(never)]
pub fn drain_poll_cq(cq: &mut BenchCq<'_>) -> Result<u64, c_int> {
    // SAFETY: ibv_cq_ex_to_cq is a cast of a live pointer.
    let raw = unsafe { sys::ibv_cq_ex_to_cq(cq.as_raw()) };
    let mut wc = [const { MaybeUninit::<sys::ibv_wc>::uninit() }; MAX_BATCH];
    let mut h = CHECKSUM_SEED;
    loop {
        // SAFETY: a live CQ held exclusively; `wc` has room for MAX_BATCH entries.
        let n = unsafe { sys::ibv_poll_cq(raw, MAX_BATCH as c_int, wc.as_mut_ptr().cast()) };
        if n < 0 {
            return Err(-n);
        }
        if n == 0 {
            break;
        }
        for w in &wc[..n as usize] {
            // SAFETY: ibv_poll_cq wrote the first `n` entries.
            let w = unsafe { w.assume_init_ref() };
            h = if w.status == sys::ibv_wc_status::IBV_WC_SUCCESS {
                let imm = if w.wc_flags & WC_WITH_IMM != 0 {
                    // SAFETY: with IBV_WC_WITH_IMM the union holds the immediate data.
                    u32::from_be(unsafe { w.imm_data_invalidated_rkey_union.imm_data })
                } else {
                    0
                };
                fold_success(h, w.wr_id, w.opcode, w.byte_len, imm, w.qp_num, w.src_qp)
            } else {
                fold_error(h, w.wr_id, w.status, w.vendor_err)
            };
        }
    }
    Ok(h)
}

// ---------------------------------------------------------------------------------------------
// The harness's view.

/// The five variants, in the table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// (a) [`drain_generated`]
    Generated,
    /// (b) `c_drain`
    C,
    /// (c) [`drain_checked`]
    Checked,
    /// (d) [`drain_vec`]
    Vec,
    /// (e) [`drain_poll_cq`]
    PollCq,
}

impl Variant {
    /// All of them.
    pub const ALL: [Variant; 5] = [
        Variant::Generated,
        Variant::C,
        Variant::Checked,
        Variant::Vec,
        Variant::PollCq,
    ];

    /// The name on the command line and in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Generated => "generated",
            Variant::C => "c",
            Variant::Checked => "checked",
            Variant::Vec => "vec",
            Variant::PollCq => "poll_cq",
        }
    }

    /// The unmangled function that does the draining (what callgrind collects inside).
    pub fn symbol(self) -> &'static str {
        match self {
            Variant::Generated => "drain_generated",
            Variant::C => "c_drain",
            Variant::Checked => "drain_checked",
            Variant::Vec => "drain_vec",
            Variant::PollCq => "drain_poll_cq",
        }
    }

    /// The variant named `name`.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Drains `cq` with this variant; the checksum. Panics if polling fails.
    #[inline]
    pub fn drain(self, cq: &mut BenchCq<'_>) -> u64 {
        match self {
            Variant::Generated => drain_generated(cq).expect("drain_generated"),
            Variant::C => drain_c(cq).expect("c_drain"),
            Variant::Checked => {
                // SAFETY: `cq` is live, created with these flags, and held exclusively while
                // the wrapper lives.
                let mut w = unsafe { CheckedCq::from_raw(cq.as_raw(), cq.wc_flags()) };
                drain_checked(&mut w).expect("drain_checked")
            }
            Variant::Vec => {
                // SAFETY: as above.
                let mut w = unsafe { CheckedCq::from_raw(cq.as_raw(), cq.wc_flags()) };
                drain_vec(&mut w).expect("drain_vec")
            }
            Variant::PollCq => drain_poll_cq(cq).expect("drain_poll_cq"),
        }
    }
}

/// Checks that every variant drains a fill of `workload` completely, to its checksum.
pub fn check_all(cq: &mut BenchCq<'_>, workload: &Workload) {
    for v in Variant::ALL {
        workload.fill(cq);
        let got = v.drain(cq);
        assert_eq!(
            got,
            workload.checksum(),
            "variant {} gave checksum {got:#x}, expected {:#x}",
            v.name(),
            workload.checksum()
        );
        assert_eq!(
            cq.poll_batch(|b| b.completion().wr_id())
                .expect("poll_batch"),
            None,
            "variant {} left completions in the CQ",
            v.name()
        );
    }
}
