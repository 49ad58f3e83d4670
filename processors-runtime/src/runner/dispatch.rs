//! The dispatcher: how every hook but the stream hook is called, on an agent's lists and
//! inside workflows alike.
//!
//! Each hook runs on a *context* ([`HookCx`], one type per hook, in `runner::hooks`): what the
//! hook reads and what its processors may change (the message list, the request context, the
//! step's settings, the request, the tool result, …). The context builds each processor's
//! arguments and applies what it returns. [`dispatch`] makes one call: the arguments from the
//! context, the processor's erased call (polled in place for a hook that never waits, awaited
//! in the run's slot for one that may wait), the guards every call has (its tracing span, its
//! panic caught, its warning reported, its abort or failure turned into a [`Halt`]), then the
//! outcome applied to the context. [`run`] does that for each processor of a list that has the
//! hook, in order; a workflow runs its steps through [`dispatch`] on the context of the hook
//! that called it, so a processor inside a workflow is called exactly as in a list.
//!
//! What binds a context to its hook (the outcome, the argument type, the erased call) is
//! generated from the hook table ([`Dispatch`]).

use super::{Halt, HookEntry, HookOutcome, settle};
use crate::chunk::Chunk;
use crate::message::{Message, MessageList, ToolCall};
use crate::model::{ApiError, ModelRequest};
use crate::processor::HookError;
use crate::processor::call::Called;
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::{Reporter, Verdict};
use crate::processor::state::StateMap;
use crate::processor::*;
use futures::FutureExt;
use serde_json::Value;
use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::panic::AssertUnwindSafe;
use tracing::Instrument;

/// A workflow's `map` step: messages in, messages out.
pub(crate) type MapFn = dyn Fn(Vec<Message>) -> Vec<Message> + Send + Sync;

/// What binds a hook's context to the hook: generated from the hook table.
pub(crate) trait Dispatch: Send {
    /// The hook.
    const HOOK: Hook;
    /// What a processor of the hook returns.
    type Outcome: HookOutcome + Send;
    /// The hook's arguments, with the state behind `dyn Any`.
    type Args<'a>: Send
    where
        Self: 'a;
    /// The processor's erased call of the hook.
    fn call<'a>(
        p: &'a dyn DynProcessor,
        args: Self::Args<'a>,
        slot: Option<&'a mut FutureSlot>,
    ) -> Called<'a, Self::Outcome>
    where
        Self: 'a;
}

/// What a hook runs on, besides the processor and its state: builds each processor's
/// arguments and applies what it returns. Written once per hook (`runner::hooks`); lists and
/// workflows use the same (`Sync`: a workflow's concurrent branches copy it from a shared
/// borrow).
pub(crate) trait HookCx: Dispatch + Sized + Sync {
    /// The arguments of one processor's call: its `state`, and copies of the messages when
    /// it `reads` them ([`Processor::READS_MESSAGES`]).
    fn args<'a>(
        &'a mut self,
        state: &'a mut (dyn Any + Send),
        reads: bool,
        report: &'a Reporter,
    ) -> Self::Args<'a>;

    /// Applies what the processor `id` returned. `Ok(true)` ends the hook's run: no later
    /// processor is asked (an error processor asked for a retry).
    fn apply(&mut self, outcome: Self::Outcome, id: &str) -> Result<bool, HookError>;

    /// Calls `f` with what a workflow's branch condition sees of the hook.
    fn with_input<R>(&self, f: impl FnOnce(&WorkflowInput<'_>) -> R) -> R;

    /// Applies a `map` step of the workflow `id`: the hook's messages through `f`, as if a
    /// processor had returned them (hooks on messages only; the others pass).
    fn map(&mut self, f: &MapFn, id: &str) -> Result<(), HookError> {
        let _ = (f, id);
        Ok(())
    }

    /// A copy of what the hook may change, for a parallel branch of a workflow.
    fn fork(&self) -> Self;

    /// Takes a branch's copy as the hook's own (the selected branch of a parallel step).
    fn adopt(&mut self, branch: Self);

    /// A copy of what the hook may change, but the request context, which is the run's own,
    /// moved into the copy: what a processor in shadow runs on. It reads and sets the request
    /// context as it would; its other changes stay in the copy, and are judged
    /// ([`judge`](HookCx::judge)). The context is not used until it takes the request context
    /// back ([`take_back`](HookCx::take_back)).
    fn lend(&mut self) -> Self;

    /// Takes the request context back from a lent copy, and gives the message list the copy's
    /// processor left, for a hook whose processors may edit it.
    fn take_back(&mut self, lent: Self) -> Option<MessageList>;

    /// The message list the hook's processors may edit, when they may.
    fn list(&self) -> Option<&MessageList>;

    /// What `outcome` would change, were it applied ([`apply`](HookCx::apply)): the decision
    /// of a processor in shadow, recorded instead. `None` when it would change nothing.
    fn judge(&self, outcome: Self::Outcome) -> Option<Verdict>;
}

/// What a workflow's branch condition sees: what the hook being run works on (each hook's
/// context shows it: `HookCx::with_input`).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum WorkflowInput<'a> {
    /// The messages of `process_input` (the input), `process_output_step` (the step's
    /// messages) or `process_output_result` (the response).
    Messages(&'a [Message]),
    /// The streamed chunk, in `process_output_stream`.
    Chunk(&'a Chunk),
    /// The conversation, in `process_input_step`.
    Conversation(&'a MessageList),
    /// The request about to be sent, in `process_llm_request`.
    Request(&'a ModelRequest),
    /// The model's response, in `process_llm_response`.
    Response(&'a LlmResponse),
    /// A tool call about to run, in `process_tool_call` (as the processors before left it).
    ToolCall(&'a ToolCall),
    /// A tool's call and result, in `process_tool_result`.
    ToolResult {
        /// The call.
        call: &'a ToolCall,
        /// The result, as the processors before left it.
        result: &'a Value,
    },
    /// The provider's error, in `process_api_error`.
    Error(&'a ApiError),
}

/// A processor as the dispatcher calls it for one hook, with what was asked of it once.
#[derive(Clone, Copy)]
pub(crate) struct Callee<'p> {
    pub(crate) p: &'p dyn DynProcessor,
    pub(crate) id: &'p str,
    /// Whether the hook never waits ([`Processor::SYNC_HOOKS`]).
    pub(crate) sync: bool,
    /// Whether the hook reads the messages ([`Processor::READS_MESSAGES`]).
    pub(crate) reads: bool,
}

impl<'p> Callee<'p> {
    /// `p`, for `hook`.
    pub(crate) fn of(p: &'p dyn DynProcessor, hook: Hook) -> Self {
        Callee {
            p,
            id: p.dyn_id(),
            sync: p.dyn_sync_hooks().contains(hook),
            reads: p.dyn_reads_messages().contains(hook),
        }
    }
}

/// Calls one processor's hook on `cx`, and applies its outcome. `Ok(true)`: the hook's run
/// ends here ([`HookCx::apply`]).
///
/// The call runs in a tracing span (`processor`, at `DEBUG`, with the processor's id and the
/// hook; it records the outcome and the duration when a subscriber listens), with its panic
/// caught. A warning is reported and the call changes nothing; an abort or a failure halts.
/// A hook that never waits is called without a future of its own ([`dispatch_now`]).
pub(crate) async fn dispatch<H: HookCx>(
    c: Callee<'_>,
    cx: &mut H,
    state: &mut (dyn Any + Send),
    report: &Reporter,
    slot: &mut FutureSlot,
) -> Result<bool, Halt> {
    if c.sync {
        return dispatch_now(c, cx, state, report);
    }
    let span = super::hook_span(c.id, H::HOOK);
    let started = (!span.is_disabled()).then(std::time::Instant::now);
    let ran = {
        let args = cx.args(state, c.reads, report);
        // A hook whose future turns out ready at once runs inside its erased call: the call
        // is guarded too.
        let call = || std::panic::catch_unwind(AssertUnwindSafe(|| H::call(c.p, args, Some(slot))));
        let called = match started {
            Some(_) => span.in_scope(call),
            None => call(),
        };
        match called {
            Ok(Called::Ready(result)) => Ok(result),
            Ok(Called::Waiting(future)) => match started {
                // Wrapped in its span only when a subscriber listens: a disabled span's
                // wrapper does nothing but copy the future.
                Some(_) => {
                    AssertUnwindSafe(future.instrument(span.clone()))
                        .catch_unwind()
                        .await
                }
                None => AssertUnwindSafe(future).catch_unwind().await,
            },
            Err(panic) => Err(panic),
        }
    };
    let outcome = settle(c.id, H::HOOK, report, &span, started, ran)?;
    apply(cx, outcome, c.id)
}

/// [`dispatch`] for a hook that never waits: its erased call polls its future once, in
/// place, and gives its result.
#[inline(always)]
pub(crate) fn dispatch_now<H: HookCx>(
    c: Callee<'_>,
    cx: &mut H,
    state: &mut (dyn Any + Send),
    report: &Reporter,
) -> Result<bool, Halt> {
    let span = super::hook_span(c.id, H::HOOK);
    let started = (!span.is_disabled()).then(std::time::Instant::now);
    let ran = {
        let args = cx.args(state, c.reads, report);
        let call = || {
            std::panic::catch_unwind(AssertUnwindSafe(|| match H::call(c.p, args, None) {
                Called::Ready(result) => result,
                // Not listed in `SYNC_HOOKS` after all: the future would have to be kept.
                Called::Waiting(_) => Err(crate::processor::error::waited(c.id, H::HOOK)),
            }))
        };
        match started {
            Some(_) => span.in_scope(call),
            None => call(),
        }
    };
    let outcome = settle(c.id, H::HOOK, report, &span, started, ran)?;
    apply(cx, outcome, c.id)
}

/// Applies a call's outcome to `cx`, unless it changes nothing.
#[inline(always)]
fn apply<H: HookCx>(cx: &mut H, outcome: Option<H::Outcome>, id: &str) -> Result<bool, Halt> {
    match outcome {
        Some(outcome) if !outcome.is_pass() => Ok(cx.apply(outcome, id)?),
        _ => Ok(false),
    }
}

/// Runs `H`'s hook over the processors `entries` (those of a list that have the hook, in
/// order) on `cx`. Returns the id of the processor that ended the run ([`HookCx::apply`]).
pub(crate) async fn run<'p, H: HookCx>(
    entries: impl Iterator<Item = HookEntry<'p>>,
    cx: &mut H,
    states: &mut StateMap,
    report: &Reporter,
    slot: &mut FutureSlot,
) -> Result<Option<&'p str>, Halt> {
    for e in entries {
        let state = states.get_mut(e.slot);
        let c = Callee {
            p: e.p,
            id: e.id,
            sync: e.sync,
            reads: e.reads,
        };
        // A hook that never waits is called here, without a future of its own.
        let stop = match c.sync {
            true => dispatch_now(c, cx, state, report)?,
            false => dispatch(c, cx, state, report, slot).await?,
        };
        if stop {
            return Ok(Some(e.id));
        }
    }
    Ok(None)
}

/// Where a part of a hook's context that processors may change lives: in the run (the hook's
/// own, borrowed), or in a parallel branch's copy.
pub(crate) enum Place<'r, T> {
    /// The run's own.
    Run(&'r mut T),
    /// A copy of a parallel branch, or of a hook's argument that the hook only lends (inside
    /// a workflow). Boxed: the run's futures hold contexts across their calls, and a context
    /// of the run's own places is then two words per place.
    Copy(Box<T>),
}

impl<T> Place<'_, T> {
    /// A place of its own for `value`.
    pub(crate) fn copy(value: T) -> Self {
        Place::Copy(Box::new(value))
    }
}

impl<'r, T: Clone> Place<'r, T> {
    /// A copy, for a parallel branch.
    pub(crate) fn fork(&self) -> Place<'r, T> {
        Place::copy((**self).clone())
    }

    /// Takes a branch's copy as its value.
    pub(crate) fn adopt(&mut self, branch: Place<'_, T>) {
        **self = branch.into_inner();
    }

    /// The value (a copy of it, if it is the run's).
    pub(crate) fn into_inner(self) -> T {
        match self {
            Place::Run(r) => r.clone(),
            Place::Copy(v) => *v,
        }
    }
}

impl<T> Deref for Place<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        match self {
            Place::Run(r) => r,
            Place::Copy(v) => v,
        }
    }
}

impl<T> DerefMut for Place<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match self {
            Place::Run(r) => r,
            Place::Copy(v) => v,
        }
    }
}
