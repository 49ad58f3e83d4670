//! The agent loop: the input processors, then steps (input-step processors, the model call,
//! the stream, output-step processors, tools) until the model stops, with retries, then the
//! output result. Each hook runs through the runner's dispatcher (`crate::runner::hooks`); the
//! model call and its stream are in `model.rs`; a step's answer, a rejected step and how a run
//! that stops early ends (in one place, [`Run::end`]) are in `outcome.rs`.

use super::approval::{Approval, ApprovalError, PausedRun, PausedStep};
use super::call::{Call, Limits, Lists};
use super::options::GenerateOptions;
use super::tools::{self, Gate};
use super::*;
use crate::chunk::{ChunkKind, FinishReason, RunId, Usage};
use crate::memory::MemoryStore;
use crate::message::{MessageList, MessageSource, Part, Role, Text};
use crate::processor::future_slot::FutureSlot;
use crate::processor::report::Reporter;
use crate::processor::state::StateMap;
use crate::processor::{Hook, StepConfig};
use crate::runner::hooks::{self, Step};
use crate::runner::stream::outbox::{Handoff, Outbox};
use crate::runner::stream::{StepAcc, StreamDriver};
use crate::runner::{Halt, Scope};
use crate::step::{RunSummary, StepResult};
use crate::tripwire::TripWire;
use tracing::Instrument;

/// Why a run stops before its end.
enum Stop {
    /// A processor aborted: the run ends with its trip wire.
    Tripwire(TripWire),
    /// A processor rejected the step at a hook whose abort may ask for the step again.
    Rejected(TripWire),
    /// The run failed.
    Failed(AgentError),
    /// A tool call waits for approval: the run pauses.
    Paused(Box<Pause>),
}

/// Where a run paused: its step, and what the steps after it need.
struct Pause {
    step: PausedStep,
    /// Steps accepted before the paused one.
    accepted: u32,
    /// The system messages every step starts from.
    originals: Vec<Message>,
}

impl Pause {
    /// A pause at `step`; `steps` fills in what the steps after it need.
    fn at(step: PausedStep) -> Self {
        Pause {
            step,
            accepted: 0,
            originals: Vec::new(),
        }
    }
}

/// What a paused run needs from its agent to be kept.
#[derive(Clone, Copy)]
struct Pausing<'a> {
    store: &'a Arc<dyn MemoryStore>,
    /// The agent's memory, which saves the paused turn's input.
    memory: Option<&'a crate::memory::Memory>,
    timeout: std::time::Duration,
    agent: &'a str,
}

impl<'a, I, O, E> From<&'a AgentInner<I, O, E>> for Pausing<'a> {
    fn from(agent: &'a AgentInner<I, O, E>) -> Self {
        Pausing {
            store: &agent.paused,
            memory: agent.memory.as_ref(),
            timeout: agent.approval_timeout,
            agent: &agent.name,
        }
    }
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

impl Run {
    /// A run that starts afresh: an empty list, no state, no step yet, with its reports
    /// begun in `cx` and an id of `kind` (`run`, `call`).
    #[inline(always)]
    fn new(
        kind: &str,
        mut cx: crate::context::RequestContext,
        on_violation: Option<crate::processor::report::ViolationHandler>,
        slot: Option<Arc<Handoff>>,
    ) -> Self {
        let reports = cx.begin_run();
        let run_id = crate::message::new_id(kind);
        Run {
            s: Scope {
                states: StateMap::default(),
                list: MessageList::new(),
                cx,
                report: Reporter::new(on_violation, Some(reports)),
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
        }
    }
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

mod model;
mod model_call;
mod outcome;

pub(crate) use model_call::model_call;
pub use outcome::FEEDBACK_TAG;
use outcome::{attach_data, calls_and_results, keep_late_text, step_text};

/// A run of the agent on `input`: set up when this is called, driven when the future is
/// polled. The future holds each argument once (an `async fn` would hold its arguments, then
/// its locals again): it is moved, and boxed behind `dyn`, whole.
pub(crate) fn run<I: Pipeline, O: Pipeline, E: Pipeline>(
    inner: Arc<AgentInner<I, O, E>>,
    input: Vec<Message>,
    mut options: GenerateOptions,
    slot: Option<Arc<Handoff>>,
) -> impl Future<Output = Result<GenerateResult, AgentError>> {
    let cx = std::mem::take(&mut options.request_context);
    let mut run = Run::new("run", cx, inner.on_violation.clone(), slot);
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
        let result = Box::pin(
            run.end(stop, Pausing::from(&*inner))
                .instrument(span.clone()),
        )
        .await;
        record_outcome(&span, &result);
        result
    }
}

/// A run paused for approval, continued with `answer`: taken from the store (once), its
/// waiting calls decided, then driven on from its paused step.
pub(crate) async fn resume<I: Pipeline, O: Pipeline, E: Pipeline>(
    inner: Arc<AgentInner<I, O, E>>,
    answer: Approval,
    mut options: GenerateOptions,
    slot: Option<Arc<Handoff>>,
) -> Result<GenerateResult, AgentError> {
    {
        let paused = match take_paused(&inner, &answer).await {
            Ok(p) => p,
            Err(e) => {
                // A stream that cannot resume says why, as a failed run does.
                let mut out = Outbox::new(RunId::from(answer.run_id()), slot);
                out.deliver(ChunkKind::Error {
                    message: e.to_string(),
                })
                .await;
                return Err(e.into());
            }
        };
        let cx = &mut options.request_context;
        if cx.thread_id().is_none()
            && let (Some(thread), Some(resource)) = (&paused.thread_id, &paused.resource_id)
        {
            *cx = std::mem::take(cx).with_thread(thread.clone(), resource.clone());
        }
        let reports = options.request_context.begin_run();
        let mut run = Run {
            s: Scope {
                states: StateMap::default(),
                list: paused.list,
                cx: std::mem::take(&mut options.request_context),
                report: Reporter::new(inner.on_violation.clone(), Some(reports)),
                steps: paused.steps,
                retry_count: 0,
                hooks: FutureSlot::new(),
            },
            out: Outbox::new(RunId::from(paused.run_id.as_str()), slot),
            run_id: paused.run_id,
            carried: paused.carried,
            warnings: paused.warnings,
            usage: paused.usage,
            open: None,
        };
        let span = tracing::info_span!(
            "agent.run",
            agent = %inner.name,
            run_id = %run.out.run_id,
            resumed = true,
            outcome = tracing::field::Empty,
            steps = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
        );
        let pause = Pause {
            step: paused.step,
            accepted: paused.accepted,
            originals: paused.originals,
        };
        let stop = {
            let ended = run
                .resume(&inner, &options, pause)
                .instrument(span.clone())
                .await;
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
        let result = Box::pin(
            run.end(stop, Pausing::from(&*inner))
                .instrument(span.clone()),
        )
        .await;
        record_outcome(&span, &result);
        result
    }
}

/// The paused run `answer` answers, taken from the agent's store, with the answer's
/// decisions applied. What the answer gets wrong puts the run back for another answer.
async fn take_paused<I, O, E>(
    inner: &AgentInner<I, O, E>,
    answer: &Approval,
) -> Result<PausedRun, ApprovalError> {
    let run_id = answer.run_id();
    let store_error = |source| ApprovalError::Store {
        run_id: run_id.to_owned(),
        source,
    };
    let record = inner
        .paused
        .take_paused_run(run_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApprovalError::Unknown {
            run_id: run_id.to_owned(),
        })?;
    if record.expires_at <= crate::message::now_millis() {
        return Err(ApprovalError::Expired {
            run_id: run_id.to_owned(),
            expired_at: record.expires_at,
        });
    }
    let mut paused = PausedRun::from_record(&record)?;
    let checked = match paused.agent == inner.name {
        true => paused.decide(answer),
        false => Err(ApprovalError::OtherAgent {
            run_id: run_id.to_owned(),
            owner: paused.agent.clone(),
            agent: inner.name.clone(),
        }),
    };
    if let Err(e) = checked {
        inner
            .paused
            .save_paused_run(record)
            .await
            .map_err(store_error)?;
        return Err(e);
    }
    Ok(paused)
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
        if agent.memory.is_some()
            && (self.s.cx.thread_id().is_none() || self.s.cx.resource_id().is_none())
        {
            self.warn_memory_without_thread();
        }
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

        let last_reason = self
            .steps(agent, lists, limits, driver, originals, 0)
            .await?;
        self.finish(lists, driver, last_reason).await
    }

    /// Warns that the agent's memory does nothing for a call without a thread: a call on
    /// its own is allowed (a one-off question), but is more often a thread id forgotten.
    #[cold]
    fn warn_memory_without_thread(&mut self) {
        let w = "the agent has memory, but the call names no thread and resource \
                 (`RequestContext::with_thread`), so nothing is loaded or saved"
            .to_owned();
        tracing::warn!("{w}");
        self.warnings.push(w);
    }

    /// A paused run, on: its waiting calls run as decided, its step finishes, and the steps
    /// go on while the model calls tools and `max_steps` allows; then the end.
    async fn resume<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        options: &GenerateOptions,
        pause: Pause,
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
        emit!(driver, self.s, self.out, ChunkKind::Start, true);
        self.carried.append(&mut driver.acc.data);
        let Pause {
            step,
            accepted,
            originals,
        } = pause;
        let reason = self.finish_paused(agent, &lists, &mut driver, step).await?;
        let accepted = accepted + 1;
        let last_reason = match reason == FinishReason::ToolCalls && accepted < limits.max_steps {
            true => {
                self.steps(agent, &lists, &limits, &mut driver, originals, accepted)
                    .await?
            }
            false => reason,
        };
        self.finish(&lists, &mut driver, last_reason).await
    }

    /// The paused step's end: its calls run as decided (each by the agent's tool of its
    /// name), then its `step-finish`.
    async fn finish_paused<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        lists: &Lists<'_>,
        driver: &mut StreamDriver<'_, O>,
        step: PausedStep,
    ) -> Result<FinishReason, Stop> {
        driver.acc.data = step.data;
        let (s, out) = (&mut self.s, &mut self.out);
        let results = Box::pin(tools::execute(
            &step.calls,
            &step.gates,
            &agent.tools,
            &lists.output,
            driver,
            s,
            out,
        ))
        .await?;
        let reason = step.finish_reason;
        let done = StepResult {
            step_number: step.step_number,
            text: step.text,
            finish_reason: reason,
            usage: step.usage,
            tool_calls: step.calls,
            tool_results: results,
            tripwire: None,
        };
        // The paused step made calls, so its answer is in the list.
        self.close_step(driver, done, true, true).await?;
        Ok(reason)
    }

    /// The end of a run whose steps are done: the `finish`, `process_output_result` (memory
    /// last: it saves), and the result.
    async fn finish<O: Pipeline>(
        &mut self,
        lists: &Lists<'_>,
        driver: &mut StreamDriver<'_, O>,
        last_reason: FinishReason,
    ) -> Result<GenerateResult, Stop> {
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
        if !driver.acc.text.is_empty() {
            // It reached the client after everything else: it ends the last answer, or is
            // an answer of its own after the last tool results.
            let answered =
                (self.s.list.response().last()).is_some_and(|m| m.role == Role::Assistant);
            let last = self
                .s
                .steps
                .last()
                .map(|s| s.text.clone())
                .unwrap_or_default();
            let kept = keep_late_text(&mut self.s.list, &mut driver.acc.text, answered, last);
            if let Some(step) = self.s.steps.last_mut() {
                step.text = kept;
            }
        }
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
        let (tool_calls, tool_results) = calls_and_results(&steps);
        // Nothing fails from here on: `end`, which also gives the id, does not run.
        Ok(GenerateResult {
            run_id: std::mem::take(&mut self.run_id),
            text: summary.text,
            tool_calls,
            tool_results,
            steps,
            finish_reason: last_reason,
            usage: self.usage,
            processor_usage: self.s.cx.processor_usage(),
            shadowed: self.s.shadowed(),
            tripwire: None,
            // The list ends with the run.
            response_messages: self.s.list.take_response(),
            warnings: std::mem::take(&mut self.warnings),
            pending_approvals: Vec::new(),
        })
    }

    /// The steps, until the model stops or `max_steps` steps are accepted: a rejected step
    /// is retried with feedback while the limit allows. Returns why the model last stopped.
    async fn steps<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        lists: &Lists<'_>,
        limits: &Limits,
        driver: &mut StreamDriver<'_, O>,
        originals: Vec<Message>,
        mut accepted: u32,
    ) -> Result<FinishReason, Stop> {
        let may_reject = limits.max_retries.is_some()
            && (lists.step.has(Hook::InputStep)
                || lists.output.has(Hook::OutputStep)
                || lists.output.has(Hook::ToolCall));
        // Accepted steps (`accepted` so far): retries do not count against `max_steps`.
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
                Err(Stop::Paused(mut pause)) => {
                    pause.accepted = accepted;
                    pause.originals = originals;
                    return Err(Stop::Paused(pause));
                }
                Err(stop) => return Err(stop),
            };
            last_reason = reason;
            accepted += 1;
            if reason != FinishReason::ToolCalls {
                break;
            }
        }

        Ok(last_reason)
    }

    /// Accepts the open step: the feedback was about the rejected answer, this one ends it;
    /// the data carried to it is saved with it.
    fn accept(&mut self) {
        self.open = None;
        self.carried.clear();
        self.s.retry_count = 0;
        self.s.list.clear_tag(FEEDBACK_TAG);
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
        let mut config = step_config(agent);
        if lists.step.has(Hook::InputStep) {
            hooks::input_step(&lists.step, &mut self.s, step_number, &mut config)
                .await
                .map_err(rejecting)?;
        }
        let offered = offered(&config);

        let (step_number, from_cache, reason, usage) = self
            .call_and_stream(lists, limits, &config, &offered, step_number, driver)
            .await?;
        let through = !from_cache;

        // The step's messages are followed by id only for output-step processors, which may
        // replace them; without any, the step's text is the answer's.
        let by_id = lists.output.has(Hook::OutputStep);
        let listed = self.s.list.len();
        let mut step_ids = self.add_answer(&mut driver.acc, by_id);
        let answered = self.s.list.len() > listed;
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
        // The calls are decided before the step is accepted: a processor's abort there
        // rejects the step as one in `process_output_step` does.
        let runs_tools = reason == FinishReason::ToolCalls || !driver.acc.tool_calls.is_empty();
        let gates = match runs_tools && lists.output.has(Hook::ToolCall) {
            true => {
                let calls = &mut driver.acc.tool_calls;
                let gate = tools::gate(calls, &offered, &lists.output, &mut self.s, step_number);
                Box::pin(gate).await.map_err(rejecting)?
            }
            false => Vec::new(),
        };
        self.accept();
        let text = |list: &MessageList, answer| match by_id {
            true => step_text(list, &step_ids),
            false => answer,
        };
        if gates.iter().any(|g| matches!(g, Gate::Approval { .. })) {
            // No call of the step runs until a person answers: the run pauses here.
            let step = PausedStep {
                step_number,
                finish_reason: reason,
                usage,
                text: text(&self.s.list, answer),
                calls: std::mem::take(&mut driver.acc.tool_calls),
                gates,
                data: std::mem::take(&mut driver.acc.data),
            };
            return Err(Stop::Paused(Box::new(Pause::at(step))));
        }
        let calls = std::mem::take(&mut driver.acc.tool_calls);
        let results = match runs_tools {
            true => {
                let (s, out, output) = (&mut self.s, &mut self.out, &lists.output);
                let run = tools::execute(&calls, &gates, &offered, output, driver, s, out);
                Box::pin(run).await?
            }
            false => Vec::new(),
        };
        let step = StepResult {
            step_number,
            text: text(&self.s.list, answer),
            finish_reason: reason,
            usage,
            tool_calls: calls,
            tool_results: results,
            tripwire: None,
        };
        self.close_step(driver, step, through, answered).await?;
        Ok(reason)
    }

    /// A step's end, after its tools: data written since, with no tool message to join, goes
    /// with what follows; its `step-finish` streams; text a stream processor let through only
    /// then joins its answer (`answered`: the step's answer is in the list); the step is
    /// recorded.
    async fn close_step<O: Pipeline>(
        &mut self,
        driver: &mut StreamDriver<'_, O>,
        mut step: StepResult,
        through: bool,
        answered: bool,
    ) -> Result<(), Stop> {
        self.carried.append(&mut driver.acc.data);
        let step_finish = ChunkKind::StepFinish {
            finish_reason: step.finish_reason,
            usage: step.usage,
            is_continued: step.finish_reason == FinishReason::ToolCalls,
            retry: None,
        };
        emit!(driver, self.s, self.out, step_finish, through);
        if !driver.acc.text.is_empty() {
            let text = std::mem::take(&mut step.text);
            step.text = keep_late_text(&mut self.s.list, &mut driver.acc.text, answered, text);
        }
        self.s.steps.push(step);
        Ok(())
    }
}

/// A step's settings as the agent gives them, before the input-step processors.
fn step_config<I, O, E>(agent: &AgentInner<I, O, E>) -> StepConfig {
    StepConfig {
        model: agent.model.clone(),
        tools: agent.tools.clone(),
        tool_choice: agent.tool_choice.clone(),
        active_tools: None,
        provider_options: agent.provider_options.clone(),
        model_settings: agent.model_settings.clone(),
    }
}

/// The tools a step offers the model: its tools, those named active when some are.
fn offered(config: &StepConfig) -> Vec<Arc<dyn Tool>> {
    let active = |t: &&Arc<dyn Tool>| {
        (config.active_tools.as_ref()).is_none_or(|a| a.iter().any(|n| n == t.name()))
    };
    config.tools.iter().filter(active).cloned().collect()
}
