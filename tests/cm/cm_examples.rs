//! The rdma_cm examples, rdma-core's programs on the typed API (examples/rping.rs,
//! examples/ucmatose.rs, examples/udaddy.rs, and examples/cm_pingpong.rs), run as programs: `--self` (server and client on
//! two threads of one process) on the software device, their output checked line by line
//! against what rdma-core's programs print; and their failures as rdma-core's report them (a
//! connect nobody listens to, options they refuse). The VM lane runs them against rdmacm-utils
//! on rxe0 (scripts/rxe-lane.sh).
//!
//! The examples are built with cargo first (`cargo build --example ...`); where there is no
//! cargo (the test binaries in the VM) each test prints a SKIP line. Every run is bounded.

use crate::common;
use common::skip;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one run may take.
const LIMIT: Duration = Duration::from_secs(120);

/// The example `name`, built; `None` (with a SKIP line) where cargo is not there.
fn example(test: &str, name: &str) -> Option<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if !manifest.join("Cargo.toml").exists() {
        skip(
            test,
            "whole test: no source tree to build the examples from",
        );
        return None;
    }
    // With this binary's optional features: a build with others would replace the examples
    // another step built and runs (the sanitizer lane's helgrind runs its `valgrind` build).
    let features: Vec<&str> = [
        ("tokio", cfg!(feature = "tokio")),
        ("valgrind", cfg!(feature = "valgrind")),
    ]
    .iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect();
    let built = Command::new(&cargo)
        .args(["build", "--quiet", "--example", name])
        .args(["--features", &features.join(",")])
        .current_dir(&manifest)
        .status();
    match built {
        Ok(s) => assert!(s.success(), "cargo build --example {name}: {s}"),
        Err(e) => {
            skip(test, format!("whole test: cannot run cargo: {e}"));
            return None;
        }
    }
    // The test binary is target/<profile>/deps/<name>-<hash>; examples are beside deps.
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let path = dir.join("examples").join(name);
    assert!(path.exists(), "{} was built", path.display());
    Some(path)
}

/// Runs `prog args` on the test device (sw0 unless `TYPED_VERBS_DEVICE` names one), killing it
/// after `LIMIT`.
fn run(prog: &PathBuf, args: &[&str]) -> Output {
    run_env(prog, args, &[])
}

/// [`run`] with the variables `env` set.
fn run_env(prog: &PathBuf, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(prog);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.envs(env.iter().copied());
    if std::env::var_os("TYPED_VERBS_DEVICE").is_none() {
        cmd.env("TYPED_VERBS_DEVICE", "sw0");
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{} {args:?} did not finish in {LIMIT:?}:\n{}\n{}",
                prog.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn lines(b: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(b)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Runs an example's `--self` mode (`all`, its arguments), which must succeed and print nothing
/// on stderr; gives the lines its server and its client printed (prefixed `server: ` and
/// `client: ` on stdout), without the prefix.
fn run_self(prog: &PathBuf, all: &[&str]) -> (Vec<String>, Vec<String>) {
    let out = run(prog, all);
    let (stdout, stderr) = (lines(&out.stdout), lines(&out.stderr));
    assert!(
        out.status.success(),
        "{} {all:?}: {:?}\n{stdout:#?}\n{stderr:#?}",
        prog.display(),
        out.status
    );
    assert!(stderr.is_empty(), "{stderr:#?}");
    let side = |p: &str| -> Vec<String> {
        stdout
            .iter()
            .filter_map(|l| l.strip_prefix(p))
            .map(str::to_owned)
            .collect()
    };
    (side("server: "), side("client: "))
}

/// Runs `f` with the path of example `name`, built for the test; with [`example`]'s SKIP line
/// where it cannot be built, nothing.
fn with_example(test: &str, name: &str, f: impl FnOnce(&PathBuf)) {
    if let Some(prog) = example(test, name) {
        f(&prog)
    }
}

/// What one side of a `--self` run prints: its first lines, the lines of its transfers (left
/// out when no message moves), and its last lines.
struct Said<'a> {
    start: &'a [&'a str],
    transfer: &'a [&'a str],
    end: &'a [&'a str],
}

impl<'a> Said<'a> {
    fn lines(&self, moves: bool) -> Vec<&'a str> {
        let transfer = if moves { self.transfer } else { &[] };
        [self.start, transfer, self.end].concat()
    }
}

/// Runs `prog --self -b <the CM address> <base> <args>` ([`run_self`]) for each of `runs`, and
/// asserts what the server and the client printed (no transfer lines where `-C 0` moves no
/// message).
#[track_caller]
fn assert_self_runs(prog: &PathBuf, base: &[&str], runs: &[&[&str]], server: Said, client: Said) {
    let addr = common::cm_addr().to_string();
    for args in runs {
        let mut all = vec!["--self", "-b", &addr];
        all.extend_from_slice(base);
        all.extend_from_slice(args);
        let (got_server, got_client) = run_self(prog, &all);
        let moves = !args.contains(&"0");
        assert_eq!(got_server, server.lines(moves), "{all:?}");
        assert_eq!(got_client, client.lines(moves), "{all:?}");
    }
}

/// The text of ping `i` of `size` bytes, as rping's client writes it (without its NUL).
fn ping_text(i: u32, size: usize) -> String {
    let mut t = format!("rdma-ping-{i}: ").into_bytes();
    let mut c = 65 + (i % 58) as u8;
    while t.len() < size - 1 {
        t.push(c);
        c = if c == 122 { 65 } else { c + 1 };
    }
    String::from_utf8(t).unwrap()
}

#[test]
fn rping_self_reads_echoes_and_validates_every_ping() {
    with_example("rping_self", "rping", |rping| {
        let addr = common::cm_addr().to_string();
        for (count, size) in [(5u32, 64usize), (3, 26), (2, 5000)] {
            let (c, s) = (count.to_string(), size.to_string());
            let out = run(
                rping,
                &[
                    "--self", "-a", &addr, "-p", "17174", "-C", &c, "-S", &s, "-v", "-V",
                ],
            );
            let (stdout, stderr) = (lines(&out.stdout), lines(&out.stderr));
            assert!(
                out.status.success(),
                "rping --self -C {c} -S {s}: {:?}\n{stdout:#?}\n{stderr:#?}",
                out.status
            );
            let client: Vec<_> = stdout
                .iter()
                .filter(|l| l.starts_with("client: "))
                .cloned()
                .collect();
            let server: Vec<_> = stdout
                .iter()
                .filter(|l| l.starts_with("server: "))
                .cloned()
                .collect();
            let want_client: Vec<_> = (0..count)
                .map(|i| format!("client: ping data: {}", ping_text(i, size)))
                .collect();
            let want_server: Vec<_> = (0..count)
                .map(|i| format!("server: server ping data: {}", ping_text(i, size)))
                .collect();
            assert_eq!(client, want_client);
            assert_eq!(server, want_server);
            // The server sees the client's disconnect and ends its loop as rping's does.
            assert!(
                stderr.contains(&"server: server DISCONNECT EVENT...".to_owned()),
                "{stderr:#?}"
            );
            assert!(
                stderr.contains(&"server: wait for RDMA_READ_ADV state 10".to_owned()),
                "{stderr:#?}"
            );
        }
    });
}

#[test]
fn rping_refuses_what_rping_refuses_and_reports_a_reject() {
    with_example("rping_refuses", "rping", |rping| {
        // A size out of range: rping's message, EINVAL.
        let out = run(rping, &["-c", "-a", "127.0.0.1", "-S", "10"]);
        assert_eq!(out.status.code(), Some(22));
        assert_eq!(
            lines(&out.stderr),
            ["Invalid size 10 (valid range is 26 to 65536)"]
        );
        // Neither -s nor -c: the usage, EINVAL.
        let out = run(rping, &["-v"]);
        assert_eq!(out.status.code(), Some(22));
        assert!(
            lines(&out.stdout)[0].starts_with("rping -s "),
            "{:?}",
            lines(&out.stdout)
        );
        // A client whose server does not listen: the CM's reject (8: no such service), and rping's
        // exit(-1) from its CM thread.
        let addr = common::cm_addr().to_string();
        let out = run(rping, &["-c", "-a", &addr, "-p", "17175", "-C", "1"]);
        assert_eq!(out.status.code(), Some(255), "{:?}", lines(&out.stderr));
        assert_eq!(
            lines(&out.stderr),
            ["cma event RDMA_CM_EVENT_REJECTED, error 8"]
        );
    });
}

#[test]
fn ucmatose_self_exchanges_messages_on_every_connection_and_disconnects() {
    with_example("ucmatose_self", "ucmatose", |ucmatose| {
        #[rustfmt::skip]
    assert_self_runs(
        ucmatose,
        &["-p", "17471"],
        &[&["-C", "10"], &["-c", "3", "-C", "50", "-S", "4000"], &["-c", "2", "-C", "0"]],
        Said {
            start: &["cmatose: starting server"],
            transfer: &["initiating data transfers", "completing sends", "receiving data transfers", "data transfers complete"],
            end: &["cmatose: disconnecting", "disconnected", "test complete", "return status 0"],
        },
        Said {
            start: &["cmatose: starting client", "cmatose: connecting"],
            transfer: &["receiving data transfers", "sending replies", "data transfers complete"],
            end: &["test complete", "return status 0"],
        },
    );
    });
}

#[test]
fn ucmatose_reports_a_reject_and_refuses_what_the_typed_cm_leaves_out() {
    with_example("ucmatose_refuses", "ucmatose", |ucmatose| {
        let addr = common::cm_addr().to_string();
        // Nobody listens: the reject's event and status, as cmatose prints them; the status is the
        // exit status.
        let out = run(ucmatose, &["-s", &addr, "-p", "17472"]);
        assert_eq!(
            lines(&out.stdout),
            [
                "cmatose: starting client",
                "cmatose: connecting",
                "cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8",
                "test complete",
                "return status 8"
            ]
        );
        assert_eq!(out.status.code(), Some(8));
        // Migration (the crate never migrates an id) and set_option are refused, with a message.
        for (flag, what) in [
            (&["-m"][..], "-m (rdma_migrate_id)"),
            (&["-t", "1"], "-t (rdma_set_option"),
        ] {
            let out = run(ucmatose, flag);
            assert_eq!(out.status.code(), Some(1), "{flag:?}");
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(
                err.starts_with(&format!("cmatose: {what}")),
                "{flag:?}: {err}"
            );
        }
        // An unknown option: cmatose's usage, exit 1.
        let out = run(ucmatose, &["-z"]);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("usage: "));
    });
}

#[test]
fn udaddy_self_resolves_sends_and_replies_then_reports_a_lookup_nobody_answers() {
    with_example("udaddy_self", "udaddy", |udaddy| {
        #[rustfmt::skip]
    assert_self_runs(
        udaddy,
        &[],
        &[&["-C", "10"], &["-c", "2", "-C", "30", "-S", "1000"], &["-C", "0"]],
        Said {
            start: &["udaddy: starting server"],
            transfer: &["receiving data transfers", "sending replies", "data transfers complete"],
            end: &["test complete", "return status 0"],
        },
        Said {
            start: &["udaddy: starting client", "udaddy: connecting"],
            transfer: &["initiating data transfers", "receiving data transfers", "data transfers complete"],
            end: &["test complete", "return status 0"],
        },
    );
        udaddy_checks_the_mtu_and_reports_a_lookup_nobody_answers(udaddy);
    });
}

/// Run after the `--self` runs, not beside them: udaddy's port is fixed, and a real device's
/// CM is shared by every process.
fn udaddy_checks_the_mtu_and_reports_a_lookup_nobody_answers(udaddy: &PathBuf) {
    let addr = common::cm_addr().to_string();
    // A message larger than the port's active MTU: udaddy's message, before any lookup is
    // sent (the client alone: no server listens, and the check comes first).
    let out = run(udaddy, &["-s", &addr, "-S", "100000"]);
    let stdout = lines(&out.stdout);
    assert!(
        stdout
            .iter()
            .any(|l| l.starts_with("udaddy: message_size 100000 is larger than active mtu ")),
        "{stdout:#?}"
    );
    assert_eq!(stdout.last().map(String::as_str), Some("return status -22"));
    assert_eq!(out.status.code(), Some(234)); // (-22) & 0xff
                                              // Nobody listens on udaddy's port: the lookup's error event and status.
    let out = run(udaddy, &["-s", &addr]);
    let stdout = lines(&out.stdout);
    assert_eq!(
        stdout[..2],
        ["udaddy: starting client", "udaddy: connecting"],
        "{stdout:#?}"
    );
    assert!(
        stdout[2].starts_with("udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: ")
            || stdout[2].starts_with("udaddy: event: RDMA_CM_EVENT_REJECTED, error: "),
        "{stdout:#?}"
    );
    assert_ne!(out.status.code(), Some(0));
    // IPoIB's port space is refused.
    let out = run(udaddy, &["-P", "ipoib"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("udaddy: -P ipoib"));
}

#[test]
fn cm_pingpong_self_takes_each_completion_for_what_it_is_when_acks_come_late() {
    with_example("cm_pingpong_late_acks", "cm_pingpong", |pingpong| {
        // On rxe the peer's answer can complete before the ACK of the send it answers (a receive
        // polled before the send's completion): the software device shows it with late ACKs, here
        // 2 ms (its own tests show the order). Each side waits for its send and its receive on
        // CQs of their own, so neither is taken for the other.
        let out = run_env(
            pingpong,
            &["--self", "-p", "17190", "-n", "50", "-s", "64"],
            &[("TYPED_VERBS_SW_ACK_DELAY_US", "2000")],
        );
        let (stdout, stderr) = (lines(&out.stdout), lines(&out.stderr));
        assert!(
            out.status.success(),
            "cm_pingpong --self with late ACKs: {:?}\n{stdout:#?}\n{stderr:#?}",
            out.status
        );
        let done = stdout
            .iter()
            .filter(|l| l.starts_with("50 iters in "))
            .count();
        assert_eq!(done, 2, "both sides report 50 exchanges: {stdout:#?}");
    });
}
