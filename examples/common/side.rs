//! What the ping-pong examples (common/pingpong.rs) and the perftest ports (common/perf.rs)
//! share: their command lines' getopt_long, the two roles of their TCP exchange, their error
//! messages, and how their `main` runs one side, or both under `--self`.
//!
//! Each of the two modules includes this file with `#[path = "side.rs"] mod side;`.
#![allow(dead_code)] // each program uses part of this module

use std::fmt::Display;
use std::net::{Ipv4Addr, TcpListener};
use std::process::ExitCode;
use std::sync::mpsc;

/// Turns an error into the message the original program prints, followed by the typed error.
pub fn because<E: Display>(what: &'static str) -> impl FnOnce(E) -> String {
    move |e| format!("{what}: {e}")
}

/// This side's part of the exchange: the server listens (on a listener made already, under
/// `--self`), the client connects to the host.
pub enum Role {
    /// Accept one connection, on this listener or on a new one bound to every address.
    Server(Option<TcpListener>),
    /// Connect to this host.
    Client(String),
}

impl Role {
    /// Whether this side is the client (`servername` in rdma-core's programs).
    pub fn is_client(&self) -> bool {
        matches!(self, Role::Client(_))
    }
}

/// One side, as the command line chose it: the client of `server_name`, else the server. A
/// failure is printed on stderr and ends the process with a failure status.
pub fn run_one(
    server_name: Option<&String>,
    run: impl FnOnce(Role) -> Result<(), String>,
) -> ExitCode {
    let role = match server_name {
        Some(host) => Role::Client(host.clone()),
        None => Role::Server(None),
    };
    match run(role) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `--self`: `side` as the server on one thread and as the client of 127.0.0.1 on another, the
/// server's listener bound to `port` before either starts, so the client never races the
/// server. If either side fails, its error is printed ("server: ..." or "client: ...") and the
/// process exits at once with a failure (the other side could wait for it forever).
///
/// `side` gets its role, the server's name (the client's: 127.0.0.1) and what goes in front of
/// its lines: `server: ` for the server, `client_prefix` for the client.
pub fn run_both<F>(port: u16, client_prefix: &'static str, side: F) -> ExitCode
where
    F: Fn(Role, Option<String>, &'static str) -> Result<(), String> + Sync,
{
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Couldn't listen to 127.0.0.1:{port}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let localhost = Ipv4Addr::LOCALHOST.to_string();
        let sides = [
            ("server", Role::Server(Some(listener)), None, "server: "),
            (
                "client",
                Role::Client(localhost.clone()),
                Some(localhost),
                client_prefix,
            ),
        ];
        for (name, role, server_name, prefix) in sides {
            let tx = tx.clone();
            let side = &side;
            s.spawn(move || {
                let _ = tx.send((name, side(role, server_name, prefix)));
            });
        }
        drop(tx);
        for (name, r) in rx.iter() {
            if let Err(e) = r {
                eprintln!("{name}: {e}");
                std::process::exit(1);
            }
        }
    });
    ExitCode::SUCCESS
}

/// One option of a getopt_long command line.
pub struct Opt {
    /// What [`getopt`] reports it as; its short name too, if it has one.
    pub key: char,
    /// Its long name (`--long`).
    pub long: &'static str,
    /// Whether `-key` names it as well.
    pub short: bool,
    /// Whether it takes an argument.
    pub arg: bool,
}

impl Opt {
    /// An option with a short and a long name and an argument.
    pub const fn with_arg(key: char, long: &'static str) -> Opt {
        Opt {
            key,
            long,
            short: true,
            arg: true,
        }
    }

    /// An option with a long name only.
    pub const fn long_only(key: char, long: &'static str, arg: bool) -> Opt {
        Opt {
            key,
            long,
            short: false,
            arg,
        }
    }

    /// A flag with a short and a long name.
    pub const fn flag(key: char, long: &'static str) -> Opt {
        Opt {
            key,
            long,
            short: true,
            arg: false,
        }
    }
}

/// A command line refused: `name: msg` on stderr (unless `msg` is empty), then `usage` on
/// stdout; the failure status.
pub fn refuse(name: &str, usage: &str, msg: &str) -> ExitCode {
    if !msg.is_empty() {
        eprintln!("{name}: {msg}");
    }
    print!("{usage}");
    ExitCode::FAILURE
}

/// `-h`: `usage` on stdout; the success status.
pub fn help(usage: &str) -> ExitCode {
    print!("{usage}");
    ExitCode::SUCCESS
}

/// The server's name from the operands: none (this side is the server, or `--self`), or one
/// (this side is its client); `None` for more, or for one under `--self`.
pub fn server_name(mut operands: Vec<String>, self_test: bool) -> Option<Option<String>> {
    match operands.len() {
        0 => Some(None),
        1 if !self_test => Some(operands.pop()),
        _ => None,
    }
}

/// Every option of these programs (each takes those of them that [`options`] picks): the
/// ping-pong programs' `-m/--mtu`, `-q/--num-qp`, `-l/--sl`, `-g/--gid-idx`, `-e/--events` and
/// `--timeout`, perftest's `-t/--tx-depth`, `-x/--gid-index`, `-Q/--cq-mod`, `-a/--all`,
/// `-F/--CPU-freq`, `-R/--rdma_cm`, `-N/--noPeak` and `--use_old_post_send`, and what all have:
/// `-p/--port`, `-d/--ib-dev`, `-i/--ib-port`, `-s/--size`, `-n/--iters`, `-r/--rx-depth`,
/// `-h/--help` and `--self`.
const ALL_OPTS: [Opt; 22] = [
    Opt::with_arg('p', "port"),
    Opt::with_arg('d', "ib-dev"),
    Opt::with_arg('i', "ib-port"),
    Opt::with_arg('s', "size"),
    Opt::with_arg('m', "mtu"),
    Opt::with_arg('q', "num-qp"),
    Opt::with_arg('r', "rx-depth"),
    Opt::with_arg('n', "iters"),
    Opt::with_arg('l', "sl"),
    Opt::with_arg('g', "gid-idx"),
    Opt::with_arg('t', "tx-depth"),
    Opt::with_arg('x', "gid-index"),
    Opt::with_arg('Q', "cq-mod"),
    Opt::flag('e', "events"),
    Opt::flag('a', "all"),
    Opt::flag('F', "CPU-freq"),
    Opt::flag('R', "rdma_cm"),
    Opt::flag('N', "noPeak"),
    Opt::flag('h', "help"),
    Opt::long_only('S', "self", false),
    Opt::long_only('T', "timeout", true),
    Opt::long_only('O', "use_old_post_send", false),
];

/// The options of [`ALL_OPTS`] whose keys `keys` names, for [`getopt`].
pub fn options(keys: &str) -> Vec<Opt> {
    ALL_OPTS
        .into_iter()
        .filter(|o| keys.contains(o.key))
        .collect()
}

/// Splits a command line (`args`, the program's name first) as getopt_long does with `opts`:
/// options and operands in any order, `-n100` or `-n 100`, `--iters=100` or `--iters 100`,
/// flags grouped as `-eg1`, `--` ends the options. Every option seen, in order, by its key with
/// its argument ("" for a flag), and the operands; or getopt's message for what it refused.
#[allow(clippy::type_complexity)]
pub fn getopt(
    opts: &[Opt],
    args: impl IntoIterator<Item = String>,
) -> Result<(Vec<(char, String)>, Vec<String>), String> {
    let mut positional = Vec::new();
    let mut seen = Vec::new();
    let mut it = args.into_iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            positional.extend(it.by_ref());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            match opts.iter().find(|o| o.long == name) {
                Some(o) if !o.arg => seen.push((o.key, String::new())),
                Some(o) => match inline.or_else(|| it.next()) {
                    Some(v) => seen.push((o.key, v)),
                    None => return Err(format!("option '--{name}' requires an argument")),
                },
                None => return Err(format!("unrecognized option '--{name}'")),
            }
        } else if a.len() > 1 && a.starts_with('-') {
            for (i, c) in a[1..].char_indices() {
                match opts.iter().find(|o| o.short && o.key == c) {
                    Some(o) if !o.arg => seen.push((c, String::new())),
                    Some(_) => {
                        let rest = &a[1 + i + c.len_utf8()..];
                        let v = if !rest.is_empty() {
                            rest.to_owned()
                        } else {
                            match it.next() {
                                Some(v) => v,
                                None => {
                                    return Err(format!("option requires an argument -- '{c}'"))
                                }
                            }
                        };
                        seen.push((c, v));
                        break;
                    }
                    None => return Err(format!("invalid option -- '{c}'")),
                }
            }
        } else {
            positional.push(a);
        }
    }
    Ok((seen, positional))
}
