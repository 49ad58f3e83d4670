//! A hook's call, as the runner sees it: its result ready now (a hook that never waits, its
//! future polled once where it stands), or its future waiting in the caller's slot.

use super::future_slot::InSlot;
use super::{Hook, Processor, ProcessorError, error};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// What a hook's erased call gives.
pub enum Called<'a, T> {
    /// The hook never waits: its result, from its future polled once in place.
    Ready(Result<T, ProcessorError>),
    /// The hook may wait: its future, in the caller's slot, to await.
    Waiting(InSlot<'a, Result<T, ProcessorError>>),
}

/// Polls a future once, where it stands: its output, or `None` when it waited.
#[inline(always)]
pub(crate) fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// The result of `p`'s hook `hook` whose future is `future`, for a hook that
/// [`SYNC_HOOKS`](Processor::SYNC_HOOKS) says never waits; an error if it waited.
#[inline(always)]
pub(crate) fn result_now<P: Processor + ?Sized, T>(
    p: &P,
    hook: Hook,
    future: impl Future<Output = Result<T, ProcessorError>>,
) -> Result<T, ProcessorError> {
    match ready_now(future) {
        Some(result) => result,
        None => waited(p, hook),
    }
}

/// The error of a hook that was to be ready at once and waited.
#[cold]
#[inline(never)]
fn waited<P: Processor + ?Sized, T>(p: &P, hook: Hook) -> Result<T, ProcessorError> {
    Err(error::waited(p.id(), hook))
}

/// The error of a processor that got a state of another type than its own.
pub(crate) fn state_mismatch<P: Processor + ?Sized>(p: &P) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{}` got a state of another type than `{}`",
        p.id(),
        std::any::type_name::<P::State>()
    ))
}
