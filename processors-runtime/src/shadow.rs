//! [`Shadow`]: a processor that runs as usual, but whose decisions are recorded instead of
//! applied.
//!
//! A guard is put in shadow before it is trusted: it sees every message and chunk it would
//! see, calls its judge, keeps its state, and decides; what it decides (an abort, a retry, a
//! changed message, a rewritten call, a replaced chunk, a failure or a panic) reaches
//! `on_violation` as a [`ViolationKind::Shadow`](crate::processor::ViolationKind::Shadow), the log and
//! the run page, and the result's [`shadowed`](crate::agent::GenerateResult::shadowed), while
//! the run goes on as if the processor were not there. `docs/semantics.md` ("Shadow") gives the
//! rules.
//!
//! A processor in shadow is a composite of one (`runner::compose`): each hook lends the
//! processor a copy of what it may change, the request context the run's own
//! (`HookCx::lend`), and what it returns is judged by the hook's context instead of applied
//! (`HookCx::judge`, beside `HookCx::apply`). Its stream hook keeps the step's diff.

use crate::chunk::{Chunk, ChunkKind};
use crate::processor::call::Called;
use crate::processor::error::panic_message;
use crate::processor::future_slot::FutureSlot;
use crate::processor::known::Known;
use crate::processor::report::{Reporter, UnsettledStream, Verdict, quote};
use crate::processor::table::for_each_hook;
use crate::processor::{
    Abort, ApiErrorAction, DataWriter, DynProcessor, ErrorProcessor, Hook, Hooks, InputOutcome,
    InputProcessor, LlmRequestAction, OutputOutcome, OutputProcessor, OutputStreamArgs, Processor,
    ProcessorError, ShadowAction, ShadowDecision, StepOverrides, StreamAction, ToolCallAction,
    ToolResultAction, ViolationKind,
};
use crate::runner::Halt;
use crate::runner::compose::{Composite, composite_hooks};
use crate::runner::dispatch::HookCx;
use futures::FutureExt;
use serde_json::{Value, json};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

/// A processor run in shadow: it sees everything and decides as usual, and what it decides
/// is recorded instead of applied.
///
/// It has the processor's id, hooks and lists (a shadowed input processor goes in `input`),
/// and its own state around the processor's. It reads and writes the request context as the
/// processor would: the values it sets reach the processors after it, and what its judge
/// uses is counted in `processor_usage`. Its outcome, its edits to the message list, its
/// `data-*` chunks, its aborts and its failures are not applied; each becomes a
/// [`ShadowDecision`]. A warning it returns is reported as any warning is.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
///
/// let no_refunds = output_step_fn("no-refunds", |a: &mut OutputStepArgs<'_, ()>| {
///     if a.text.contains("refund") {
///         return Err(a.abort().reason("refunds are handled by a person").into());
///     }
///     Ok::<_, ProcessorError>(())
/// });
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([Turn::text("You will get a refund.")]))
///     .output(shadow(no_refunds))
///     .build()
///     .unwrap();
/// let result = agent.generate("Can I have my money back?").await.unwrap();
/// // The answer went out; the guard's decision is on record.
/// assert_eq!(result.text, "You will get a refund.");
/// assert_eq!(result.shadowed[0].action, ShadowAction::Block);
/// assert_eq!(
///     result.shadowed[0].reason,
///     "would have aborted the run: refunds are handled by a person"
/// );
/// # });
/// ```
///
/// A guard enforced and a copy of it in shadow (another threshold, another judge) run side by
/// side under two ids: give the copy its own with [`with_id`](Shadow::with_id), so that each
/// has its state.
#[derive(Debug, Clone)]
pub struct Shadow<P> {
    inner: P,
    /// The id in shadow, when it is not the processor's.
    id: Option<String>,
}

/// Runs `processor` in [`Shadow`]: its decisions are recorded instead of applied.
pub fn shadow<P: Processor>(processor: P) -> Shadow<P> {
    Shadow::new(processor)
}

impl<P: Processor> Shadow<P> {
    /// Runs `processor` in shadow.
    pub fn new(processor: P) -> Self {
        Shadow {
            inner: processor,
            id: None,
        }
    }

    /// Runs it under `id` (its state, its decisions and its usage are under this id), so that
    /// the same processor, enforced, can run beside it.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::prelude::*;
    ///
    /// let strict = |limit: usize| {
    ///     output_step_fn("length", move |a: &mut OutputStepArgs<'_, ()>| {
    ///         if a.text.len() > limit {
    ///             return Err(a.abort().reason(format!("over {limit} bytes")).into());
    ///         }
    ///         Ok::<_, ProcessorError>(())
    ///     })
    /// };
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([Turn::text("Twelve bytes")]))
    ///     .output(strict(100))
    ///     .output(shadow(strict(10)).with_id("length-candidate"))
    ///     .build()
    ///     .unwrap();
    /// let result = agent.generate("hi").await.unwrap();
    /// assert!(result.tripwire.is_none());
    /// assert_eq!(result.shadowed[0].processor_id, "length-candidate");
    /// # });
    /// ```
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The processor.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The processor, out of shadow.
    pub fn into_inner(self) -> P {
        self.inner
    }
}

/// The state of a processor in shadow: the processor's own, and what its stream hook would
/// have changed in the current step (shared with the run's reports, so that a run that ends
/// before the step's stream does still records it).
#[derive(Debug, Default)]
pub struct ShadowState<S> {
    inner: S,
    stream: Arc<Mutex<StreamDiff>>,
    /// Whether `stream` is known to the run's reports.
    registered: bool,
    /// Where the processor's hook future goes when it waits, reused from call to call.
    slot: FutureSlot,
}

impl<S> ShadowState<S> {
    /// The processor's own state.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

/// What a stream hook in shadow would have changed in the current step.
#[derive(Debug, Default)]
pub(crate) struct StreamDiff {
    replaced: u32,
    dropped: u32,
    inserted: u32,
    data: u32,
    /// From the first chunk it would have changed: the text the client got, and the text
    /// it would have got.
    diverged: bool,
    delivered: String,
    would_have: String,
    /// An abort or a panic was recorded this step: the run would have ended there, so what
    /// the processor decides after it is not counted.
    stopped: bool,
    /// The step's `step-finish` went by: what the processor lets out with the run's `finish`
    /// still belongs to it (text held to the end), so the step is settled at the next
    /// `step-start` or at `finish`.
    parked: bool,
}

impl StreamDiff {
    /// Counts what `action` would have done to `chunk`.
    fn see(&mut self, chunk: &Chunk, action: StreamAction) {
        let text = chunk.text_delta().unwrap_or_default();
        let would_have: Vec<Chunk> = match action {
            StreamAction::Pass => {
                if self.diverged {
                    self.delivered.push_str(text);
                    self.would_have.push_str(text);
                }
                return;
            }
            StreamAction::Replace(c) if c == *chunk => return self.see(chunk, StreamAction::Pass),
            StreamAction::Many(v) if v.len() == 1 && v[0] == *chunk => {
                return self.see(chunk, StreamAction::Pass);
            }
            StreamAction::Replace(c) => {
                self.replaced += 1;
                vec![c]
            }
            StreamAction::Drop => {
                self.dropped += 1;
                Vec::new()
            }
            StreamAction::Many(v) if v.is_empty() => {
                self.dropped += 1;
                v
            }
            StreamAction::Many(v) => {
                match v.iter().position(|c| c == chunk) {
                    Some(_) => self.inserted += v.len() as u32 - 1,
                    None => {
                        self.replaced += 1;
                        self.inserted += (v.len() as u32).saturating_sub(1);
                    }
                }
                v
            }
        };
        self.diverged = true;
        self.delivered.push_str(text);
        for c in &would_have {
            self.would_have.push_str(c.text_delta().unwrap_or_default());
        }
    }

    /// At a step's end: what the step's stream would have looked like, when it would have
    /// changed; the diff starts again for the next step. `cut` says the run ended before the
    /// step's stream did.
    fn settle(&mut self, cut: bool) -> Option<Verdict> {
        let diff = std::mem::take(self);
        if diff.stopped || !(diff.diverged || diff.data > 0) {
            return None;
        }
        let cut = cut && !diff.parked;
        let reason = match (diff.delivered == diff.would_have, diff.diverged) {
            (false, _) => format!(
                "would have streamed {} instead of {}",
                quote(&diff.would_have),
                quote(&diff.delivered)
            ),
            (true, true) => format!(
                "would have changed {} of the stream's chunks, its text the same",
                diff.replaced + diff.dropped + diff.inserted
            ),
            (true, false) => format!("would have written {} data chunks", diff.data),
        };
        let reason = match cut {
            true => format!("{reason} (the run ended before the step's stream did)"),
            false => reason,
        };
        Some(Verdict {
            action: ShadowAction::Change,
            reason,
            details: json!({
                "replaced": diff.replaced,
                "dropped": diff.dropped,
                "inserted": diff.inserted,
                "dataWritten": diff.data,
                "delivered": diff.delivered,
                "wouldHaveDelivered": diff.would_have,
            }),
        })
    }
}

impl UnsettledStream for Mutex<StreamDiff> {
    fn settle_cut(&self, processor_id: &str) -> Option<ShadowDecision> {
        let v = self
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .settle(true)?;
        Some(ShadowDecision {
            processor_id: processor_id.to_owned(),
            hook: Hook::OutputStream,
            action: v.action,
            reason: v.reason,
            details: v.details,
        })
    }
}

/// What a hook call in shadow came to.
enum Returned<T> {
    /// The hook returned its outcome.
    Outcome(T),
    /// The hook returned a warning, which is reported as any warning is.
    Warning(Abort),
    /// The hook aborted.
    Aborted(Verdict),
    /// The hook failed.
    Failed(crate::error::BoxError),
    /// The hook panicked.
    Panicked(String),
}

impl<T> Returned<T> {
    /// What a hook's call `ran` to; a panic was caught, as the runner catches it. An abort
    /// asking for a retry is a retry at the hooks that can reject a step (`process_input_step`,
    /// `process_output_step`, `process_tool_call`), and an abort elsewhere.
    fn of(id: &str, hook: Hook, ran: std::thread::Result<Result<T, ProcessorError>>) -> Self {
        match ran {
            Ok(Ok(outcome)) => Returned::Outcome(outcome),
            Ok(Err(ProcessorError::Warning(warning))) => Returned::Warning(warning),
            Ok(Err(ProcessorError::Abort(abort))) => {
                let tw = abort.into_tripwire(id);
                let retries =
                    tw.retry && matches!(hook, Hook::InputStep | Hook::OutputStep | Hook::ToolCall);
                let (action, what) = match retries {
                    true => (ShadowAction::Retry, "rejected the step for a retry"),
                    false => (ShadowAction::Block, "aborted the run"),
                };
                Returned::Aborted(Verdict {
                    action,
                    reason: format!("would have {what}: {}", tw.reason),
                    details: json!({
                        "reason": tw.reason,
                        "retry": tw.retry,
                        "metadata": tw.metadata,
                        "raisedBy": tw.processor_id,
                    }),
                })
            }
            Ok(Err(ProcessorError::Failed(error))) => Returned::Failed(error),
            Err(panic) => Returned::Panicked(panic_message(&*panic)),
        }
    }

    /// A failure or a panic as the decision it is where it would end the run (every hook
    /// but the stream hook, whose failures pass the chunk on).
    fn stopped(self) -> Result<Self, Verdict> {
        let failed = |error: String| Verdict {
            action: ShadowAction::Fail,
            reason: format!("would have failed the run: {error}"),
            details: json!({ "error": error }),
        };
        match self {
            Returned::Aborted(v) => Err(v),
            Returned::Failed(e) => Err(failed(e.to_string())),
            Returned::Panicked(message) => Err(failed(format!("it panicked: {message}"))),
            other => Ok(other),
        }
    }
}

/// Calls `p`'s hook on `cx`, its panic caught.
async fn call<C: HookCx>(
    p: &dyn DynProcessor,
    cx: &mut C,
    state: &mut (dyn Any + Send),
    reads: bool,
    report: &Reporter,
    slot: &mut FutureSlot,
) -> std::thread::Result<Result<C::Outcome, ProcessorError>> {
    let args = cx.args(state, reads, report);
    match std::panic::catch_unwind(AssertUnwindSafe(|| C::call(p, args, Some(slot)))) {
        Ok(Called::Ready(result)) => Ok(result),
        Ok(Called::Waiting(future)) => AssertUnwindSafe(future).catch_unwind().await,
        Err(panic) => Err(panic),
    }
}

impl<P: Processor> Shadow<P> {
    /// Records a decision of `hook`.
    fn record(&self, report: &Reporter, hook: Hook, v: Verdict) {
        report.record_shadow(ShadowDecision {
            processor_id: self.id().to_owned(),
            hook,
            action: v.action,
            reason: v.reason,
            details: v.details,
        });
    }
}

impl<P: Processor> Composite for Shadow<P> {
    type State = ShadowState<P::State>;

    /// Runs the processor on a lent copy of the hook's context, and records what it decided:
    /// its abort or failure, else what the context judges of its outcome, else its edits to
    /// the message list. A warning is reported as any warning is.
    async fn drive<H: HookCx>(
        &self,
        cx: &mut H,
        state: &mut Self::State,
        report: &Reporter,
    ) -> Result<bool, Halt> {
        let reads = P::READS_MESSAGES.contains(H::HOOK);
        let mut lent = cx.lend();
        let ran = call(
            &self.inner,
            &mut lent,
            &mut state.inner,
            reads,
            report,
            &mut state.slot,
        )
        .await;
        let list = cx.take_back(lent);
        let edited = list.as_ref() != cx.list();
        let edit = || Verdict::change("would have edited the message list", Value::Null);
        let verdict = match Returned::of(self.id(), H::HOOK, ran).stopped() {
            Ok(Returned::Outcome(outcome)) => {
                cx.judge(outcome).or_else(|| edited.then(edit).flatten())
            }
            Ok(Returned::Warning(w)) => {
                report.violation(&w.into_tripwire(self.id()), ViolationKind::Warn);
                edited.then(edit).flatten()
            }
            Ok(_) => None,
            Err(v) => Some(v),
        };
        if let Some(v) = verdict {
            self.record(report, H::HOOK, v);
        }
        Ok(false)
    }

    /// Runs the processor on the chunk and counts what it would have done to the step's
    /// stream; the chunk passes on as it came.
    async fn stream(
        &self,
        args: OutputStreamArgs<'_, Self::State>,
    ) -> Result<StreamAction, ProcessorError> {
        let OutputStreamArgs {
            chunk,
            stream_history,
            message_list,
            request_context,
            retry_count,
            writer: _,
            state,
            report,
        } = args;
        let mut data = Vec::new();
        let call = self.inner.process_output_stream(OutputStreamArgs {
            chunk,
            stream_history,
            message_list,
            request_context: &mut *request_context,
            retry_count,
            writer: DataWriter { buf: &mut data },
            state: &mut state.inner,
            report,
        });
        let ran = AssertUnwindSafe(call).catch_unwind().await;
        let returned = Returned::of(self.id(), Hook::OutputStream, ran);
        let mut diff = state.stream.lock().unwrap_or_else(PoisonError::into_inner);
        let step_start = matches!(chunk.kind, ChunkKind::StepStart { .. });
        if step_start && diff.parked {
            // The step before ended with its `step-finish`, and no `finish` came after it.
            if let Some(v) = diff.settle(false) {
                self.record(report, Hook::OutputStream, v);
            }
        }
        let mut passed_on = Ok(StreamAction::Pass);
        let counted = !diff.stopped;
        if counted {
            diff.data += u32::try_from(data.len()).unwrap_or(u32::MAX);
        }
        match returned {
            Returned::Outcome(action) if counted => diff.see(chunk, action),
            Returned::Outcome(_) => {}
            // As when it is applied: a warning is reported, a failure passes the chunk on.
            Returned::Warning(w) => {
                if counted {
                    diff.see(chunk, StreamAction::Pass);
                }
                passed_on = Err(ProcessorError::Warning(w));
            }
            Returned::Failed(e) => {
                if counted {
                    diff.see(chunk, StreamAction::Pass);
                }
                passed_on = Err(ProcessorError::Failed(e));
            }
            stopped @ (Returned::Aborted(_) | Returned::Panicked(_)) if counted => {
                diff.stopped = true;
                if let Err(v) = stopped.stopped() {
                    self.record(report, Hook::OutputStream, v);
                }
            }
            Returned::Aborted(_) | Returned::Panicked(_) => {}
        }
        match chunk.kind {
            ChunkKind::StepFinish { .. } => diff.parked = true,
            ChunkKind::Finish { .. } => {
                if let Some(v) = diff.settle(false) {
                    self.record(report, Hook::OutputStream, v);
                }
            }
            _ => {}
        }
        drop(diff);
        if !state.registered {
            state.registered = true;
            let diff: Arc<dyn UnsettledStream> = state.stream.clone();
            report.watch_shadow_stream(self.id(), diff);
        }
        passed_on
    }
}

impl<P: Processor> Processor for Shadow<P> {
    type State = ShadowState<P::State>;
    const HOOKS: Hooks = P::HOOKS;
    // No fixed id: one given with `with_id` replaces the processor's.
    const STATIC_ID: Option<&'static str> = None;
    /// The processor's, and the step's messages, read for their ids.
    const READS_MESSAGES: Hooks = P::READS_MESSAGES.with(Hooks::OUTPUT_STEP);
    const SYNC_HOOKS: Hooks = P::SYNC_HOOKS;

    fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_else(|| self.inner.id())
    }

    fn hooks(&self) -> Hooks {
        self.inner.hooks()
    }

    fn process_data_parts(&self) -> bool {
        self.inner.process_data_parts()
    }

    fn keeps_stream_history(&self) -> bool {
        self.inner.keeps_stream_history()
    }

    // Each hook lends the processor a copy of its context and records what it decided
    // (`Composite::drive` above); the hook returns what changes nothing.
    for_each_hook!(composite_hooks);
}

impl<P: InputProcessor> InputProcessor for Shadow<P> {}
impl<P: OutputProcessor> OutputProcessor for Shadow<P> {}
impl<P: ErrorProcessor> ErrorProcessor for Shadow<P> {}
impl<P: Known> Known for Shadow<P> {
    const HOOKS: Hooks = <P as Known>::HOOKS;
    const STATIC_ID: Option<&'static str> = None;
}

/// Whether `p` is memory in shadow, which cannot be: memory loads and saves the conversation,
/// which is not a decision to record.
pub(crate) fn is_shadowed_memory(p: &dyn DynProcessor) -> bool {
    use crate::memory::Memory;
    use std::any::TypeId;
    let t = p.dyn_type_id();
    t == TypeId::of::<Shadow<Memory>>()
        || t == TypeId::of::<Shadow<Arc<Memory>>>()
        || t == TypeId::of::<Shadow<&'static Memory>>()
}
