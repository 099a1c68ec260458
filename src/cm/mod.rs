//! Typed connection management (librdmacm, rdma_cm(7)): a CM id's states are types, events
//! are read, copied and acked by the crate, and a connection's QP is the crate's own.
//!
//! An RC connection on the software device, both sides in one program:
//!
//! ```
//! use std::time::Duration;
//! use typed_verbs::prelude::*;
//! use typed_verbs::cm::{CmId, ConnParam, EventChannel, Tcp};
//!
//! let t = Duration::from_secs(5);
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let ch = EventChannel::new(&ctx)?;
//! let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(8)?;
//! let addr = listener.local_addr().expect("bound");
//! let server = std::thread::scope(|s| {
//!     let server = s.spawn(|| -> typed_verbs::Result<_> {
//!         let req = listener.get_request(t)?;
//!         assert_eq!(&req.private_data()[..2], b"hi"); // RC pads private data to 56 bytes
//!         let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//!         req.accept(qp, &ConnParam { private_data: b"welcome", ..ConnParam::default() }, t)
//!     });
//!     let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, addr, t)?.resolve_route(t)?;
//!     let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//!     let client = id.connect(qp, &ConnParam { private_data: b"hi", ..ConnParam::default() }, t)?;
//!     assert_eq!(&client.private_data()[..7], b"welcome"); // RC pads private data
//!     let server = server.join().unwrap()?;
//!     Ok::<_, typed_verbs::Error>((client, server))
//! })?;
//! # drop(server);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! - An [`EventChannel`] (`rdma_create_event_channel`) carries the events of every id made on
//!   it. It is cheap to clone, `Send + Sync` and `'static`; every id keeps it alive.
//! - A [`CmId<P, S>`](CmId) is an `rdma_cm_id` of port space `P` ([`Tcp`]: RC, [`Udp`]: UD) in
//!   state `S`: [`Idle`] → ([`Bound`] →) [`AddrResolved`] → [`RouteResolved`] → a
//!   [`Connection`] on the active side; [`Bound`] → [`Listening`] → a [`ConnectRequest`] →
//!   accepted (a [`Connection`]) or rejected on the passive side. A verb called in the wrong
//!   state does not compile.
//! - The QP of a connection is built by the program with [`Qp::builder`](crate::qp::Qp::builder)
//!   on its own context and moved RESET → INIT → RTR → RTS by the crate's typed transitions,
//!   fed with `rdma_init_qp_attr`'s attributes (their range checks apply). The CM never owns
//!   or touches it (`id->qp` stays NULL).
//! - Events: each raw event is copied (its type read as an integer, its status, private data,
//!   parameters) and acked at once, before any user code runs, so every event is acked exactly
//!   once and no `rdma_destroy_id` waits for an ack. A connect request's new id becomes an owned
//!   handle at once (only for that event type). Copied events are routed to their id through
//!   the channel (a token in `id->context`), so threads waiting for different ids on one
//!   channel each get their own; an id's unread events go with it when it is destroyed, and a
//!   connect request nobody will read is rejected and its id destroyed.
//! - Blocking verbs wait for their event with a timeout; with the `tokio` feature each has an
//!   `_async` twin awaiting the channel's fd. A dropped (cancelled) future drops what it owns;
//!   a forgotten value only leaks.
//!
//! The guide's [connection management](crate::guide::connection_management) page covers the
//! connection manager on both sides, and its
//! [connection parameters](crate::guide::connection_parameters) page how long a connection
//! takes to report a dead peer.

/// The event channel and its demultiplexer: each id's events, in order, to the id's owner.
mod channel;
/// Connection parameters, requests and connections: a QP brought up by the CM's events.
mod connection;
/// Ids: create, resolve, listen, and the verbs of each state.
mod id;
/// Port spaces and id states, as types, and the rules of which verb each state allows.
mod state;
/// tokio: an id's events awaited by a task (methods only).
#[cfg(feature = "tokio")]
mod tokio_cm;

pub use channel::*;
pub use connection::*;
pub use id::*;
pub use state::*;

use crate::backend::{cm_of, CmPath};
use crate::cq::Threading;
use crate::device::Context;
pub use crate::error::CmEventKind;
use crate::error::{Error, ErrorKind, Result, Verb};
use crate::ffi::sys;
use crate::qp::state::{
    AccessFlags, AddressVector, ConnectedInit, ConnectedInitModify, ErrorState, GlobalRoute, Init,
    Mtu, QpState, RcRtr, RcRts, Reset, Rts, SqPsn, Transitions, UdInit,
};
use crate::qp::Gid;
use crate::qp::Rc;
use crate::qp::Ud;
use crate::qp::{Qp, QpType, RecvSide, UsesSrq};
use crate::sync::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ffi::qp_attr_mask as qam;
use crate::sealed::SealedCm;
