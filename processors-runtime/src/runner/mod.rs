//! The runner: how processors are called, between the agent loop and the processors.
//!
//! Every hook but the stream hook goes through the dispatcher (`dispatch`), on a context
//! written once per hook (`hooks`): the agent's lists and workflows alike. The stream hook
//! runs per chunk in the stream chain (`processor::chain`), which the stream driver (`stream`)
//! feeds with the model's chunks and drains into the run's outbox. Each call runs in a tracing
//! span with its panic caught; a warning is reported and an abort or a failure becomes a
//! `Halt`, which the agent loop (`agent::run`) turns into what it means for the run. The
//! semantics are those of `docs/semantics.md`; `docs/architecture.md` draws the layers.

pub(crate) mod compose;
pub(crate) mod dispatch;
pub(crate) mod hooks;
pub(crate) mod stream;

pub use crate::processor::HookError;

use crate::context::RequestContext;
use crate::message::{Message, MessageList};
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::Reporter;
use crate::processor::state::StateMap;
use crate::processor::{
    ApiErrorAction, DynProcessor, Hook, Hooks, InputOutcome, LlmRequestAction, OutputOutcome,
    ProcessorError, StepOverrides, StreamAction, ToolCallAction, ToolResultAction,
};
use crate::step::StepResult;
use crate::tripwire::TripWire;

/// Why a chain stopped: a processor aborted, or a hook failed.
#[derive(Debug)]
pub(crate) enum Halt {
    Abort(TripWire),
    Failed(HookError),
}

impl From<HookError> for Halt {
    fn from(e: HookError) -> Self {
        Halt::Failed(e)
    }
}

impl From<Halt> for ProcessorError {
    /// What a processor that runs others (a workflow) returns when one of them halts: the
    /// abort again, with the inner processor's id, or the failure as its own.
    fn from(h: Halt) -> Self {
        match h {
            Halt::Abort(tw) => ProcessorError::Abort(tw.into()),
            Halt::Failed(e) => ProcessorError::Failed(Box::new(e)),
        }
    }
}

pub(crate) use crate::processor::error::panic_message;

/// The span of one hook call (`processor`, at `DEBUG`).
#[inline]
pub(crate) fn hook_span(id: &str, hook: Hook) -> tracing::Span {
    tracing::debug_span!(
        "processor",
        id,
        hook = hook.name(),
        outcome = tracing::field::Empty,
        duration_us = tracing::field::Empty,
    )
}

/// What a hook call that ran (or panicked) comes to: its outcome and duration recorded on
/// its span when it is enabled, the warnings it reported, and its result or the halt.
///
/// Inlined into every call site: what a hook that returned a result pays is the check of its
/// span, of the warnings and of the result. The rest is out of line and not generic.
#[inline(always)]
pub(crate) fn settle<T: HookOutcome>(
    id: &str,
    hook: Hook,
    report: &Reporter,
    span: &tracing::Span,
    started: Option<std::time::Instant>,
    ran: std::thread::Result<Result<T, ProcessorError>>,
) -> Result<Option<T>, Halt> {
    if let Some(t) = started {
        let outcome = match &ran {
            Ok(Ok(v)) => v.outcome(),
            Ok(Err(ProcessorError::Warning(_))) => "warned",
            Ok(Err(ProcessorError::Abort(a))) if a.retry => "retried",
            Ok(Err(ProcessorError::Abort(_))) => "aborted",
            Ok(Err(ProcessorError::Failed(_))) => "failed",
            Err(_) => "panicked",
        };
        record(span, t, outcome);
    }
    // Warnings the hook reported through the request context, besides its result.
    report.flush();
    let failed = match ran {
        Ok(Ok(v)) => return Ok(Some(v)),
        Ok(Err(e)) => Ok(e),
        Err(panic) => Err(panic),
    };
    match halt(id, hook, report, failed) {
        None => Ok(None),
        Some(h) => Err(h),
    }
}

/// Records a hook call's outcome and duration on its span.
#[inline(never)]
fn record(span: &tracing::Span, started: std::time::Instant, outcome: &'static str) {
    span.record("outcome", outcome);
    span.record(
        "duration_us",
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
    );
}

/// What a hook's error or panic comes to: a warning is reported (`None`); an abort or a
/// failure halts.
#[cold]
#[inline(never)]
fn halt(
    id: &str,
    hook: Hook,
    report: &Reporter,
    failed: Result<ProcessorError, Box<dyn std::any::Any + Send>>,
) -> Option<Halt> {
    match failed {
        Ok(ProcessorError::Warning(a)) => {
            report.violation(&a.into_tripwire(id), crate::processor::ViolationKind::Warn);
            None
        }
        Ok(ProcessorError::Abort(a)) => Some(Halt::Abort(a.into_tripwire(id))),
        Ok(ProcessorError::Failed(source)) => Some(Halt::Failed(HookError::Failed {
            id: id.to_owned(),
            hook,
            source,
        })),
        Err(panic) => Some(Halt::Failed(HookError::panicked(id, hook, &*panic))),
    }
}

/// What a hook's result did, for its tracing span.
pub(crate) trait HookOutcome {
    /// `pass` when it changed nothing.
    fn outcome(&self) -> &'static str;

    /// Whether it changes nothing: then there is nothing to apply.
    fn is_pass(&self) -> bool;
}

impl HookOutcome for InputOutcome {
    fn outcome(&self) -> &'static str {
        match self {
            InputOutcome::Unchanged => "pass",
            _ => "replaced",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, InputOutcome::Unchanged)
    }
}

impl HookOutcome for OutputOutcome {
    fn outcome(&self) -> &'static str {
        match self {
            OutputOutcome::Unchanged => "pass",
            OutputOutcome::Messages(_) => "replaced",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, OutputOutcome::Unchanged)
    }
}

impl HookOutcome for StepOverrides {
    fn outcome(&self) -> &'static str {
        match self.is_empty() {
            true => "pass",
            false => "replaced",
        }
    }

    fn is_pass(&self) -> bool {
        self.is_empty()
    }
}

impl HookOutcome for LlmRequestAction {
    fn outcome(&self) -> &'static str {
        match self {
            LlmRequestAction::Continue => "pass",
            LlmRequestAction::Prompt(_) | LlmRequestAction::Request(_) => "replaced",
            LlmRequestAction::Respond(_) => "responded",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, LlmRequestAction::Continue)
    }
}

impl HookOutcome for () {
    fn outcome(&self) -> &'static str {
        "pass"
    }

    fn is_pass(&self) -> bool {
        true
    }
}

impl HookOutcome for ToolCallAction {
    fn outcome(&self) -> &'static str {
        match self {
            ToolCallAction::Continue => "pass",
            ToolCallAction::Rewrite(_) => "rewritten",
            ToolCallAction::Respond(_) => "responded",
            ToolCallAction::Refuse(_) => "refused",
            ToolCallAction::RequireApproval { .. } => "approval",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, ToolCallAction::Continue)
    }
}

impl HookOutcome for ToolResultAction {
    fn outcome(&self) -> &'static str {
        match self {
            ToolResultAction::Keep => "pass",
            ToolResultAction::Replace(_) => "replaced",
            ToolResultAction::ForModel(_) => "for-model",
            ToolResultAction::ReplaceWithCopy { .. } => "replaced",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, ToolResultAction::Keep)
    }
}

impl HookOutcome for StreamAction {
    fn outcome(&self) -> &'static str {
        match self {
            StreamAction::Pass => "pass",
            StreamAction::Drop => "dropped",
            _ => "replaced",
        }
    }

    fn is_pass(&self) -> bool {
        matches!(self, StreamAction::Pass)
    }
}

impl HookOutcome for ApiErrorAction {
    fn outcome(&self) -> &'static str {
        match self {
            ApiErrorAction::Retry => "retried",
            _ => "pass",
        }
    }

    fn is_pass(&self) -> bool {
        *self == ApiErrorAction::Unhandled
    }
}

/// What a run asks of a processor once, when its list is bound, rather than at every hook
/// call: the hooks it has, the ones that never wait, and the ones that read the messages.
#[derive(Clone, Copy)]
pub(crate) struct Asked {
    hooks: Hooks,
    sync: Hooks,
    reads: Hooks,
}

impl Asked {
    pub(crate) fn of(p: &dyn DynProcessor) -> Self {
        Asked {
            hooks: p.dyn_hooks(),
            sync: p.dyn_sync_hooks(),
            reads: p.dyn_reads_messages(),
        }
    }
}

/// A processor of a run's list, with its id, its state slot and what was asked of it.
#[derive(Clone, Copy)]
pub(crate) struct Entry<'p> {
    pub(crate) p: &'p dyn DynProcessor,
    pub(crate) id: &'p str,
    pub(crate) slot: usize,
    pub(crate) asked: Asked,
}

impl Entry<'_> {
    /// Whether the processor has `hook`.
    pub(crate) fn has(&self, hook: Hook) -> bool {
        self.asked.hooks.contains(hook)
    }
}

/// A processor of a list that has a hook, as that hook's chain calls it.
pub(crate) struct HookEntry<'p> {
    pub(crate) p: &'p dyn DynProcessor,
    pub(crate) id: &'p str,
    pub(crate) slot: usize,
    /// Whether the hook never waits ([`Processor::SYNC_HOOKS`](crate::processor::Processor::SYNC_HOOKS)).
    pub(crate) sync: bool,
    /// Whether the hook reads the messages.
    pub(crate) reads: bool,
}

/// A processor list of a run, each processor with its state slot.
pub(crate) struct Chain<'p> {
    entries: &'p [Entry<'p>],
}

impl<'p> Chain<'p> {
    /// The list `entries`: processors with their slots.
    pub(crate) fn new(entries: &'p [Entry<'p>]) -> Self {
        Chain { entries }
    }

    /// The processors that have `hook`, in order, with their slots.
    pub(crate) fn with(&self, hook: Hook) -> impl Iterator<Item = HookEntry<'p>> + '_ {
        self.entries
            .iter()
            .filter(move |e| e.has(hook))
            .map(move |e| HookEntry {
                p: e.p,
                id: e.id,
                slot: e.slot,
                sync: e.asked.sync.contains(hook),
                reads: e.asked.reads.contains(hook),
            })
    }

    /// Whether a processor of the list has `hook`.
    pub(crate) fn has(&self, hook: Hook) -> bool {
        self.entries.iter().any(|e| e.has(hook))
    }
}

/// What every hook call of a run shares: the states, the conversation, the request's
/// context, where violations go, the steps so far, and the retry count.
pub(crate) struct Scope {
    pub(crate) states: StateMap,
    pub(crate) list: MessageList,
    pub(crate) cx: RequestContext,
    pub(crate) report: Reporter,
    pub(crate) steps: Vec<StepResult>,
    pub(crate) retry_count: u32,
    /// The memory of the hook calls' futures (one at a time), reused from call to call.
    pub(crate) hooks: FutureSlot,
}

impl Scope {
    /// What processors in shadow would have done, at the run's end: the steps their streams
    /// had not settled recorded, and every decision handed to `on_violation`.
    pub(crate) fn shadowed(&self) -> Vec<crate::processor::ShadowDecision> {
        self.report.settle_shadow_streams();
        self.report.flush();
        self.report.shadowed()
    }
}

/// The ids of messages.
pub(crate) fn ids<'a>(ms: impl Iterator<Item = &'a Message>) -> Vec<String> {
    ms.map(|m| m.id.clone()).collect()
}
