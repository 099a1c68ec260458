//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse, with the set-up they share. The run-time ones print one `PEER-VERDICT` line,
//! or `SETUP-FAILED` when a step before the misuse fails (then there is no verdict).
use std::error::Error;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sideway::ibverbs::address::AddressHandleAttribute;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::device::DeviceList;
use sideway::ibverbs::device_context::DeviceContext;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{BasicQueuePair, QueuePair, QueuePairAttribute, QueuePairState};
use sideway::ibverbs::AccessFlags;

/// The result of a set-up helper.
pub type Res<T> = Result<T, Box<dyn Error>>;

/// Why a program stopped before its verdict.
pub enum Failure {
    /// A step before the misuse failed: the program has no verdict.
    Setup(String),
    /// The step under test returned an error: its label, then the error.
    Misuse(String),
}

/// An error that no step labelled as the misuse is a set-up failure.
impl<E: Into<Box<dyn Error>>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Setup(chain(&*e.into()))
    }
}

/// The result of a program: its verdict and what happened, or why it stopped.
pub type Outcome<T> = Result<T, Failure>;

/// Labels the step of a result: `setup` (a failure means no verdict) or `misuse` (the step under
/// test: its error is the verdict's evidence, after the label).
pub trait Step<T> {
    fn setup(self, step: &str) -> Outcome<T>;
    fn misuse(self, step: &str) -> Outcome<T>;
}

impl<T, E: Into<Box<dyn Error>>> Step<T> for Result<T, E> {
    fn setup(self, step: &str) -> Outcome<T> {
        self.map_err(|e| Failure::Setup(format!("{step}: {}", chain(&*e.into()))))
    }
    fn misuse(self, step: &str) -> Outcome<T> {
        self.map_err(|e| Failure::Misuse(format!("{step}: {}", chain(&*e.into()))))
    }
}

/// The error with its sources (a wrapper's message alone may hide the errno).
pub fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}

/// `e` with the step it comes from in front.
fn label(step: &str, e: impl Into<Box<dyn Error>>) -> Box<dyn Error> {
    format!("{step}: {}", chain(&*e.into())).into()
}

/// The first RDMA device, and a PD on it.
pub fn open() -> Res<(Arc<DeviceContext>, Arc<ProtectionDomain>)> {
    let devices = DeviceList::new().map_err(|e| label("DeviceList", e))?;
    let ctx = devices
        .iter()
        .next()
        .ok_or("no RDMA device")?
        .open()
        .map_err(|e| label("open", e))?;
    let pd = ctx.alloc_pd().map_err(|e| label("alloc_pd", e))?;
    Ok((ctx, pd))
}

/// An RC QP on `cq` with room for 8 requests of `max_sge` SGEs each way.
pub fn rc_qp(
    pd: &Arc<ProtectionDomain>,
    cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<BasicQueuePair> {
    rc_qp_on(pd, cq, cq, max_sge)
}

/// An RC QP with its sends on `send_cq` and its receives on `recv_cq`.
pub fn rc_qp_on(
    pd: &Arc<ProtectionDomain>,
    send_cq: &GenericCompletionQueue,
    recv_cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<BasicQueuePair> {
    let mut builder = pd.create_qp_builder();
    builder
        .setup_max_send_wr(8)
        .setup_max_recv_wr(8)
        .setup_max_send_sge(max_sge)
        .setup_max_recv_sge(max_sge);
    builder
        .setup_send_cq(send_cq.clone())
        .setup_recv_cq(recv_cq.clone())
        .build()
        .map_err(|e| label("create_qp", e))
}

/// RESET -> INIT, with remote write allowed.
pub fn to_init(qp: &mut impl QueuePair) -> Res<()> {
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::Init)
        .setup_pkey_index(0)
        .setup_port(1);
    attr.setup_access_flags(AccessFlags::LocalWrite | AccessFlags::RemoteWrite);
    qp.modify(&attr).map_err(|e| label("INIT", e))
}

/// INIT -> RTR towards QP `dest` on the same port (GID index 1: rxe's RoCE v2 GID).
pub fn to_rtr(ctx: &DeviceContext, qp: &mut impl QueuePair, dest: u32) -> Res<()> {
    let port = ctx.query_port(1).map_err(|e| label("query_port", e))?;
    let gids = ctx
        .query_gid_table()
        .map_err(|e| label("query_gid_table", e))?;
    let gid = gids.get(1).ok_or("query_gid_table: no GID index 1")?.gid();
    let mut av = AddressHandleAttribute::new();
    av.setup_dest_lid(port.lid())
        .setup_port(1)
        .setup_grh_src_gid_index(1)
        .setup_grh_dest_gid(&gid);
    av.setup_grh_hop_limit(64);
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::ReadyToReceive)
        .setup_path_mtu(port.active_mtu())
        .setup_dest_qp_num(dest);
    attr.setup_rq_psn(0)
        .setup_max_dest_read_atomic(1)
        .setup_min_rnr_timer(12)
        .setup_address_vector(&av);
    qp.modify(&attr).map_err(|e| label("RTR", e))
}

/// RTR -> RTS with the `timeout` and `retry_cnt` given (the error unlabelled: the caller says
/// whether this step is the misuse).
pub fn to_rts(qp: &mut impl QueuePair, timeout: u8, retry_cnt: u8) -> Res<()> {
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::ReadyToSend)
        .setup_sq_psn(0)
        .setup_timeout(timeout);
    attr.setup_retry_cnt(retry_cnt)
        .setup_rnr_retry(7)
        .setup_max_read_atomic(1);
    Ok(qp.modify(&attr)?)
}

/// Two RC QPs on `cq`, connected to each other.
pub fn pair(
    ctx: &DeviceContext,
    pd: &Arc<ProtectionDomain>,
    cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<(BasicQueuePair, BasicQueuePair)> {
    pair_on(ctx, pd, cq, cq, max_sge)
}

/// Two RC QPs with their sends on `send_cq` and their receives on `recv_cq`, connected to each
/// other.
pub fn pair_on(
    ctx: &DeviceContext,
    pd: &Arc<ProtectionDomain>,
    send_cq: &GenericCompletionQueue,
    recv_cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<(BasicQueuePair, BasicQueuePair)> {
    let mut a = rc_qp_on(pd, send_cq, recv_cq, max_sge)?;
    let mut b = rc_qp_on(pd, send_cq, recv_cq, max_sge)?;
    let (qa, qb) = (a.qp_number(), b.qp_number());
    to_init(&mut a)?;
    to_init(&mut b)?;
    to_rtr(ctx, &mut a, qb)?;
    to_rtr(ctx, &mut b, qa)?;
    to_rts(&mut a, 14, 7).map_err(|e| label("RTS", e))?;
    to_rts(&mut b, 14, 7).map_err(|e| label("RTS", e))?;
    Ok((a, b))
}

/// The `wr_id` and status of `n` completions of `cq`, polled for 5 s at most.
pub fn wait(cq: &GenericCompletionQueue, n: usize) -> Res<Vec<(u64, u32)>> {
    let (start, mut got) = (Instant::now(), Vec::new());
    while got.len() < n {
        if let Ok(poller) = cq.start_poll() {
            got.extend(poller.map(|wc| (wc.wr_id(), wc.status())));
        } else if start.elapsed() > Duration::from_secs(5) {
            return Err(format!("{} of {n} completions within 5 s: {got:?}", got.len()).into());
        }
    }
    Ok(got)
}

/// Prints the program's verdict: `runtime-error` with the step under test and its error, or,
/// when it ran through, the verdict and what happened that it returned; or, when a set-up step
/// failed, `SETUP-FAILED` and that step's error (exit status 3: no verdict).
pub fn report(result: Outcome<(&str, String)>) {
    match result {
        Ok((verdict, what)) => println!("PEER-VERDICT {verdict} {what}"),
        Err(Failure::Misuse(text)) => println!("PEER-VERDICT runtime-error {text}"),
        Err(Failure::Setup(text)) => {
            println!("SETUP-FAILED {text}");
            std::process::exit(3);
        }
    }
}
