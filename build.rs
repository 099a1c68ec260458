//! Measures the C layout of the libibverbs structures whose Rust mirrors are written by hand
//! (rdma-sys's `ibv_wc` and `ibv_gid`, and the crate's own `ibv_async_event` mirror), the
//! structures the software device fills, and
//! `verbs_context`, which the crate's own `verbs_get_ctx` reads, and librdmacm's structures that
//! the software device's connection manager fills and the crate reads (<rdma/rdma_cma.h>; rdma-sys
//! writes `rdma_cm_event`, `rdma_addr` and `rdma_ud_param` by hand), so that
//! `src/ffi/` can assert at compile time that each mirror has the C size, alignment and field
//! offsets.
//!
//! Nothing compiled here runs: a probe is compiled to an object file for the target, with the
//! target's C compiler (the `cc` crate: `CC`, `CFLAGS`, `CC_<target>`, cross toolchains), each
//! measured value the size of a symbol (`char typed_verbs_layout_SIZEOF_ibv_wc[sizeof(struct
//! ibv_wc) + 1]`: one more, so that no array is empty), and the sizes are read back from the
//! object file's symbol table (the `object` crate). Cross-compiling works so.
//!
//! <infiniband/verbs.h> and <rdma/rdma_cma.h> are found where pkg-config's `libibverbs.pc` and
//! `librdmacm.pc` say, else on the compiler's
//! default include path. On docs.rs (`DOCS_RS` set) without the headers, the layout is the one
//! checked in for x86_64 Linux (`c_layout/x86_64-linux.rs`), so the documentation builds.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};

// The Markdown links of the guide, found as tests/docs.rs finds them.
#[path = "build/md_links.rs"]
mod md_links;

/// The prefix of every measured symbol.
const PREFIX: &str = "typed_verbs_layout_";

const PROBE: &str = r#"
#include <stddef.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
/* Each value is the size of an array minus one (no array is empty), read from the symbol table. */
#define V(name, value) char typed_verbs_layout_##name[(value) + 1] = {0};
#define S(t) V(SIZEOF_##t, sizeof(struct t)) V(ALIGNOF_##t, _Alignof(struct t))
#define O(t, f) V(OFFSETOF_##t##_##f, offsetof(struct t, f))
#define P(t, name, path) V(OFFSETOF_##t##_##name, offsetof(struct t, path))
/* libibverbs' struct verbs_qp (driver.h, not installed), which the software QP begins as. */
struct verbs_qp {
	union { struct ibv_qp qp; struct ibv_qp_ex qp_ex; };
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};
S(ibv_wc) O(ibv_wc, wr_id) O(ibv_wc, status) O(ibv_wc, opcode) O(ibv_wc, vendor_err)
O(ibv_wc, byte_len) O(ibv_wc, imm_data) O(ibv_wc, qp_num) O(ibv_wc, src_qp) O(ibv_wc, wc_flags)
O(ibv_wc, pkey_index) O(ibv_wc, slid) O(ibv_wc, sl) O(ibv_wc, dlid_path_bits)
V(SIZEOF_ibv_gid, sizeof(union ibv_gid)) V(ALIGNOF_ibv_gid, _Alignof(union ibv_gid))
S(ibv_cq_ex) O(ibv_cq_ex, status) O(ibv_cq_ex, wr_id) O(ibv_cq_ex, start_poll)
O(ibv_cq_ex, read_completion_wallclock_ns)
S(ibv_qp_ex) O(ibv_qp_ex, qp_base) O(ibv_qp_ex, comp_mask) O(ibv_qp_ex, wr_id) O(ibv_qp_ex, wr_flags)
O(ibv_qp_ex, wr_atomic_cmp_swp) O(ibv_qp_ex, wr_atomic_fetch_add) O(ibv_qp_ex, wr_bind_mw)
O(ibv_qp_ex, wr_local_inv) O(ibv_qp_ex, wr_rdma_read) O(ibv_qp_ex, wr_rdma_write)
O(ibv_qp_ex, wr_rdma_write_imm) O(ibv_qp_ex, wr_send) O(ibv_qp_ex, wr_send_imm)
O(ibv_qp_ex, wr_send_inv) O(ibv_qp_ex, wr_send_tso) O(ibv_qp_ex, wr_set_ud_addr)
O(ibv_qp_ex, wr_set_xrc_srqn) O(ibv_qp_ex, wr_set_inline_data) O(ibv_qp_ex, wr_set_inline_data_list)
O(ibv_qp_ex, wr_set_sge) O(ibv_qp_ex, wr_set_sge_list) O(ibv_qp_ex, wr_start)
O(ibv_qp_ex, wr_complete) O(ibv_qp_ex, wr_abort) O(ibv_qp_ex, wr_atomic_write)
S(ibv_qp_init_attr_ex) O(ibv_qp_init_attr_ex, qp_context) O(ibv_qp_init_attr_ex, send_cq)
O(ibv_qp_init_attr_ex, recv_cq) O(ibv_qp_init_attr_ex, srq) O(ibv_qp_init_attr_ex, cap)
O(ibv_qp_init_attr_ex, qp_type) O(ibv_qp_init_attr_ex, sq_sig_all) O(ibv_qp_init_attr_ex, comp_mask)
O(ibv_qp_init_attr_ex, pd) O(ibv_qp_init_attr_ex, create_flags) O(ibv_qp_init_attr_ex, send_ops_flags)
O(ibv_qp_init_attr, qp_context) O(ibv_qp_init_attr, send_cq) O(ibv_qp_init_attr, recv_cq)
O(ibv_qp_init_attr, srq) O(ibv_qp_init_attr, cap) O(ibv_qp_init_attr, qp_type)
O(ibv_qp_init_attr, sq_sig_all)
S(ibv_data_buf) O(ibv_data_buf, addr) O(ibv_data_buf, length)
S(verbs_qp) O(verbs_qp, qp) O(verbs_qp, qp_ex) O(verbs_qp, comp_mask) O(verbs_qp, xrcd)
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
V(SIZEOF_ibv_event_type, sizeof(enum ibv_event_type))
S(verbs_context) O(verbs_context, sz) O(verbs_context, context) O(verbs_context, create_cq_ex)
O(verbs_context, alloc_parent_domain) O(verbs_context, query_port)
S(rdma_ib_addr) O(rdma_ib_addr, sgid) O(rdma_ib_addr, dgid) O(rdma_ib_addr, pkey)
S(rdma_addr) O(rdma_addr, src_storage) O(rdma_addr, dst_storage) O(rdma_addr, addr)
S(rdma_route) O(rdma_route, addr) O(rdma_route, path_rec) O(rdma_route, num_paths)
S(rdma_event_channel) O(rdma_event_channel, fd)
S(rdma_cm_id) O(rdma_cm_id, verbs) O(rdma_cm_id, channel) O(rdma_cm_id, context) O(rdma_cm_id, qp)
O(rdma_cm_id, route) O(rdma_cm_id, ps) O(rdma_cm_id, port_num) O(rdma_cm_id, event)
O(rdma_cm_id, send_cq_channel) O(rdma_cm_id, send_cq) O(rdma_cm_id, recv_cq_channel)
O(rdma_cm_id, recv_cq) O(rdma_cm_id, srq) O(rdma_cm_id, pd) O(rdma_cm_id, qp_type)
S(rdma_conn_param) O(rdma_conn_param, private_data) O(rdma_conn_param, private_data_len)
O(rdma_conn_param, responder_resources) O(rdma_conn_param, initiator_depth)
O(rdma_conn_param, flow_control) O(rdma_conn_param, retry_count) O(rdma_conn_param, rnr_retry_count)
O(rdma_conn_param, srq) O(rdma_conn_param, qp_num)
S(rdma_ud_param) O(rdma_ud_param, private_data) O(rdma_ud_param, private_data_len)
O(rdma_ud_param, ah_attr) O(rdma_ud_param, qp_num) O(rdma_ud_param, qkey)
S(rdma_cm_event) O(rdma_cm_event, id) O(rdma_cm_event, listen_id) O(rdma_cm_event, event)
O(rdma_cm_event, status) O(rdma_cm_event, param)
"#;

/// The layout checked in for docs.rs (x86_64 Linux, rdma-core's headers).
const CHECKED_IN: &str = "c_layout/x86_64-linux.rs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={CHECKED_IN}");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    // `cfg(docsrs)`: the docs.rs build (package.metadata.docs.rs), for `doc(cfg(...))`.
    println!("cargo:rustc-check-cfg=cfg(docsrs)");
    // Set when the layout is the checked-in one rather than measured (ffi.rs's tests).
    println!("cargo:rustc-check-cfg=cfg(typed_verbs_checked_in_layout)");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let layout = match measure(&out) {
        Ok(layout) => layout,
        Err(why) if env::var_os("DOCS_RS").is_some() => {
            let why = why.lines().next().unwrap_or_default();
            println!(
                "cargo:warning=typed-verbs: using the checked-in x86_64 Linux C layout ({why})"
            );
            println!("cargo:rustc-cfg=typed_verbs_checked_in_layout");
            fs::read_to_string(CHECKED_IN).expect("read the checked-in layout")
        }
        Err(why) => panic!("typed-verbs: {why}"),
    };
    fs::write(out.join("c_layout.rs"), layout).expect("write c_layout.rs");
    guide_pages(&out);
}

/// The guide's pages (`docs/*.md`) as rustdoc renders them: `typed_verbs::guide` (src/guide.rs)
/// makes each page a module, so a link between pages (`testing.md#x`) becomes a link between
/// modules (`../testing/index.html#x`), and a link to a file of the package (`../src/x.rs`) a
/// link to its source on docs.rs, at this version. The pages themselves keep the links that work
/// where they are read as files (tests/docs.rs checks those, with the same parser).
fn guide_pages(out: &Path) {
    println!("cargo:rerun-if-changed=docs");
    println!("cargo:rerun-if-changed=build/md_links.rs");
    let version = env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
    let source = format!("https://docs.rs/crate/typed-verbs/{version}/source");
    let repository = env::var("CARGO_PKG_REPOSITORY").expect("CARGO_PKG_REPOSITORY");
    // Cargo leaves a folder with a manifest of its own out of the package (another package).
    let in_package = |file: &str| {
        Path::new(file)
            .ancestors()
            .filter(|dir| !dir.as_os_str().is_empty())
            .all(|dir| !dir.join("Cargo.toml").exists())
    };
    let dir = out.join("guide");
    fs::create_dir_all(&dir).expect("create OUT_DIR/guide");
    for entry in fs::read_dir("docs").expect("read docs/") {
        let path = entry.expect("docs/ entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".md") {
            continue;
        }
        let text = fs::read_to_string(&path).expect("read a guide page");
        let fenced = md_links::fenced_lines(&text);
        let mut page = String::with_capacity(text.len());
        for (line, fenced) in text.lines().zip(fenced) {
            let mut line = line.to_string();
            if !fenced {
                let ranges = md_links::link_targets(&line);
                for range in ranges.into_iter().rev() {
                    let target = md_links::guide_link(
                        &line[range.clone()],
                        name,
                        &source,
                        &repository,
                        &in_package,
                    );
                    line.replace_range(range, &target);
                }
            }
            page.push_str(&line);
            page.push('\n');
        }
        fs::write(dir.join(name), page).expect("write a guide page");
    }
}

/// Compiles the probe for the target and reads the measured values from its symbol table: the
/// contents of `c_layout.rs`.
fn measure(out: &Path) -> Result<String, String> {
    let src = out.join("c_layout.c");
    let obj = out.join("c_layout.o");
    fs::write(&src, PROBE).map_err(|e| format!("cannot write the layout probe: {e}"))?;

    // Nothing is linked: cc's cargo metadata here is the `rerun-if-env-changed` of each variable
    // it reads (CC, CFLAGS, CC_<target>, ...).
    let mut build = cc::Build::new();
    build.warnings(false);
    // libibverbs.pc's include directories, when pkg-config knows the library; otherwise (no .pc
    // file, no pkg-config, a cross build pkg-config refuses) the compiler's default paths.
    // rdma-sys links the library: this probe only reads the headers.
    for name in ["libibverbs", "librdmacm"] {
        if let Ok(lib) = pkg_config::Config::new()
            .cargo_metadata(false)
            .env_metadata(true)
            .probe(name)
        {
            build.includes(lib.include_paths);
        }
    }
    let compiler = build
        .try_get_compiler()
        .map_err(|e| format!("no C compiler for the target: {e}"))?;
    let mut cmd = compiler.to_command();
    // The symbol sizes are what is read: no link-time-optimisation object without them. Last on
    // the command line, after CFLAGS (cc puts the flags of the environment after the build's
    // own), so that a distribution's `CFLAGS=-flto=auto` does not win.
    if build.is_flag_supported("-fno-lto").unwrap_or(false) {
        cmd.arg("-fno-lto");
    }
    // Likewise a sanitizer in CFLAGS: AddressSanitizer may pad each global with a redzone and
    // grow its symbol.
    if build
        .is_flag_supported("-fno-sanitize=all")
        .unwrap_or(false)
    {
        cmd.arg("-fno-sanitize=all");
    }
    cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
    let done = cmd
        .output()
        .map_err(|e| format!("cannot run the C compiler {:?}: {e}", compiler.path()))?;
    if !done.status.success() {
        let stderr = String::from_utf8_lossy(&done.stderr);
        let missing = |h: &str| {
            stderr.contains(&format!("{h}: No such file"))
                || stderr.contains(&format!("'{h}' file not found"))
        };
        let hint = if missing("infiniband/verbs.h") {
            ": <infiniband/verbs.h> is missing; is libibverbs-dev (rdma-core's headers) installed?"
        } else if missing("rdma/rdma_cma.h") {
            ": <rdma/rdma_cma.h> is missing; is librdmacm-dev (rdma-core's headers) installed?"
        } else {
            ""
        };
        return Err(format!(
            "the C layout probe did not compile{hint}\n{cmd:?}\n{stderr}"
        ));
    }
    let data = fs::read(&obj).map_err(|e| format!("cannot read the layout probe's object: {e}"))?;
    read_layout(&data)
}

/// The `pub const NAME: usize = VALUE;` lines of the probe's symbols, in name order.
fn read_layout(data: &[u8]) -> Result<String, String> {
    use object::{Object, ObjectSymbol};
    let file = object::File::parse(data)
        .map_err(|e| format!("cannot parse the layout probe's object file: {e}"))?;
    let mut values = Vec::new();
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        // Some formats prefix C names with an underscore.
        let Some(name) = name.trim_start_matches('_').strip_prefix(PREFIX) else {
            continue;
        };
        let size = sym.size();
        if size == 0 {
            return Err(format!(
                "the layout probe's object file records no symbol sizes ({name}); \
                 the layout is read from ELF symbol sizes"
            ));
        }
        values.push((name.to_owned(), size - 1));
    }
    values.sort();
    if values.is_empty() {
        return Err("the layout probe's object file has none of its symbols".into());
    }
    let mut text = String::from(
        "// The C layout, measured by build.rs from <infiniband/verbs.h> and <rdma/rdma_cma.h>.\n",
    );
    for (name, value) in values {
        text.push_str(&format!("pub const {name}: usize = {value};\n"));
    }
    Ok(text)
}
