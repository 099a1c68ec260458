//! Getting completion events from a channel (`ibv_get_cq_event`), blocking, non-blocking or
//! awaited by a task.

use super::*;

// Getting completion events from a channel: here, above the CQs the events name, rather than
// in cq/channel.rs, below them (a CQ's builder takes its channel).
impl CompChannel<'_> {
    /// `ibv_get_cq_event`: the next completion event, waiting for one (in poll(2)) if there is
    /// none. The event is acked when dropped (see [`CqEvent`]).
    ///
    /// # Errors
    /// The errno of `ibv_get_cq_event` or of poll(2) while waiting
    /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_cq_event`); `EINTR` is retried.
    ///
    /// ```
    /// # use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
    /// let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
    /// cq.req_notify(false)?;
    /// software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?; // a completion arrives
    /// let event = channel.get_cq_event()?; // blocks until the event is there
    /// assert!(event.is_for(&cq));
    /// drop(event); // acked
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn get_cq_event(&self) -> Result<CqEvent<'_>> {
        loop {
            if let Some(ev) = self.try_get_cq_event()? {
                return Ok(ev);
            }
            crate::ffi::fd::wait_readable(self.as_raw_fd(), None)
                .map_err(|e| Error::os(Verb::GetCqEvent, e))?;
        }
    }

    /// `ibv_get_cq_event` without waiting: `None` when no event waits (EAGAIN on the
    /// O_NONBLOCK fd).
    ///
    /// # Errors
    /// The errno of `ibv_get_cq_event` other than `EAGAIN` ([`ErrorKind::Os`](crate::error::ErrorKind::Os)).
    ///
    /// ```
    /// # use typed_verbs::{CompChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let channel = CompChannel::new(&ctx)?;
    /// assert!(channel.try_get_cq_event()?.is_none());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_get_cq_event(&self) -> Result<Option<CqEvent<'_>>> {
        let ch = self.as_raw();
        // SAFETY: a live channel.
        match unsafe { backend::of((*ch).context).get_cq_event(ch) } {
            // SAFETY: the CQ of an event of this channel was made by a builder (only they take
            // a CompChannel) and is live until the event is acked; the event was just got.
            Ok((cq, cq_context)) => Ok(Some(unsafe { CqEvent::got(cq, cq_context) })),
            Err(libc::EAGAIN) => Ok(None),
            Err(e) => Err(Error::os(Verb::GetCqEvent, e)),
        }
    }
}

#[cfg(feature = "tokio")]
mod tokio_cq_events {
    use super::CqEvent;
    use crate::cq::channel::AsyncCompChannel;
    use crate::error::{Error, Result, Verb};

    impl<'a> AsyncCompChannel<'a, '_> {
        /// `ibv_get_cq_event`, awaiting the fd's readiness while no event waits.
        ///
        /// # Errors
        /// The errno of waiting for readiness, or of `ibv_get_cq_event`
        /// ([`ErrorKind::Os`](crate::error::ErrorKind::Os), verb `ibv_get_cq_event`).
        ///
        /// ```
        /// # use typed_verbs::{software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
        /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// rt.block_on(async {
        ///     let ctx = Context::open("sw0")?;
        ///     let channel = CompChannel::new(&ctx)?;
        ///     let cq = CqEx::<Standard>::builder(&ctx).cqe(16).channel(&channel).build()?;
        ///     let events = channel.cq_events()?;
        ///     cq.req_notify(false)?;
        ///     software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
        ///     drop(events.get_cq_event().await?); // acked
        ///     Ok::<(), typed_verbs::Error>(())
        /// })?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub async fn get_cq_event(&self) -> Result<CqEvent<'a>> {
            loop {
                let mut ready = self.fd.readable().await.map_err(|e| {
                    Error::os(Verb::GetCqEvent, e.raw_os_error().unwrap_or(libc::EIO))
                })?;
                match self.ch.try_get_cq_event()? {
                    Some(ev) => return Ok(ev),
                    // Another reader took it, or the readiness was stale: wait again.
                    None => ready.clear_ready(),
                }
            }
        }
    }
}
