//! Completion channels (ibv_create_comp_channel(3)).

use crate::backend;
use crate::error::{DestroyError, Error, Result, Verb};
use crate::ffi::sys;
use crate::object::{destroy, Destroy};
use crate::Context;
use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;

/// A completion event channel: "essentially a file descriptor that is used to deliver
/// completion notifications". Its fd is available through [`AsFd`] for poll/epoll.
///
/// "ibv_destroy_comp_channel() fails if any CQs are still associated with the completion event
/// channel": a CQ created with a channel borrows it, so that is a compile-time fact here.
pub struct CompChannel<'ctx> {
    raw: NonNull<sys::ibv_comp_channel>,
    _ctx: PhantomData<&'ctx Context>,
}

// SAFETY: the channel is an fd plus immutable fields.
unsafe impl Send for CompChannel<'_> {}
// SAFETY: as above.
unsafe impl Sync for CompChannel<'_> {}

impl<'ctx> CompChannel<'ctx> {
    /// `ibv_create_comp_channel`.
    pub fn new(ctx: &'ctx Context) -> Result<Self> {
        // SAFETY: a live context.
        let raw = unsafe { backend::of(ctx.as_raw()).create_comp_channel(ctx.as_raw()) }
            .map_err(|e| Error::os(Verb::CreateCompChannel, e))?;
        Ok(CompChannel {
            raw,
            _ctx: PhantomData,
        })
    }

    /// The C channel. It stays owned by `self`.
    pub fn as_raw(&self) -> *mut sys::ibv_comp_channel {
        self.raw.as_ptr()
    }

    /// `ibv_destroy_comp_channel`.
    pub fn destroy(self) -> Result<(), DestroyError<Self>> {
        destroy(self)
    }
}

impl AsFd for CompChannel<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the fd is open for as long as the channel lives, which outlives the borrow.
        unsafe { BorrowedFd::borrow_raw((*self.as_raw()).fd) }
    }
}

impl AsRawFd for CompChannel<'_> {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

impl Destroy for CompChannel<'_> {
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        // SAFETY: a live channel with no CQ left (they borrow it).
        unsafe { backend::of((*self.as_raw()).context).destroy_comp_channel(self.as_raw()) }
            .map_err(|e| Error::os(Verb::DestroyCompChannel, e))
    }
}

impl Drop for CompChannel<'_> {
    fn drop(&mut self) {
        // SAFETY: dropped once.
        let _ = unsafe { self.destroy_raw() };
    }
}

crate::object::debug_handle!(CompChannel<'a>);
