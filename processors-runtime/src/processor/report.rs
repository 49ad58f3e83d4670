//! Where processors' aborts and warnings are reported: the `on_violation` callback and the
//! log.

use super::Hook;
use crate::chunk::Usage;
use crate::context::RequestContext;
use crate::tripwire::TripWire;
use serde::Serialize;
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// What processors report to their run: usage and warnings through the request context,
/// what processors in shadow would have done through the run's [`Reporter`].
#[derive(Debug, Default)]
pub(crate) struct RunReports {
    /// What processors' own model calls used, per processor id.
    usage: Mutex<BTreeMap<String, Usage>>,
    /// Warnings reported alongside a result, for the run to hand to `on_violation`.
    warnings: Mutex<Vec<TripWire>>,
    /// What processors in shadow would have done, in order, and how many of them were
    /// handed to `on_violation` already.
    shadowed: Mutex<(Vec<ShadowDecision>, usize)>,
    /// The stream diffs of processors in shadow, by processor id: what their step would have
    /// streamed, settled at the step's end, or when the run ends first.
    streams: Mutex<Vec<(String, Arc<dyn UnsettledStream>)>>,
    /// Whether `warnings` (or `shadowed`) may hold any not yet reported: the run looks after
    /// every hook call, without a lock.
    warned: AtomicBool,
}

impl RunReports {
    /// Whether warnings were reported since the last [`take_warnings`](Self::take_warnings)
    /// (a plain load: the usual answer, no, costs no atomic write).
    #[inline]
    pub(crate) fn has_warnings(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }

    /// The warnings reported since the last call.
    pub(crate) fn take_warnings(&self) -> Vec<TripWire> {
        if !self.warned.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The shadow decisions recorded since the last call (kept for the run's result too).
    pub(crate) fn take_new_shadowed(&self) -> Vec<ShadowDecision> {
        let mut shadowed = self.shadowed.lock().unwrap_or_else(PoisonError::into_inner);
        let (all, reported) = &mut *shadowed;
        let new = all[*reported..].to_vec();
        *reported = all.len();
        new
    }
}

/// What a processor in shadow would have done at one hook call (for a stream, at one step).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ShadowDecision {
    /// The processor's id.
    pub processor_id: String,
    /// The hook that decided.
    #[serde(serialize_with = "hook_name")]
    pub hook: Hook,
    /// What kind of decision.
    pub action: ShadowAction,
    /// What it would have done, in a sentence: "would have aborted the run: …".
    pub reason: String,
    /// What it decided, as JSON: the messages it would have left, the chunks' text it would
    /// have let out, the trip wire's reason, retry flag and metadata, the error.
    pub details: Value,
}

fn hook_name<S: serde::Serializer>(hook: &Hook, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(hook.name())
}

/// The kind of a [`ShadowDecision`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ShadowAction {
    /// It would have stopped something: aborted the run, refused a tool call, held one for
    /// approval.
    Block,
    /// It would have rejected the step and asked the model again with feedback.
    Retry,
    /// It would have changed what passes: messages, the prompt, a tool call or result,
    /// streamed chunks, the step's settings, or answered in the model's place.
    Change,
    /// It failed or panicked, which would have ended the run with an error.
    Fail,
}

impl ShadowAction {
    /// The action's name: `block`, `retry`, `change` or `fail`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ShadowAction::Block => "block",
            ShadowAction::Retry => "retry",
            ShadowAction::Change => "change",
            ShadowAction::Fail => "fail",
        }
    }
}

/// What a processor in shadow would have done at one hook call, before it is given the
/// processor's id and the hook: what a context judges of an outcome it does not apply
/// (`HookCx::judge`).
pub(crate) struct Verdict {
    pub(crate) action: ShadowAction,
    pub(crate) reason: String,
    pub(crate) details: Value,
}

impl Verdict {
    /// A change the processor would have made.
    pub(crate) fn change(reason: impl Into<String>, details: Value) -> Option<Self> {
        Some(Verdict {
            action: ShadowAction::Change,
            reason: reason.into(),
            details,
        })
    }

    /// The messages a hook would have left, when they differ from those it was given.
    pub(crate) fn messages(
        given: &[crate::message::Message],
        returned: Vec<crate::message::Message>,
        what: &str,
    ) -> Option<Self> {
        if returned == given {
            return None;
        }
        Verdict::change(
            format!("would have changed {what}"),
            serde_json::json!({ "messages": returned }),
        )
    }
}

/// A text in a reason, quoted and cut to 80 characters.
pub(crate) fn quote(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// What a stream hook in shadow would have changed in the step the run is in, kept by the
/// run's reports to settle if the run ends before the step's stream does.
pub(crate) trait UnsettledStream: Send + Sync + std::fmt::Debug {
    /// The decision of the step's stream, cut short by the run's end, if it would have
    /// changed anything; the diff starts again.
    fn settle_cut(&self, processor_id: &str) -> Option<ShadowDecision>;
}

/// Whether a violation stopped the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// An abort: the chain stopped.
    Block,
    /// A warning: the processor let the data through.
    Warn,
    /// A processor in [`Shadow`](crate::processor::Shadow) decided something that was
    /// recorded instead of applied; [`Violation::reason`] says what it would have done and
    /// [`Violation::metadata`] carries the [`ShadowDecision`](crate::processor::ShadowDecision)
    /// as JSON.
    Shadow,
}

/// An abort or warning a processor raised, as `on_violation` callbacks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The processor's id.
    pub processor_id: String,
    /// Block or warn.
    pub kind: ViolationKind,
    /// Why.
    pub reason: String,
    /// Whether a retry was asked for.
    pub retry: bool,
    /// The processor's metadata.
    pub metadata: Option<Value>,
}

pub(crate) type ViolationHandler = Arc<dyn Fn(&Violation) + Send + Sync>;

/// Reports violations of one run: logs warnings and calls the agent's `on_violation`.
#[derive(Clone, Default)]
pub(crate) struct Reporter {
    on_violation: Option<ViolationHandler>,
    /// Warnings processors reported through the request context.
    run: Option<Arc<RunReports>>,
}

impl Reporter {
    /// Reports to `on_violation`, when set, and hands it the warnings of `run`.
    pub(crate) fn new(
        on_violation: Option<ViolationHandler>,
        run: Option<Arc<RunReports>>,
    ) -> Self {
        Reporter { on_violation, run }
    }

    /// Reports the warnings processors gave through the request context since the last time.
    #[inline]
    pub(crate) fn flush(&self) {
        if let Some(run) = &self.run
            && run.has_warnings()
        {
            self.report_warnings(run);
        }
    }

    /// [`flush`](Self::flush) when there are warnings.
    #[cold]
    #[inline(never)]
    fn report_warnings(&self, run: &RunReports) {
        for tw in run.take_warnings() {
            self.violation(&tw, ViolationKind::Warn);
        }
        for decision in run.take_new_shadowed() {
            log_shadow(&decision);
            self.notify(Violation {
                processor_id: decision.processor_id.clone(),
                kind: ViolationKind::Shadow,
                reason: decision.reason.clone(),
                retry: decision.action == ShadowAction::Retry,
                metadata: serde_json::to_value(&decision).ok(),
            });
        }
    }

    /// Records what a processor in shadow would have done: the run hands it to `on_violation`
    /// as a [`ViolationKind::Shadow`](crate::processor::ViolationKind::Shadow) when the hook
    /// returns, logs it, and lists it in the result's `shadowed`. Outside a run it is only
    /// logged.
    pub(crate) fn record_shadow(&self, decision: ShadowDecision) {
        match &self.run {
            Some(run) => {
                run.shadowed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
                    .push(decision);
                run.warned.store(true, Ordering::Release);
            }
            None => log_shadow(&decision),
        }
    }

    /// Keeps the stream diff of the processor in shadow `processor_id`, to settle if the run
    /// ends before its step's stream does.
    pub(crate) fn watch_shadow_stream(&self, processor_id: &str, diff: Arc<dyn UnsettledStream>) {
        if let Some(run) = &self.run {
            run.streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((processor_id.to_owned(), diff));
        }
    }

    /// Records what the streams of processors in shadow would have changed in a step the run
    /// ended before settling (a trip wire, a pause, a failure).
    pub(crate) fn settle_shadow_streams(&self) {
        let Some(run) = &self.run else { return };
        let streams = run.streams.lock().unwrap_or_else(PoisonError::into_inner);
        for (id, diff) in streams.iter() {
            if let Some(decision) = diff.settle_cut(id) {
                self.record_shadow(decision);
            }
        }
    }

    /// What processors in shadow would have done during the run, in order.
    pub(crate) fn shadowed(&self) -> Vec<ShadowDecision> {
        (self.run.as_ref())
            .map(|r| {
                r.shadowed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
                    .clone()
            })
            .unwrap_or_default()
    }

    /// Reports an abort or a warning; a panicking callback is caught and logged.
    pub(crate) fn violation(&self, tw: &TripWire, kind: ViolationKind) {
        if kind == ViolationKind::Warn {
            tracing::warn!(processor = %tw.processor_id, reason = %tw.reason, "processor warning");
        }
        if self.on_violation.is_none() {
            return;
        }
        self.notify(Violation {
            processor_id: tw.processor_id.clone(),
            kind,
            reason: tw.reason.clone(),
            retry: tw.retry,
            metadata: tw.metadata.clone(),
        });
    }

    /// Hands `v` to `on_violation`, when set; a panicking callback is caught and logged.
    fn notify(&self, v: Violation) {
        let Some(f) = &self.on_violation else { return };
        if std::panic::catch_unwind(AssertUnwindSafe(|| f(&v))).is_err() {
            tracing::error!(processor = %v.processor_id, "an on_violation callback panicked; the run goes on");
        }
    }
}

/// Logs a shadow decision (the run page lists it with the run's events).
pub(crate) fn log_shadow(d: &ShadowDecision) {
    tracing::info!(
        target: "processors::shadow",
        processor = %d.processor_id,
        hook = d.hook.name(),
        action = d.action.as_str(),
        reason = %d.reason,
        "shadow decision"
    );
}

impl RequestContext {
    /// The run's reports, when the context belongs to a run.
    #[inline]
    fn reports(&self) -> Option<&RunReports> {
        self.run_reports()?.downcast_ref()
    }

    /// Adds what a processor's own model call used (a judging call, an embedding) to the
    /// run's [`GenerateResult::processor_usage`](crate::agent::GenerateResult::processor_usage),
    /// under the processor's id, apart from the agent's model's usage. Outside a run it does
    /// nothing.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::prelude::*;
    ///
    /// /// Pretends to ask a judging model about each input, at 40 tokens a call.
    /// struct Judged;
    /// impl Processor for Judged {
    ///     type State = ();
    ///     const HOOKS: Hooks = Hooks::INPUT;
    ///     fn id(&self) -> &str { "judged" }
    ///     async fn process_input(
    ///         &self,
    ///         args: InputArgs<'_, ()>,
    ///     ) -> Result<InputOutcome, ProcessorError> {
    ///         args.request_context.record_usage("judged", Usage::new(30, 10));
    ///         Ok(InputOutcome::Unchanged)
    ///     }
    /// }
    /// impl InputProcessor for Judged {}
    ///
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([Turn::text("hi").usage(5, 2)]))
    ///     .input(Judged)
    ///     .build()
    ///     .unwrap();
    /// let result = agent.generate("hello").await.unwrap();
    /// assert_eq!(result.usage.total_tokens, 7);
    /// assert_eq!(result.processor_usage["judged"].total_tokens, 40);
    /// # });
    /// ```
    pub fn record_usage(&self, processor_id: &str, usage: Usage) {
        let Some(run) = self.reports() else {
            return;
        };
        let mut meter = run.usage.lock().unwrap_or_else(PoisonError::into_inner);
        match meter.get_mut(processor_id) {
            Some(total) => *total += usage,
            None => {
                meter.insert(processor_id.to_owned(), usage);
            }
        }
    }

    /// Reports a warning while the hook returns a result: a hook that changed something and
    /// also has something to warn about (a part it could not check) cannot return both, since
    /// a returned warning leaves everything unchanged. The run hands it to `on_violation`
    /// when the hook returns (a stream hook's, when the step's stream ends), as it does a
    /// returned warning. Outside a run it is only logged.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::prelude::*;
    /// use std::sync::{Arc, Mutex};
    ///
    /// /// Drops empty answers, and warns about answers it did not look at.
    /// struct Tidy;
    /// impl Processor for Tidy {
    ///     type State = ();
    ///     const HOOKS: Hooks = Hooks::OUTPUT_RESULT;
    ///     fn id(&self) -> &str { "tidy" }
    ///     async fn process_output_result(
    ///         &self,
    ///         args: OutputResultArgs<'_, ()>,
    ///     ) -> Result<OutputOutcome, ProcessorError> {
    ///         let kept: Vec<Message> =
    ///             args.messages.into_iter().filter(|m| !m.text().is_empty()).collect();
    ///         let warning = Abort::new().reason("one answer was too long to check");
    ///         args.request_context.report_warning(warning.into_tripwire("tidy"));
    ///         Ok(OutputOutcome::Messages(kept))
    ///     }
    /// }
    /// impl OutputProcessor for Tidy {}
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let log = seen.clone();
    /// let agent = Agent::builder()
    ///     .model(ScriptedModel::new([Turn::text("hi")]))
    ///     .output(Tidy)
    ///     .on_violation(move |v: &Violation| log.lock().unwrap().push(v.reason.clone()))
    ///     .build()
    ///     .unwrap();
    /// agent.generate("hello").await.unwrap();
    /// assert_eq!(*seen.lock().unwrap(), ["one answer was too long to check"]);
    /// # });
    /// ```
    pub fn report_warning(&self, warning: TripWire) {
        match self.reports() {
            Some(run) => {
                run.warnings
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(warning);
                run.warned.store(true, Ordering::Release);
            }
            None => tracing::warn!(
                processor = %warning.processor_id,
                reason = %warning.reason,
                "processor warning (outside a run)"
            ),
        }
    }

    /// Starts a run's reports (whatever an earlier run left), and gives them to the run.
    pub(crate) fn begin_run(&mut self) -> Arc<RunReports> {
        let run = Arc::new(RunReports::default());
        self.set_run_reports(Arc::clone(&run) as Arc<dyn Any + Send + Sync>);
        run
    }

    /// What processors reported using during the run.
    pub(crate) fn processor_usage(&self) -> BTreeMap<String, Usage> {
        self.reports()
            .map(|r| {
                r.usage
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .unwrap_or_default()
    }
}
