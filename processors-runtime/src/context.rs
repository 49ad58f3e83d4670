//! [`RequestContext`]: typed values of one request.

use crate::chunk::Usage;
use crate::processor::ShadowDecision;
use crate::processor::shadow::StreamDiff;
use crate::tripwire::TripWire;
use serde_json::Value;
use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Values the caller attaches to one request: the memory thread and resource, named JSON
/// values, and typed values.
///
/// Cloning is cheap (typed values are shared).
///
/// ```
/// use processors_runtime::RequestContext;
/// #[derive(Debug, PartialEq)]
/// struct Tenant(&'static str);
/// let cx = RequestContext::new()
///     .with_thread("t-1", "user-7")
///     .with(Tenant("acme"))
///     .with_value("tier", serde_json::json!("gold"));
/// assert_eq!(cx.get::<Tenant>(), Some(&Tenant("acme")));
/// assert_eq!(cx.thread_id(), Some("t-1"));
/// assert_eq!(cx.value("tier").unwrap(), "gold");
/// ```
#[derive(Clone, Default)]
pub struct RequestContext {
    thread_id: Option<String>,
    resource_id: Option<String>,
    values: HashMap<String, Value>,
    typed: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    /// What processors report to the run besides their results (one per run, shared by the
    /// copies workflows make); `None` outside a run.
    run: Option<Arc<RunReports>>,
}

/// What processors report to their run through the request context.
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
    streams: Mutex<Vec<(String, Arc<Mutex<StreamDiff>>)>>,
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

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("thread_id", &self.thread_id)
            .field("resource_id", &self.resource_id)
            .field("values", &self.values)
            .field("typed", &self.typed.len())
            .finish()
    }
}

impl RequestContext {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the memory thread and the resource (user, tenant) it belongs to.
    pub fn with_thread(
        mut self,
        thread_id: impl Into<String>,
        resource_id: impl Into<String>,
    ) -> Self {
        self.thread_id = Some(thread_id.into());
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Sets the resource (user, tenant) alone, for a call that belongs to no thread: what
    /// processors scoped by resource read (a budget per tenant), memory loading nothing.
    ///
    /// ```
    /// use processors_runtime::RequestContext;
    /// let cx = RequestContext::new().with_resource("acme");
    /// assert_eq!((cx.thread_id(), cx.resource_id()), (None, Some("acme")));
    /// ```
    pub fn with_resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }

    /// Adds a typed value (one per type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds a named JSON value.
    pub fn with_value(mut self, key: impl Into<String>, value: Value) -> Self {
        self.values.insert(key.into(), value);
        self
    }

    /// Inserts a typed value, replacing one of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.typed.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The typed value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.typed.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// A named JSON value.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// Sets a named JSON value.
    pub fn set_value(&mut self, key: impl Into<String>, value: Value) {
        self.values.insert(key.into(), value);
    }

    /// The memory thread id.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The resource id.
    pub fn resource_id(&self) -> Option<&str> {
        self.resource_id.as_deref()
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
        let Some(run) = &self.run else {
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
        match &self.run {
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
            None => crate::processor::report::log_shadow(&decision),
        }
    }

    /// Keeps the stream diff of the processor in shadow `processor_id`, to settle if the run
    /// ends before its step's stream does.
    pub(crate) fn watch_shadow_stream(&self, processor_id: &str, diff: Arc<Mutex<StreamDiff>>) {
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
            if let Some(decision) = crate::processor::shadow::settle_cut(id, diff) {
                self.record_shadow(decision);
            }
        }
    }

    /// What processors in shadow would have done during the run, in order.
    pub(crate) fn shadowed(&self) -> Vec<ShadowDecision> {
        self.run
            .as_ref()
            .map(|r| {
                r.shadowed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
                    .clone()
            })
            .unwrap_or_default()
    }

    /// Starts a run's reports (whatever an earlier run left), and gives them to the run.
    pub(crate) fn begin_run(&mut self) -> Arc<RunReports> {
        let run = Arc::new(RunReports::default());
        self.run = Some(Arc::clone(&run));
        run
    }

    /// What processors reported using during the run.
    pub(crate) fn processor_usage(&self) -> BTreeMap<String, Usage> {
        self.run
            .as_ref()
            .map(|r| {
                r.usage
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone()
            })
            .unwrap_or_default()
    }
}
