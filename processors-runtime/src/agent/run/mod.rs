//! The agent loop: the input processors, then steps (input-step processors, the model call,
//! the stream, output-step processors, tools) until the model stops, with retries, then the
//! output result. Each hook's chain is in [`crate::runner::hooks`]; how a run that stops early
//! ends is decided in one place, [`Run::end`].

use super::call::{Call, Limits, Lists};
use super::options::GenerateOptions;
use super::tools;
use super::*;
use crate::chunk::{ChunkKind, FinishReason, RunId, StepRetry, Usage};
use crate::message::{MessageList, MessageSource, Part, Role, Text, concat_texts};
use crate::model::{ApiError, ModelRequest, ModelStream};
use crate::processor::state::StateMap;
use crate::processor::{FutureSlot, Hook, LlmResponse, Reporter, StepConfig, ViolationKind};
use crate::runner::hooks::{self, Response, Step};
use crate::runner::outbox::{Handoff, Outbox, catch_up};
use crate::runner::stream::{Pulled, PumpCx, StepAcc, StreamDriver, pump, replay};
use crate::runner::{Halt, Scope};
use crate::step::{RunSummary, StepResult};
use crate::tripwire::TripWire;
use tracing::Instrument;

/// The tag of retry feedback system messages.
pub const FEEDBACK_TAG: &str = "processor-feedback";

/// The feedback the next attempt of a rejected step carries.
fn feedback_text(reason: &str) -> String {
    format!(
        "[Processor Feedback] Your previous response was not accepted: {reason}. Please try again with the feedback in mind."
    )
}

/// Why a run stops before its end.
enum Stop {
    /// A processor aborted: the run ends with its trip wire.
    Tripwire(TripWire),
    /// A processor rejected the step at a hook whose abort may ask for the step again.
    Rejected(TripWire),
    /// The run failed.
    Failed(AgentError),
}

impl From<Halt> for Stop {
    fn from(h: Halt) -> Self {
        match h {
            Halt::Abort(tw) => Stop::Tripwire(tw),
            Halt::Failed(e) => Stop::Failed(e.into()),
        }
    }
}

impl From<AgentError> for Stop {
    fn from(e: AgentError) -> Self {
        Stop::Failed(e)
    }
}

/// A halt at a hook whose abort rejects the step (`process_input_step`,
/// `process_output_step`).
fn rejecting(h: Halt) -> Stop {
    match h {
        Halt::Abort(tw) => Stop::Rejected(tw),
        other => other.into(),
    }
}

/// A step that started and was not accepted yet: recorded with the trip wire if the run ends
/// in one, or as a retry if it is rejected.
struct OpenStep {
    number: u32,
    usage: Usage,
    /// Whether its `step-start` was sent (the model was called).
    started: bool,
    /// Whether its chunks go through the stream processors (not for a replayed response).
    through: bool,
}

struct Run {
    s: Scope,
    out: Outbox,
    /// The run's id as the result gives it (the chunks carry `out`'s copy).
    run_id: String,
    /// Data written outside a step (at the start of the run, or after a step's tools with no
    /// tool message to join): saved with the next accepted answer, kept if an attempt is
    /// rejected.
    carried: Vec<Part>,
    /// What the framework warned about.
    warnings: Vec<String>,
    usage: Usage,
    open: Option<OpenStep>,
}

/// Awaits a future inside a span; without the span's wrapper (a copy of the future) when no
/// subscriber listens, where entering the span would do nothing.
macro_rules! in_span {
    ($future:expr, $span:expr) => {
        match $span.is_disabled() {
            true => $future.await,
            false => $future.instrument($span.clone()).await,
        }
    };
}

/// [`StreamDriver::emit`] in the caller's own future: a chunk that needs no waiting is run
/// through the chain where it is (its future and the moves into it cost more than the work,
/// for the start and end chunks every step sends), then handed over.
macro_rules! emit {
    ($driver:expr, $s:expr, $out:expr, $kind:expr, $through:expr) => {{
        let through = $through;
        match $driver.emits_now(through) {
            true => {
                $driver.emit_now(&mut $s, &mut $out, $kind, through)?;
                $out.hand_over().await;
            }
            false => $driver.emit(&mut $s, &mut $out, $kind, through).await?,
        }
    }};
}

/// A run of the agent on `input`: set up when this is called, driven when the future is
/// polled. The future holds each argument once (an `async fn` would hold its arguments, then
/// its locals again): it is moved, and boxed behind `dyn`, whole.
pub(crate) fn run<I: Pipeline, O: Pipeline, E: Pipeline>(
    inner: Arc<AgentInner<I, O, E>>,
    input: Vec<Message>,
    mut options: GenerateOptions,
    slot: Option<Arc<Handoff>>,
) -> impl Future<Output = Result<GenerateResult, AgentError>> {
    let reports = options.request_context.begin_run();
    let run_id = crate::message::new_id("run");
    let mut run = Run {
        s: Scope {
            states: StateMap::default(),
            list: MessageList::new(),
            cx: std::mem::take(&mut options.request_context),
            report: Reporter::new(inner.on_violation.clone(), Some(reports)),
            // Every run that gets to the model has a step (most have one).
            steps: Vec::with_capacity(1),
            retry_count: 0,
            hooks: FutureSlot::new(),
        },
        out: Outbox::new(RunId::from(run_id.as_str()), slot),
        run_id,
        carried: Vec::new(),
        warnings: Vec::new(),
        usage: Usage::default(),
        open: None,
    };
    async move {
        let span = tracing::info_span!(
            "agent.run",
            agent = %inner.name,
            run_id = %run.out.run_id,
            outcome = tracing::field::Empty,
            steps = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
        );
        // A run that stopped early ends in `end`, a rare and large future (it owns the run):
        // boxed, and awaited once the run's result is out of scope, so that the run's future
        // keeps no room for a result across it.
        let stop = {
            let ended = in_span!(run.start(&inner, &options, input), span);
            run.s.report.flush();
            match ended {
                Ok(result) => {
                    let result = Ok(result);
                    record_outcome(&span, &result);
                    return result;
                }
                Err(stop) => stop,
            }
        };
        let result = Box::pin(run.end(stop).instrument(span.clone())).await;
        record_outcome(&span, &result);
        result
    }
}

/// Records how a run ended on its span, when a subscriber listens.
fn record_outcome(span: &tracing::Span, result: &Result<GenerateResult, AgentError>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(r) => {
            let outcome = match r.tripwire {
                Some(_) => "tripwire",
                None => "completed",
            };
            span.record("outcome", outcome);
            span.record("steps", r.steps.len());
            span.record("gen_ai.usage.input_tokens", r.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", r.usage.output_tokens);
        }
        Err(_) => {
            span.record("outcome", "failed");
        }
    }
}

impl Run {
    /// Sets up the call's lists and limits, then drives the run.
    async fn start<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        options: &GenerateOptions,
        input: Vec<Message>,
    ) -> Result<GenerateResult, Stop> {
        let Call {
            bound,
            limits,
            stream,
            stream_slots,
            active,
        } = Call::prepare(agent, options, &mut self.s.states)?;
        let lists = bound.lists();
        let mut driver = StreamDriver::new(stream, stream_slots, active);
        let ended = self.drive(agent, &lists, &limits, &mut driver, input).await;
        if let (Err(Stop::Tripwire(tw)), Some(open)) = (&ended, self.open.take()) {
            // The step the trip wire ended, with the tool calls it had asked for.
            self.s.steps.push(StepResult {
                step_number: open.number,
                text: Text::new(),
                finish_reason: FinishReason::Tripwire,
                usage: open.usage,
                tool_calls: std::mem::take(&mut driver.acc.tool_calls),
                tool_results: Vec::new(),
                tripwire: Some(tw.clone()),
            });
        }
        ended
    }

    /// The run: the input processors, the steps, the end of the stream and the output result.
    async fn drive<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        lists: &Lists<'_>,
        limits: &Limits,
        driver: &mut StreamDriver<'_, O>,
        input: Vec<Message>,
    ) -> Result<GenerateResult, Stop> {
        self.s.list.replace_all_system(agent.instructions.clone());
        self.s.list.add_all(input, MessageSource::Input);
        // A hook's chain is entered only when a processor has the hook: most lists lack most
        // hooks, and entering one costs its future.
        if lists.input.has(Hook::Input) {
            hooks::input(&lists.input, &mut self.s).await?;
        }
        // The instructions as the input processors left them are the run's originals.
        let originals = self.s.list.system_messages().to_vec();
        emit!(driver, self.s, self.out, ChunkKind::Start, true);
        self.carried.append(&mut driver.acc.data);

        let may_reject = limits.max_retries.is_some()
            && (lists.step.has(Hook::InputStep) || lists.output.has(Hook::OutputStep));
        // Accepted steps: retries do not count against `max_steps`.
        let mut accepted: u32 = 0;
        let mut last_reason = FinishReason::Stop;
        while accepted < limits.max_steps {
            // A step's system edits last one step.
            self.s.list.replace_all_system(originals.clone());
            // A rejected step leaves the list as it found it.
            let before = may_reject.then(|| self.s.list.clone());
            let span = tracing::info_span!(
                "agent.step",
                step = self.next_number(),
                retry_count = self.s.retry_count,
                finish_reason = tracing::field::Empty,
            );
            driver.measure_step();
            let stepped = in_span!(self.step(agent, lists, limits, driver), span);
            // The step the attempt ended as (provider-error retries before it were steps of
            // their own; a rejected step is recorded by `reject`).
            let number = match &stepped {
                Ok(_) => self.next_number().saturating_sub(1),
                Err(_) => self.next_number(),
            };
            span.record("step", number);
            span.in_scope(|| driver.trace_step(number));
            // Warnings the step's stream hooks reported through the request context.
            self.s.report.flush();
            let reason = match stepped {
                Ok(reason) => {
                    span.record("finish_reason", reason.as_str());
                    reason
                }
                Err(Stop::Rejected(tw)) if self.retry_granted(&tw, limits.max_retries) => {
                    span.record("finish_reason", FinishReason::Retry.as_str());
                    tracing::info!(
                        parent: &span,
                        processor = %tw.processor_id,
                        reason = %tw.reason,
                        retry_count = self.s.retry_count + 1,
                        "step rejected; retrying with the reason as feedback"
                    );
                    Box::pin(self.reject(tw, before, driver).instrument(span)).await?;
                    continue;
                }
                Err(Stop::Rejected(tw)) => return Err(Stop::Tripwire(tw)),
                Err(stop) => return Err(stop),
            };
            last_reason = reason;
            accepted += 1;
            if reason != FinishReason::ToolCalls {
                break;
            }
        }

        // The end of the stream, then process_output_result (memory last: it saves). The
        // client gets the finish once what the run persists is saved.
        driver.acc = StepAcc::default();
        let finish = ChunkKind::Finish {
            finish_reason: last_reason,
            usage: self.usage,
        };
        // A finish with reason tool-calls (the step limit ended a tool loop) does not go
        // through stream processors.
        let through = last_reason != FinishReason::ToolCalls;
        self.out.hold();
        emit!(driver, self.s, self.out, finish, through);
        self.carried.append(&mut driver.acc.data);
        if !self.carried.is_empty() {
            attach_data(&mut self.s.list, std::mem::take(&mut self.carried));
        }
        let mut summary = RunSummary {
            text: hooks::response_text(&self.s.list),
            usage: self.usage,
            finish_reason: last_reason,
            // Lent to the summary, not copied: no hook of `process_output_result` reads them
            // from the scope, and a trip wire there ends the run with them.
            steps: std::mem::take(&mut self.s.steps),
        };
        let outcome = match lists.output.has(Hook::OutputResult) {
            true => hooks::output_result(&lists.output, &mut self.s, &mut summary).await,
            false => Ok(()),
        };
        self.s.steps = std::mem::take(&mut summary.steps);
        outcome?;
        if self.out.release() {
            self.out.hand_over().await;
        }

        let steps = std::mem::take(&mut self.s.steps);
        // Nothing fails from here on: `end`, which also gives the id, does not run.
        Ok(GenerateResult {
            run_id: std::mem::take(&mut self.run_id),
            text: summary.text,
            tool_calls: steps
                .iter()
                .flat_map(|s| s.tool_calls.iter().cloned())
                .collect(),
            tool_results: steps
                .iter()
                .flat_map(|s| s.tool_results.iter().cloned())
                .collect(),
            steps,
            finish_reason: last_reason,
            usage: self.usage,
            processor_usage: self.s.cx.processor_usage(),
            tripwire: None,
            // The list ends with the run.
            response_messages: self.s.list.take_response(),
            warnings: std::mem::take(&mut self.warnings),
        })
    }

    /// The number of the next step: each attempt (a model call, or an input-step rejection)
    /// is a step of its own.
    fn next_number(&self) -> u32 {
        u32::try_from(self.s.steps.len()).unwrap_or(u32::MAX)
    }

    /// One step: the input-step processors, the model call, the stream, the output-step
    /// processors, the tools, then the step's `step-finish`. Returns why the model stopped.
    async fn step<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        lists: &Lists<'_>,
        limits: &Limits,
        driver: &mut StreamDriver<'_, O>,
    ) -> Result<FinishReason, Stop> {
        let step_number = self.next_number();
        self.open = Some(OpenStep {
            number: step_number,
            usage: Usage::default(),
            started: false,
            through: true,
        });
        let mut config = StepConfig {
            model: agent.model.clone(),
            tools: agent.tools.clone(),
            tool_choice: agent.tool_choice.clone(),
            active_tools: None,
            provider_options: agent.provider_options.clone(),
            model_settings: agent.model_settings.clone(),
        };
        if lists.step.has(Hook::InputStep) {
            hooks::input_step(&lists.step, &mut self.s, step_number, &mut config)
                .await
                .map_err(rejecting)?;
        }
        let offered: Vec<_> = config
            .tools
            .iter()
            .filter(|t| {
                config
                    .active_tools
                    .as_ref()
                    .is_none_or(|a| a.iter().any(|n| n == t.name()))
            })
            .cloned()
            .collect();

        let collect_raw = lists.output.has(Hook::LlmResponse);
        let mut api_retries = 0u32;
        // The model call, with the GenAI semantic conventions' attribute names.
        // `otel.name` and `otel.kind` name the exported span as the conventions do
        // (`chat {model}`, a client span); the arguments are formatted only for a subscriber.
        let chat = tracing::info_span!(
            "chat",
            otel.name = %format_args!("chat {}", config.model.model_id()),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = config.model.provider(),
            gen_ai.request.model = config.model.model_id(),
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            from_cache = tracing::field::Empty,
        );
        let called = async {
            loop {
                let (stream, from_cache, request) = self
                    .call_model(
                        lists,
                        limits,
                        &config,
                        &offered,
                        step_number,
                        driver,
                        &mut api_retries,
                        collect_raw,
                    )
                    .await?;
                // Provider-error retries before it were steps of their own.
                let number = self.next_number();
                let through = !from_cache;
                if let Some(open) = &mut self.open {
                    open.number = number;
                    open.started = true;
                    open.through = through;
                }
                let streamed = self
                    .stream_step(driver, stream, through, number, collect_raw)
                    .await?;
                match streamed {
                    Ok((reason, usage, raw)) => {
                        break Ok::<_, Stop>((number, from_cache, request, reason, usage, raw));
                    }
                    Err(error) => {
                        // The model failed after its stream started: its partial step is rolled
                        // back, and an error processor may ask for another call.
                        let retry = Box::pin(self.ask_to_retry(
                            lists,
                            limits,
                            error,
                            step_number,
                            &mut api_retries,
                        ))
                        .await?;
                        Box::pin(self.retried_step(driver, retry, false, through)).await?;
                    }
                }
            }
        };
        // The model call's request and chunks, kept only for `process_llm_response`, are
        // locals of a block of their own: the step's future keeps no room for them across
        // the awaits that follow.
        let (step_number, from_cache, reason, usage) = {
            let (step_number, from_cache, request, reason, usage, raw) = in_span!(called, chat)?;
            if !chat.is_disabled() {
                chat.record("gen_ai.response.finish_reasons", reason.as_str());
                chat.record("gen_ai.usage.input_tokens", usage.input_tokens);
                chat.record("gen_ai.usage.output_tokens", usage.output_tokens);
                chat.record("from_cache", from_cache);
            }
            // Kept from the model call only when `process_llm_response` wants it.
            if let Some(request) = &request {
                let mut chunks = driver.acc.delivered.take().unwrap_or_default();
                chunks.push(ChunkKind::Finish {
                    finish_reason: reason,
                    usage,
                });
                let delivered = LlmResponse { chunks };
                let response = Response {
                    step_number,
                    request,
                    response: &LlmResponse { chunks: raw },
                    delivered: &delivered,
                    from_cache,
                };
                Box::pin(hooks::llm_response(&lists.output, &mut self.s, response)).await?;
            }
            (step_number, from_cache, reason, usage)
        };
        let through = !from_cache;

        // The step's messages are followed by id only for output-step processors, which may
        // replace them; without any, the step's text is the answer's.
        let by_id = lists.output.has(Hook::OutputStep);
        let mut step_ids = self.add_answer(&mut driver.acc, by_id);
        let answer = driver.acc.answer.clone();
        if by_id {
            let step = Step {
                step_number,
                text: &driver.acc.answer,
                finish_reason: reason,
                usage,
                run_usage: self.usage,
                tool_calls: &driver.acc.tool_calls,
            };
            hooks::output_step(&lists.output, &mut self.s, step, &mut step_ids)
                .await
                .map_err(rejecting)?;
        }
        // Accepted: the feedback was about the rejected answer, this one ends it; the data
        // carried to it is saved with it.
        self.open = None;
        self.carried.clear();
        self.s.retry_count = 0;
        self.s.list.clear_tag(FEEDBACK_TAG);

        let calls = std::mem::take(&mut driver.acc.tool_calls);
        let results = if reason == FinishReason::ToolCalls || !calls.is_empty() {
            Box::pin(tools::execute(
                &calls,
                &offered,
                &lists.output,
                driver,
                &mut self.s,
                &mut self.out,
            ))
            .await?
        } else {
            Vec::new()
        };
        // Data written after the tools, with no tool message to join, goes with what follows.
        self.carried.append(&mut driver.acc.data);
        let step_finish = ChunkKind::StepFinish {
            finish_reason: reason,
            usage,
            is_continued: reason == FinishReason::ToolCalls,
            retry: None,
        };
        emit!(driver, self.s, self.out, step_finish, through);
        let text = match by_id {
            true => step_text(&self.s.list, &step_ids),
            false => answer,
        };
        self.s.steps.push(StepResult {
            step_number,
            text,
            finish_reason: reason,
            usage,
            tool_calls: calls,
            tool_results: results,
            tripwire: None,
        });
        Ok(reason)
    }

    /// Builds the request, lets `process_llm_request` rewrite or answer it, and calls the
    /// model, asking the processors about a provider error. A retried call is a step of its
    /// own (an empty `step-start`/`step-finish` pair with reason `retry`). Returns the model's
    /// stream, whether it replays an answer, and the request if `keep` (the model is given
    /// the request itself otherwise, not a copy).
    #[allow(clippy::too_many_arguments)]
    async fn call_model<O: Pipeline>(
        &mut self,
        lists: &Lists<'_>,
        limits: &Limits,
        config: &StepConfig,
        offered: &[Arc<dyn Tool>],
        step_number: u32,
        driver: &mut StreamDriver<'_, O>,
        api_retries: &mut u32,
        keep: bool,
    ) -> Result<(ModelStream, bool, Option<ModelRequest>), Stop> {
        loop {
            let mut request = ModelRequest {
                prompt: self.s.list.to_prompt(),
                tools: offered.iter().map(|t| t.spec()).collect(),
                tool_choice: config.tool_choice.clone(),
                provider_options: config.provider_options.clone(),
                settings: config.model_settings.clone(),
            };
            let model = &*config.model;
            let answer = match lists.input.has(Hook::LlmRequest) {
                true => {
                    hooks::llm_request(&lists.input, &mut self.s, step_number, &mut request, model)
                        .await?
                }
                false => None,
            };
            if let Some(response) = answer {
                return Ok((replay(response.chunks), true, keep.then_some(request)));
            }
            let kept = keep.then(|| request.clone());
            let error = match model.stream(request).await {
                Ok(stream) => return Ok((stream, false, kept)),
                Err(e) => e,
            };
            let retry =
                Box::pin(self.ask_to_retry(lists, limits, error, step_number, api_retries)).await?;
            Box::pin(self.retried_step(driver, retry, true, true)).await?;
        }
    }

    /// Asks the processors about a provider error: the retry the first one that asks for
    /// one gets, within the limit, or the error.
    async fn ask_to_retry(
        &mut self,
        lists: &Lists<'_>,
        limits: &Limits,
        error: ApiError,
        step_number: u32,
        api_retries: &mut u32,
    ) -> Result<StepRetry, Stop> {
        let chains = [&lists.input, &lists.output, &lists.error];
        let asker =
            hooks::api_error(chains, &mut self.s, &error, step_number, *api_retries).await?;
        let Some(processor_id) = asker.filter(|_| *api_retries < limits.api_retries) else {
            return Err(AgentError::Api(error).into());
        };
        *api_retries += 1;
        tracing::info!(
            processor = %processor_id,
            attempt = *api_retries,
            error = %error,
            "retrying the model call after an API error"
        );
        Ok(StepRetry {
            reason: error.message,
            metadata: None,
            processor_id,
            retry_count: *api_retries,
            feedback: None,
        })
    }

    /// Records a model call that failed and is tried again, and streams its `step-finish`
    /// with reason `retry` (after an empty `step-start` when its stream had not started).
    async fn retried_step<O: Pipeline>(
        &mut self,
        driver: &mut StreamDriver<'_, O>,
        retry: StepRetry,
        start: bool,
        through: bool,
    ) -> Result<(), Stop> {
        let step_number = self.next_number();
        if start {
            let start = ChunkKind::StepStart { step_number };
            driver.emit(&mut self.s, &mut self.out, start, true).await?;
        }
        let finish = ChunkKind::StepFinish {
            finish_reason: FinishReason::Retry,
            usage: Usage::default(),
            is_continued: true,
            retry: Some(Box::new(retry)),
        };
        driver
            .emit(&mut self.s, &mut self.out, finish, through)
            .await?;
        self.s.steps.push(StepResult {
            step_number,
            text: Text::new(),
            finish_reason: FinishReason::Retry,
            usage: Usage::default(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: None,
        });
        Ok(())
    }

    /// Streams the step's `step-start` and model chunks through the driver. Returns why the
    /// model stopped, the step's usage and, when asked, its chunks; or the model's failure
    /// after its stream started.
    async fn stream_step<O: Pipeline>(
        &mut self,
        driver: &mut StreamDriver<'_, O>,
        mut stream: ModelStream,
        through: bool,
        step_number: u32,
        collect_raw: bool,
    ) -> Result<Result<(FinishReason, Usage, Vec<ChunkKind>), ApiError>, Stop> {
        driver.acc = StepAcc {
            delivered: collect_raw.then(Vec::new),
            ..StepAcc::default()
        };
        let start = ChunkKind::StepStart { step_number };
        emit!(driver, self.s, self.out, start, through);
        let mut raw = Vec::new();
        let mut finish = None;
        loop {
            let pulled = std::future::poll_fn(|cx| {
                let mut p = PumpCx {
                    driver: &mut *driver,
                    scope: &mut self.s,
                    out: &mut self.out,
                    raw: collect_raw.then_some(&mut raw),
                    through,
                };
                pump(cx, &mut stream, &mut p)
            })
            .await;
            let kind = match pulled {
                Pulled::Item(Ok(kind)) => kind,
                Pulled::Item(Err(error)) => return Ok(Err(error)),
                Pulled::End => break,
                Pulled::Full => {
                    catch_up().await;
                    continue;
                }
                Pulled::Halted(halt) => return Err(halt.into()),
            };
            if collect_raw {
                raw.push(kind.clone());
            }
            if let ChunkKind::Finish {
                finish_reason,
                usage,
            } = kind
            {
                finish = Some((finish_reason, usage));
                continue;
            }
            emit!(driver, self.s, self.out, kind, through);
        }
        drop(stream);
        // The pump puts the chain's states back whenever it stops for anything but a wait.
        debug_assert!(
            driver.is_unbound(),
            "the stream chain's states are still bound"
        );
        let Some((reason, usage)) = finish else {
            return Ok(Err(ApiError::other(
                "the model's stream ended without a finish chunk",
                true,
            )));
        };
        self.usage += usage;
        if let Some(open) = &mut self.open {
            open.usage = usage;
        }
        Ok(Ok((reason, usage, raw)))
    }

    /// Adds the step's answer to the list: reasoning, text, data (carried, then the step's)
    /// and tool calls as one assistant message. Returns its id when `by_id` (none when the
    /// step produced nothing).
    fn add_answer(&mut self, acc: &mut StepAcc, by_id: bool) -> Vec<String> {
        let mut parts = Vec::with_capacity(
            usize::from(!acc.reasoning.is_empty())
                + usize::from(!acc.text.is_empty())
                + self.carried.len()
                + acc.data.len()
                + acc.tool_calls.len(),
        );
        if !acc.reasoning.is_empty() {
            parts.push(Part::Reasoning {
                text: std::mem::take(&mut acc.reasoning).into(),
            });
        }
        // The streamed text becomes the answer's one buffer: the message, the step and the
        // result share it.
        acc.answer = Text::from(std::mem::take(&mut acc.text));
        if !acc.answer.is_empty() {
            parts.push(Part::Text {
                text: acc.answer.clone(),
            });
        }
        parts.extend(self.carried.iter().cloned());
        parts.append(&mut acc.data);
        parts.extend(acc.tool_calls.iter().cloned().map(Part::ToolCall));
        if parts.is_empty() {
            return Vec::new();
        }
        let m = Message::new(Role::Assistant, parts);
        let ids = match by_id {
            true => vec![m.id.clone()],
            false => Vec::new(),
        };
        self.s.list.add(m, MessageSource::Response);
        ids
    }

    /// Whether a retry asked for by `tw` is granted; warns when no limit is set.
    fn retry_granted(&mut self, tw: &TripWire, max: Option<u32>) -> bool {
        if !tw.retry {
            return false;
        }
        match max {
            None => {
                let w = format!(
                    "processor `{}` asked for a retry but max_processor_retries is not set; the retry request was treated as an abort",
                    tw.processor_id
                );
                tracing::warn!("{w}");
                self.warnings.push(w);
                false
            }
            Some(max) => self.s.retry_count < max,
        }
    }

    /// Records a rejected step (its `step-finish` says `retry`, when the model was called),
    /// puts the list back as the step found it, and sets up the next attempt with the feedback.
    async fn reject<O: Pipeline>(
        &mut self,
        tw: TripWire,
        before: Option<MessageList>,
        driver: &mut StreamDriver<'_, O>,
    ) -> Result<(), Stop> {
        self.s.report.violation(&tw, ViolationKind::Block);
        if let Some(list) = before {
            self.s.list = list;
        }
        let feedback = feedback_text(&tw.reason);
        // One feedback message per attempt: the latest reason.
        self.s.list.clear_tag(FEEDBACK_TAG);
        self.s
            .list
            .add_system(Message::system(feedback.clone()), Some(FEEDBACK_TAG));
        self.s.retry_count += 1;
        let open = self.open.take();
        let usage = open.as_ref().map_or_else(Usage::default, |o| o.usage);
        if let Some(open) = open.filter(|o| o.started) {
            let finish = ChunkKind::StepFinish {
                finish_reason: FinishReason::Retry,
                usage,
                is_continued: true,
                retry: Some(Box::new(StepRetry {
                    reason: tw.reason.clone(),
                    metadata: tw.metadata.clone(),
                    processor_id: tw.processor_id.clone(),
                    retry_count: self.s.retry_count,
                    feedback: Some(feedback),
                })),
            };
            driver
                .emit(&mut self.s, &mut self.out, finish, open.through)
                .await?;
        }
        self.s.steps.push(StepResult {
            step_number: self.next_number(),
            text: Text::new(),
            finish_reason: FinishReason::Retry,
            usage,
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            tripwire: Some(tw),
        });
        Ok(())
    }

    /// Turns how the run stopped into its result: a trip wire streams one `tripwire` chunk and
    /// saves nothing; a failure streams one `error` chunk.
    async fn end(mut self, stop: Stop) -> Result<GenerateResult, AgentError> {
        match stop {
            Stop::Tripwire(tw) | Stop::Rejected(tw) => {
                // A finish held for the end does not reach the client: the run did not finish.
                self.out.discard_held();
                tracing::info!(
                    processor = %tw.processor_id,
                    reason = %tw.reason,
                    retry = tw.retry,
                    "trip wire: the run ends"
                );
                self.s.report.violation(&tw, ViolationKind::Block);
                self.out.deliver(ChunkKind::Tripwire(tw.clone())).await;
                Ok(GenerateResult {
                    run_id: self.run_id,
                    text: Text::new(),
                    steps: self.s.steps,
                    finish_reason: FinishReason::Other,
                    usage: self.usage,
                    processor_usage: self.s.cx.processor_usage(),
                    tool_calls: Vec::new(),
                    tool_results: Vec::new(),
                    tripwire: Some(tw),
                    response_messages: Vec::new(),
                    warnings: self.warnings,
                })
            }
            Stop::Failed(error) => {
                self.out.discard_held();
                tracing::warn!(error = %error, "the run failed");
                let message = error.to_string();
                self.out.deliver(ChunkKind::Error { message }).await;
                Err(error)
            }
        }
    }
}

/// The text of a step's answer, as its messages have it: the streamed text's own buffer unless
/// an output-step processor changed it.
fn step_text(list: &MessageList, step_ids: &[String]) -> Text {
    concat_texts(
        step_ids
            .iter()
            .filter_map(|i| list.get(i))
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.content.parts),
    )
}

/// Saves data written at the end of the run with the last answer (or as an answer of its own).
fn attach_data(list: &mut MessageList, data: Vec<Part>) {
    let last = list
        .response()
        .filter(|m| m.role == Role::Assistant)
        .last()
        .cloned();
    match last {
        Some(mut m) => {
            m.content.parts.extend(data);
            list.replace(m);
        }
        None => list.add(Message::new(Role::Assistant, data), MessageSource::Response),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn list_with(parts: Vec<Vec<&str>>) -> (MessageList, Vec<String>) {
        let mut list = MessageList::new();
        let mut ids = Vec::new();
        for texts in parts {
            let parts = texts
                .into_iter()
                .map(|t| Part::Text { text: t.into() })
                .collect();
            let m = Message::new(Role::Assistant, parts);
            ids.push(m.id.clone());
            list.add(m, MessageSource::Response);
        }
        (list, ids)
    }

    #[test]
    fn a_step_with_one_text_part_shares_its_buffer() {
        let (list, ids) = list_with(vec![vec!["Hello there."]]);
        let text = step_text(&list, &ids);
        let Part::Text { text: part } = &list.get(&ids[0]).unwrap().content.parts[0] else {
            panic!("a text part")
        };
        assert!(text.shares(part), "the message's buffer, not a copy");
    }

    #[test]
    fn a_step_with_several_text_parts_has_them_concatenated() {
        let (list, ids) = list_with(vec![vec!["Hel", "lo"], vec![" there."]]);
        assert_eq!(step_text(&list, &ids), "Hello there.");
        let (list, ids) = list_with(vec![]);
        assert_eq!(step_text(&list, &ids), "");
    }
}
