//! A deadline for a judging call, and a pause, on any executor.
//!
//! Under a Tokio runtime with timers the deadline is a Tokio timer (so tests with paused time
//! control it); elsewhere (`futures::executor::block_on`, another runtime, a Tokio runtime
//! built without `enable_time`) a helper thread waits out the deadline and leaves as soon as
//! the call ends or is dropped.

use futures::future::{Either, select};
use std::future::Future;
use std::pin::pin;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

/// `f`'s output, or `None` when it is not done within `limit`.
pub(crate) async fn within<F: Future>(limit: Duration, f: F) -> Option<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        // A runtime built without timers refuses to make one (it panics): then the helper
        // thread keeps the deadline.
        if let Ok(sleep) = std::panic::catch_unwind(|| tokio::time::sleep(limit)) {
            return match select(pin!(f), pin!(sleep)).await {
                Either::Left((out, _)) => Some(out),
                Either::Right(_) => None,
            };
        }
    }
    // Dropping `_done` (the call ended, or the caller dropped this future) wakes the thread.
    let (_done, done_rx) = channel::<()>();
    let (fire, fired) = futures::channel::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("judge-deadline".into())
        .spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = done_rx.recv_timeout(limit) {
                let _ = fire.send(());
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no thread for the judging deadline; the call runs without one");
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
