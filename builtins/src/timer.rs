//! A deadline and a pause on any executor, for the built-ins that wait: a judge's timeout
//! ([`Judge::timeout`](crate::detector::Judge::timeout)) and
//! [`StreamErrorRetry`](crate::StreamErrorRetry)'s backoff.
//!
//! Inside a Tokio runtime (`tokio::runtime::Handle::try_current` finds one) the deadline is a
//! Tokio timer, so tests with paused time control it; such a runtime needs its time driver
//! (`enable_time` or `enable_all`, which `#[tokio::main]` and `Runtime::new` turn on), as the
//! providers' HTTP timeouts do. Elsewhere (`futures::executor::block_on`, another executor)
//! a helper thread waits out the deadline and leaves as soon as the call ends or is dropped.
//!
//! Tokio 1.x gives no way to ask a runtime whether it has a time driver short of making a
//! timer, which panics when it has none; so the choice is made by whether a Tokio runtime is
//! current, never by catching that panic.

use futures::future::{Either, select};
use std::future::Future;
use std::pin::pin;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// `f`'s output, or `None` when it is not done within `limit`.
pub(crate) async fn within<F: Future>(limit: Duration, f: F) -> Option<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return tokio::time::timeout(limit, f).await.ok();
    }
    // Dropping `_done` (the call ended, or the caller dropped this future) wakes the thread.
    let (_done, done_rx) = channel::<()>();
    let (fire, fired) = futures::channel::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("processors-timer".into())
        .spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                let _ = fire.send(());
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no thread for a deadline; the call runs without one");
        return Some(f.await);
    }
    match select(pin!(f), fired).await {
        Either::Left((out, _)) => Some(out),
        Either::Right((Ok(()), _)) => None,
        // The thread ended without firing: it cannot have (it owns the sender until it fires).
        Either::Right((Err(_), f)) => Some(f.await),
    }
}

/// Waits `duration`, on any executor, as [`within`] keeps a deadline.
pub(crate) async fn sleep(duration: Duration) {
    within(duration, std::future::pending::<()>()).await;
}
