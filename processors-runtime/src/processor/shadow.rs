//! [`Shadow`]: a processor that runs as usual, but whose decisions are recorded instead of
//! applied.
//!
//! A guard is put in shadow before it is trusted: it sees every message and chunk it would
//! see, calls its judge, keeps its state, and decides; what it decides (an abort, a retry, a
//! changed message, a rewritten call, a replaced chunk, a failure or a panic) reaches
//! `on_violation` as a [`ViolationKind::Shadow`](super::ViolationKind::Shadow), the log and
//! the run page, and the result's [`shadowed`](crate::agent::GenerateResult::shadowed), while
//! the run goes on as if the processor were not there. `docs/semantics.md` ("Shadow") gives the
//! rules.

use super::error::panic_message;
use super::report::UnsettledStream;
use super::*;
use crate::chunk::{Chunk, ChunkKind};
use crate::context::RequestContext;
use crate::message::Message;
use futures::FutureExt;
use serde_json::{Value, json};
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

/// A text in a reason, quoted and cut to 80 characters.
fn quote(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{:?}…", &text[..end]),
        None => format!("{text:?}"),
    }
}

/// A decision, before it is given the processor's id and the hook.
struct Verdict {
    action: ShadowAction,
    reason: String,
    details: Value,
}

impl Verdict {
    fn change(reason: impl Into<String>, details: Value) -> Option<Self> {
        Some(Verdict {
            action: ShadowAction::Change,
            reason: reason.into(),
            details,
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

/// Sorts what `hook` returned; a panic is caught here, as the runner would catch it. An abort
/// asking for a retry is a retry at the hooks that can reject a step (`process_input_step`,
/// `process_output_step`, `process_tool_call`), and an abort elsewhere.
async fn call<T>(
    id: &str,
    hook: Hook,
    returned: impl Future<Output = Result<T, ProcessorError>>,
) -> Returned<T> {
    match AssertUnwindSafe(returned).catch_unwind().await {
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

impl<P: Processor> Shadow<P> {
    /// Records a decision of `hook`.
    fn record(&self, cx: &RequestContext, hook: Hook, v: Verdict) {
        cx.record_shadow(ShadowDecision {
            processor_id: self.id().to_owned(),
            hook,
            action: v.action,
            reason: v.reason,
            details: v.details,
        });
    }

    /// Records what a hook other than the stream hook decided: its abort or failure, else
    /// what `changed` finds in its outcome, else its edits to the message list (`edited`,
    /// which the caller found by comparing the list it lent with the run's). A warning is
    /// handed back to be reported.
    fn settle<T>(
        &self,
        hook: Hook,
        cx: &RequestContext,
        returned: Returned<T>,
        edited: bool,
        changed: impl FnOnce(T) -> Option<Verdict>,
    ) -> Result<(), ProcessorError> {
        let edit = || Verdict::change("would have edited the message list", Value::Null);
        let (verdict, warning) = match returned.stopped() {
            Ok(Returned::Outcome(outcome)) => (
                changed(outcome).or_else(|| edited.then(edit).flatten()),
                None,
            ),
            Ok(Returned::Warning(w)) => (edited.then(edit).flatten(), Some(w)),
            Ok(_) => (None, None),
            Err(v) => (Some(v), None),
        };
        if let Some(v) = verdict {
            self.record(cx, hook, v);
        }
        warning.map_or(Ok(()), |w| Err(ProcessorError::Warning(w)))
    }
}

/// The messages a hook would have left, when they differ from those it was given.
fn messages_changed(given: &[Message], returned: Vec<Message>, what: &str) -> Option<Verdict> {
    if returned == given {
        return None;
    }
    Verdict::change(
        format!("would have changed {what}"),
        json!({ "messages": returned }),
    )
}

impl<P: Processor> Processor for Shadow<P> {
    type State = ShadowState<P::State>;
    const HOOKS: Hooks = P::HOOKS;
    // No fixed id: one given with `with_id` replaces the processor's.
    const STATIC_ID: Option<&'static str> = None;
    const READS_MESSAGES: Hooks = P::READS_MESSAGES;
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

    async fn process_input(
        &self,
        args: InputArgs<'_, Self::State>,
    ) -> Result<InputOutcome, ProcessorError> {
        let InputArgs {
            messages,
            system_messages,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let (given, given_system) = (messages.clone(), system_messages.clone());
        let mut list = message_list.clone();
        let returned = call(
            self.id(),
            Hook::Input,
            self.inner.process_input(InputArgs {
                messages,
                system_messages,
                message_list: &mut list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let edited = list != *message_list;
        self.settle(
            Hook::Input,
            request_context,
            returned,
            edited,
            |o| match o {
                InputOutcome::Unchanged => None,
                InputOutcome::Messages(m) => messages_changed(&given, m, "the input"),
                InputOutcome::MessagesAndSystem { messages, system }
                    if messages == given && system == given_system =>
                {
                    None
                }
                InputOutcome::MessagesAndSystem { messages, system } => Verdict::change(
                    "would have changed the input and the system messages",
                    json!({ "messages": messages, "systemMessages": system }),
                ),
            },
        )?;
        Ok(InputOutcome::Unchanged)
    }

    async fn process_input_step(
        &self,
        args: InputStepArgs<'_, Self::State>,
    ) -> Result<StepOverrides, ProcessorError> {
        let InputStepArgs {
            step_number,
            steps,
            messages,
            system_messages,
            config,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let (given, given_system) = (messages.clone(), system_messages.clone());
        let mut list = message_list.clone();
        let returned = call(
            self.id(),
            Hook::InputStep,
            self.inner.process_input_step(InputStepArgs {
                step_number,
                steps,
                messages,
                system_messages,
                config,
                message_list: &mut list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let edited = list != *message_list;
        self.settle(Hook::InputStep, request_context, returned, edited, |o| {
            let same_model = |m: &Arc<dyn crate::model::LanguageModel>| {
                m.provider() == config.model.provider() && m.model_id() == config.model.model_id()
            };
            let names = |tools: &[Arc<dyn crate::tool::Tool>]| -> Vec<String> {
                tools.iter().map(|t| t.name().to_owned()).collect()
            };
            let set = [
                ("model", o.model.as_ref().is_some_and(|m| !same_model(m))),
                (
                    "tools",
                    o.tools
                        .as_ref()
                        .is_some_and(|t| names(t) != names(&config.tools)),
                ),
                (
                    "tool_choice",
                    o.tool_choice
                        .as_ref()
                        .is_some_and(|c| *c != config.tool_choice),
                ),
                (
                    "active_tools",
                    o.active_tools
                        .as_ref()
                        .is_some_and(|a| Some(a) != config.active_tools.as_ref()),
                ),
                ("messages", o.messages.as_ref().is_some_and(|m| *m != given)),
                (
                    "system_messages",
                    o.system_messages
                        .as_ref()
                        .is_some_and(|m| *m != given_system),
                ),
                (
                    "provider_options",
                    o.provider_options
                        .as_ref()
                        .is_some_and(|p| *p != config.provider_options),
                ),
                (
                    "model_settings",
                    o.model_settings
                        .as_ref()
                        .is_some_and(|m| *m != config.model_settings),
                ),
            ];
            let set: Vec<&str> = set.iter().filter(|(_, s)| *s).map(|(n, _)| *n).collect();
            if set.is_empty() {
                return None;
            }
            Verdict::change(
                format!("would have set the step's {}", set.join(", ")),
                json!({
                    "overrides": set,
                    "model": o.model.map(|m| m.model_id().to_owned()),
                    "messages": o.messages,
                    "systemMessages": o.system_messages,
                    "activeTools": o.active_tools,
                }),
            )
        })?;
        Ok(StepOverrides::default())
    }

    async fn process_llm_request(
        &self,
        args: LlmRequestArgs<'_, Self::State>,
    ) -> Result<LlmRequestAction, ProcessorError> {
        let LlmRequestArgs {
            step_number,
            request,
            model,
            request_context,
            state,
            report,
        } = args;
        let returned = call(
            self.id(),
            Hook::LlmRequest,
            self.inner.process_llm_request(LlmRequestArgs {
                step_number,
                request,
                model,
                request_context: &mut *request_context,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        self.settle(
            Hook::LlmRequest,
            request_context,
            returned,
            false,
            |o| match o {
                LlmRequestAction::Continue => None,
                LlmRequestAction::Prompt(prompt) if prompt == request.prompt => None,
                LlmRequestAction::Request(new) if *new == *request => None,
                LlmRequestAction::Request(new) => Verdict::change(
                    "would have rewritten the request",
                    json!({ "request": new }),
                ),
                LlmRequestAction::Prompt(prompt) => Verdict::change(
                    "would have rewritten the prompt",
                    json!({ "prompt": prompt }),
                ),
                LlmRequestAction::Respond(response) => {
                    let text: String = response
                        .chunks
                        .iter()
                        .filter_map(|c| match c {
                            ChunkKind::TextDelta { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    Verdict::change(
                        format!("would have answered in the model's place: {}", quote(&text)),
                        json!({ "text": text, "chunks": response.chunks.len() }),
                    )
                }
            },
        )?;
        Ok(LlmRequestAction::Continue)
    }

    async fn process_llm_response(
        &self,
        args: LlmResponseArgs<'_, Self::State>,
    ) -> Result<(), ProcessorError> {
        let LlmResponseArgs {
            step_number,
            request,
            response,
            delivered,
            from_cache,
            request_context,
            state,
            report,
        } = args;
        let returned = call(
            self.id(),
            Hook::LlmResponse,
            self.inner.process_llm_response(LlmResponseArgs {
                step_number,
                request,
                response,
                delivered,
                from_cache,
                request_context: &mut *request_context,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        self.settle(Hook::LlmResponse, request_context, returned, false, |()| {
            None
        })
    }

    async fn process_output_stream(
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
        let returned = call(
            self.id(),
            Hook::OutputStream,
            self.inner.process_output_stream(OutputStreamArgs {
                chunk,
                stream_history,
                message_list,
                request_context: &mut *request_context,
                retry_count,
                writer: DataWriter { buf: &mut data },
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let mut diff = state.stream.lock().unwrap_or_else(PoisonError::into_inner);
        let step_start = matches!(chunk.kind, ChunkKind::StepStart { .. });
        if step_start && diff.parked {
            // The step before ended with its `step-finish`, and no `finish` came after it.
            if let Some(v) = diff.settle(false) {
                self.record(request_context, Hook::OutputStream, v);
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
                    self.record(request_context, Hook::OutputStream, v);
                }
            }
            Returned::Aborted(_) | Returned::Panicked(_) => {}
        }
        match chunk.kind {
            ChunkKind::StepFinish { .. } => diff.parked = true,
            ChunkKind::Finish { .. } => {
                if let Some(v) = diff.settle(false) {
                    self.record(request_context, Hook::OutputStream, v);
                }
            }
            _ => {}
        }
        drop(diff);
        if !state.registered {
            state.registered = true;
            let diff: Arc<dyn UnsettledStream> = state.stream.clone();
            request_context.watch_shadow_stream(self.id(), diff);
        }
        passed_on
    }

    async fn process_output_step(
        &self,
        args: OutputStepArgs<'_, Self::State>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let OutputStepArgs {
            step_number,
            messages,
            text,
            finish_reason,
            usage,
            run_usage,
            tool_calls,
            steps,
            system_messages,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let given = messages.clone();
        let mut list = message_list.clone();
        let returned = call(
            self.id(),
            Hook::OutputStep,
            self.inner.process_output_step(OutputStepArgs {
                step_number,
                messages,
                text,
                finish_reason,
                usage,
                run_usage,
                tool_calls,
                steps,
                system_messages,
                message_list: &mut list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let edited = list != *message_list;
        self.settle(
            Hook::OutputStep,
            request_context,
            returned,
            edited,
            |o| match o {
                OutputOutcome::Unchanged => None,
                OutputOutcome::Messages(m) => messages_changed(&given, m, "the step's messages"),
            },
        )?;
        Ok(OutputOutcome::Unchanged)
    }

    async fn process_tool_call(
        &self,
        args: ToolCallArgs<'_, Self::State>,
    ) -> Result<ToolCallAction, ProcessorError> {
        let ToolCallArgs {
            tool_call,
            tool,
            step_number,
            steps,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let returned = call(
            self.id(),
            Hook::ToolCall,
            self.inner.process_tool_call(ToolCallArgs {
                tool_call,
                tool,
                step_number,
                steps,
                message_list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let name = &tool_call.tool_name;
        self.settle(Hook::ToolCall, request_context, returned, false, |o| {
            let (action, reason, details) = match o {
                ToolCallAction::Continue => return None,
                ToolCallAction::Rewrite(args) if args == tool_call.args => return None,
                ToolCallAction::Rewrite(args) => (
                    ShadowAction::Change,
                    format!("would have rewritten the arguments of `{name}`"),
                    json!({ "args": args }),
                ),
                ToolCallAction::Respond(answer) => (
                    ShadowAction::Change,
                    format!("would have answered `{name}` in the tool's place"),
                    json!({ "answer": answer }),
                ),
                ToolCallAction::Refuse(why) => (
                    ShadowAction::Block,
                    format!("would have refused `{name}`: {why}"),
                    json!({ "refusal": why }),
                ),
                ToolCallAction::RequireApproval { reason, .. } => (
                    ShadowAction::Block,
                    format!("would have asked for approval of `{name}`: {reason}"),
                    json!({ "approval": reason }),
                ),
            };
            let mut details = details;
            details["toolCallId"] = json!(tool_call.tool_call_id);
            Some(Verdict {
                action,
                reason,
                details,
            })
        })?;
        Ok(ToolCallAction::Continue)
    }

    async fn process_tool_result(
        &self,
        args: ToolResultArgs<'_, Self::State>,
    ) -> Result<ToolResultAction, ProcessorError> {
        let ToolResultArgs {
            tool_call,
            result,
            model_output,
            is_error,
            request_context,
            state,
            report,
        } = args;
        let returned = call(
            self.id(),
            Hook::ToolResult,
            self.inner.process_tool_result(ToolResultArgs {
                tool_call,
                result,
                model_output,
                is_error,
                request_context: &mut *request_context,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let name = &tool_call.tool_name;
        self.settle(Hook::ToolResult, request_context, returned, false, |o| {
            let (what, details) = match o {
                ToolResultAction::Keep => return None,
                ToolResultAction::Replace(v) if v == *result => return None,
                ToolResultAction::ForModel(v) if Some(&v) == model_output => return None,
                ToolResultAction::Replace(v) => ("the result", json!({ "result": v })),
                ToolResultAction::ForModel(v) => {
                    ("the model's copy of the result", json!({ "forModel": v }))
                }
                ToolResultAction::ReplaceWithCopy { result, for_model } => (
                    "the result and the model's copy",
                    json!({ "result": result, "forModel": for_model }),
                ),
            };
            Verdict::change(format!("would have replaced {what} of `{name}`"), details)
        })?;
        Ok(ToolResultAction::Keep)
    }

    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, Self::State>,
    ) -> Result<OutputOutcome, ProcessorError> {
        let OutputResultArgs {
            messages,
            result,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let given = messages.clone();
        let mut list = message_list.clone();
        let returned = call(
            self.id(),
            Hook::OutputResult,
            self.inner.process_output_result(OutputResultArgs {
                messages,
                result,
                message_list: &mut list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let edited = list != *message_list;
        self.settle(
            Hook::OutputResult,
            request_context,
            returned,
            edited,
            |o| match o {
                OutputOutcome::Unchanged => None,
                OutputOutcome::Messages(m) => messages_changed(&given, m, "the response"),
            },
        )?;
        Ok(OutputOutcome::Unchanged)
    }

    async fn process_api_error(
        &self,
        args: ApiErrorArgs<'_, Self::State>,
    ) -> Result<ApiErrorAction, ProcessorError> {
        let ApiErrorArgs {
            error,
            step_number,
            steps,
            message_list,
            request_context,
            retry_count,
            state,
            report,
        } = args;
        let mut list = message_list.clone();
        let returned = call(
            self.id(),
            Hook::ApiError,
            self.inner.process_api_error(ApiErrorArgs {
                error,
                step_number,
                steps,
                message_list: &mut list,
                request_context: &mut *request_context,
                retry_count,
                state: &mut state.inner,
                report,
            }),
        )
        .await;
        let edited = list != *message_list;
        self.settle(
            Hook::ApiError,
            request_context,
            returned,
            edited,
            |o| match o {
                ApiErrorAction::Unhandled => None,
                ApiErrorAction::Retry => Verdict::change(
                    format!("would have called the model again after: {error}"),
                    json!({ "status": error.status }),
                ),
            },
        )?;
        Ok(ApiErrorAction::Unhandled)
    }
}

// Each of the hooks is written above: a hook added to the table needs its method here.
const _: () = assert!(Hook::ALL.len() == 10);

impl<P: InputProcessor> InputProcessor for Shadow<P> {}
impl<P: OutputProcessor> OutputProcessor for Shadow<P> {}
impl<P: ErrorProcessor> ErrorProcessor for Shadow<P> {}
impl<P: crate::processor::known::Known> crate::processor::known::Known for Shadow<P> {
    const HOOKS: Hooks = <P as crate::processor::known::Known>::HOOKS;
    const STATIC_ID: Option<&'static str> = None;
}
