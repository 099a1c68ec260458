//! Measures the C layout of the libibverbs structures whose Rust mirrors are written by hand
//! (rdma-sys's `ibv_wc` and `ibv_gid`, and the crate's own `ibv_async_event` mirror), the
//! structures the software device fills, and
//! `verbs_context`, which the crate's own `verbs_get_ctx` reads, so that
//! `src/ffi.rs` can assert at compile time that each mirror has the C size, alignment and field
//! offsets. It compiles and runs a small C program against <infiniband/verbs.h>.

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

const PROBE: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>
#define S(t) printf("pub const SIZEOF_%s: usize = %zu;\npub const ALIGNOF_%s: usize = %zu;\n", #t, sizeof(struct t), #t, _Alignof(struct t));
#define O(t, f) printf("pub const OFFSETOF_%s_%s: usize = %zu;\n", #t, #f, offsetof(struct t, f));
#define P(t, name, path) printf("pub const OFFSETOF_%s_%s: usize = %zu;\n", #t, #name, offsetof(struct t, path));
int main(void) {
    S(ibv_wc) O(ibv_wc, wr_id) O(ibv_wc, status) O(ibv_wc, opcode) O(ibv_wc, vendor_err)
    O(ibv_wc, byte_len) O(ibv_wc, imm_data) O(ibv_wc, qp_num) O(ibv_wc, src_qp) O(ibv_wc, wc_flags)
    O(ibv_wc, pkey_index) O(ibv_wc, slid) O(ibv_wc, sl) O(ibv_wc, dlid_path_bits)
    printf("pub const SIZEOF_ibv_gid: usize = %zu;\npub const ALIGNOF_ibv_gid: usize = %zu;\n",
           sizeof(union ibv_gid), _Alignof(union ibv_gid));
    S(ibv_cq_ex) O(ibv_cq_ex, status) O(ibv_cq_ex, wr_id) O(ibv_cq_ex, start_poll)
    O(ibv_cq_ex, read_completion_wallclock_ns)
    S(ibv_cq) S(ibv_context) S(ibv_qp) S(ibv_srq) S(ibv_pd) S(ibv_comp_channel)
    S(ibv_qp_init_attr) S(ibv_srq_init_attr) S(ibv_cq_init_attr_ex) S(ibv_device_attr)
    S(ibv_port_attr)
    S(ibv_global_route) O(ibv_global_route, dgid) O(ibv_global_route, flow_label)
    O(ibv_global_route, sgid_index) O(ibv_global_route, hop_limit) O(ibv_global_route, traffic_class)
    S(ibv_ah_attr) O(ibv_ah_attr, grh) O(ibv_ah_attr, dlid) O(ibv_ah_attr, sl) O(ibv_ah_attr, src_path_bits)
    O(ibv_ah_attr, static_rate) O(ibv_ah_attr, is_global) O(ibv_ah_attr, port_num)
    S(ibv_qp_attr) O(ibv_qp_attr, ah_attr) O(ibv_qp_attr, pkey_index) O(ibv_qp_attr, port_num)
    O(ibv_qp_attr, rate_limit)
    S(ibv_send_wr) O(ibv_send_wr, wr_id) O(ibv_send_wr, next) O(ibv_send_wr, sg_list)
    O(ibv_send_wr, num_sge) O(ibv_send_wr, opcode) O(ibv_send_wr, send_flags) O(ibv_send_wr, imm_data)
    O(ibv_send_wr, wr) O(ibv_send_wr, qp_type) O(ibv_send_wr, bind_mw)
    P(ibv_send_wr, rdma_remote_addr, wr.rdma.remote_addr) P(ibv_send_wr, rdma_rkey, wr.rdma.rkey) P(ibv_send_wr, atomic_compare_add, wr.atomic.compare_add)
    P(ibv_send_wr, atomic_swap, wr.atomic.swap) P(ibv_send_wr, atomic_rkey, wr.atomic.rkey) P(ibv_send_wr, ud_ah, wr.ud.ah)
    P(ibv_send_wr, ud_remote_qpn, wr.ud.remote_qpn) P(ibv_send_wr, ud_remote_qkey, wr.ud.remote_qkey)
    S(ibv_recv_wr) O(ibv_recv_wr, next) O(ibv_recv_wr, sg_list) O(ibv_recv_wr, num_sge)
    S(ibv_sge) O(ibv_sge, addr) O(ibv_sge, length) O(ibv_sge, lkey)
    S(ibv_async_event) O(ibv_async_event, element) O(ibv_async_event, event_type)
    printf("pub const SIZEOF_ibv_event_type: usize = %zu;\n", sizeof(enum ibv_event_type));
    S(verbs_context) O(verbs_context, sz) O(verbs_context, context) O(verbs_context, create_cq_ex)
    O(verbs_context, alloc_parent_domain) O(verbs_context, query_port)
    return 0;
}
"#;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let src = out.join("c_layout.c");
    let exe = out.join("c_layout");
    fs::write(&src, PROBE).expect("write the layout probe");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("typed-verbs: cannot run the C compiler {cc:?}: {e}"));
    assert!(
        status.success(),
        "typed-verbs: the C layout probe did not compile; is libibverbs-dev installed?"
    );
    let printed = Command::new(&exe).output().expect("run the layout probe");
    assert!(
        printed.status.success(),
        "typed-verbs: the C layout probe failed"
    );
    fs::write(out.join("c_layout.rs"), printed.stdout).expect("write c_layout.rs");
}
