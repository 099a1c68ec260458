//! Events: completion events from a [`CompChannel`] and async events from a
//! [`Context`]'s async fd, each typed, each acknowledged exactly once.
//!
//! ```
//! use typed_verbs::{software, AsyncEvent, CompChannel, Context, CqEx, EventAcks, InjectedCompletion, Standard, WcOpcode};
//! let ctx = Context::open("sw0")?;
//! let channel = CompChannel::new(&ctx)?;
//! let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
//! let mut acks = EventAcks::new();
//! cq.req_notify(false)?;
//! software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
//! let event = channel.get_cq_event()?; // blocks until an event is there (here at once)
//! assert!(event.is_for(&cq));
//! event.ack_later(&mut acks);
//! acks.ack(); // one ibv_ack_cq_events per CQ
//! software::raise_port_event(&ctx, typed_verbs::ffi::event_type::PORT_ACTIVE, 1)?;
//! assert_eq!(*ctx.get_async_event()?, AsyncEvent::PortActive(1)); // acked when dropped
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [guarantees](crate::guide::guarantees) page says why an event that is held or
//! leaked never makes a destroy wait.
//!
//! # Completion events
//!
//! A CQ created with a channel and armed with `req_notify` puts one event on the channel when
//! a completion (or, armed with `solicited_only`, a solicited or failed one) arrives.
//! [`CompChannel::get_cq_event`](crate::cq::channel::CompChannel::get_cq_event) (blocking) and
//! [`try_get_cq_event`](crate::cq::channel::CompChannel::try_get_cq_event) (`None` when there is none) return
//! it as a [`CqEvent`]: [`CqEvent::is_for`] tells which CQ it is for, and
//! [`CqEvent::user_context`] gives that CQ's typed user context.
//!
//! "All completion events that ibv_get_cq_event() returns must be acknowledged using
//! ibv_ack_cq_events()", and `ibv_destroy_cq` waits until they are. Here a [`CqEvent`] acks
//! itself when dropped; [`EventAcks`] collects events and acks each CQ's with one
//! `ibv_ack_cq_events(cq, n)` ("this verb takes a mutex, so it is better to ack many events at
//! once"). Destroying a CQ first acks every event of it that is still held (in a `CqEvent` or
//! an `EventAcks`, on any thread), so holding one can never hang the destroy; a held event
//! then acks nothing when it goes.
//!
//! # Async events
//!
//! [`Context::get_async_event`] and [`Context::try_get_async_event`] return an
//! [`AsyncEventGuard`], which derefs to the typed [`AsyncEvent`] and calls
//! `ibv_ack_async_event` when dropped. `ibv_destroy_qp`, `ibv_destroy_cq` and `ibv_destroy_srq`
//! wait for the acks of their object's events; as above, destroying the object acks the events
//! of it that are still held first.
//!
//! # Readiness without the power to consume
//!
//! Both fds are readable while an event waits.
//! [`CompChannel::wait_readable`](crate::cq::channel::CompChannel::wait_readable) and
//! [`Context::wait_async_readable`] wait for that in poll(2) with a timeout; with the feature
//! `tokio`, `CompChannel::cq_events` awaits it; for a poll/epoll/mio loop of your own, the
//! fds' numbers are [`CompChannel::as_raw_fd`](std::os::fd::AsRawFd::as_raw_fd) and
//! [`Context::async_fd`]. Neither is handed out as a [`BorrowedFd`](std::os::fd::BorrowedFd)
//! (`AsFd`): safe code could then `dup` it and `read` an event that libibverbs never acks, and
//! the destroy verb of its object would wait for that ack forever. A raw fd number can be read
//! from only with `unsafe`, whose caller promises not to consume events.

/// Async events: the device's, a port's, a CQ's, a QP's and an SRQ's, and the object each names.
mod async_event;
/// Completion events: what one names, and acking them.
mod completion;
/// Getting completion events from a channel: blocking, non-blocking or awaited by a task.
mod get;

pub use async_event::*;
pub use completion::*;

use crate::backend;
use crate::cq::channel::CompChannel;
use crate::cq::ex::CqEx;
use crate::cq::ex::WcFlags;
use crate::cq::Cq;
use crate::cq::Threading;
use crate::cq::{AnyCq, CqAcks};
use crate::device::Context;
use crate::error::{Error, Result, Verb};
use crate::ffi::{sys, RawAsyncEvent};
use crate::qp::state::QpState;
use crate::qp::Qp;
use crate::qp::{QpType, RecvSide};
use crate::raw::destroying::Ack as _;
use crate::srq::Srq;
use crate::sync::Mutex;
use std::marker::PhantomData;
use std::os::fd::{AsRawFd, RawFd};
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;
