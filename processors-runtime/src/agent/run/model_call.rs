//! One model call under an agent's lists, as a wrapped model ([`Processed`]) makes it: the
//! request's prompt through the input processors, `process_input_step`, then the call, its
//! stream and `process_llm_response` exactly as a step of a run makes them (with the same
//! provider-error retries), and the step's end through the stream processors. No output step,
//! no tools, no memory: the caller of the model does those.
//!
//! [`Processed`]: crate::model::Processed

use super::{Run, Stop, offered};
use crate::agent::AgentInner;
use crate::agent::call::Call;
use crate::agent::options::GenerateOptions;
use crate::agent::{AgentError, ViolationKind};
use crate::chunk::{ChunkKind, FinishReason};
use crate::message::{Message, MessageSource, Role};
use crate::model::ModelRequest;
use crate::processor::{Hook, Pipeline, StepConfig};
use crate::runner::Halt;
use crate::runner::hooks;
use crate::runner::stream::StreamDriver;
use crate::runner::stream::outbox::Handoff;
use crate::step::{RunSummary, StepResult};
use crate::tool::Tool;
use std::future::Future;
use std::sync::Arc;
use tracing::Instrument;

/// A model call of `inner`'s lists on `request`, its chunks handed to `slot`. Resolves to the
/// `finish` the call ended with (the stream's last chunk, which the wrapper sends if the
/// stream processors did not let it through), or the call's failure.
pub(crate) fn model_call<I: Pipeline, O: Pipeline, E: Pipeline>(
    inner: Arc<AgentInner<I, O, E>>,
    request: ModelRequest,
    tools: Vec<Arc<dyn Tool>>,
    cx: crate::context::RequestContext,
    slot: Arc<Handoff>,
) -> impl Future<Output = Result<ChunkKind, AgentError>> {
    let mut run = Run::new("call", cx, inner.on_violation.clone(), Some(slot));
    async move {
        let span = tracing::info_span!(
            "processed.call",
            model = %inner.model.model_id(),
            outcome = tracing::field::Empty,
        );
        let called = in_span!(run.call(&inner, request, tools), span);
        run.s.report.settle_shadow_streams();
        run.s.report.flush();
        let stop = match called {
            Ok(finish) => {
                span.record("outcome", "completed");
                return Ok(finish);
            }
            Err(stop) => stop,
        };
        match stop {
            Stop::Tripwire(tw) | Stop::Rejected(tw) => {
                span.record("outcome", "tripwire");
                // What a stream processor held for the end does not reach the caller.
                run.out.discard_held();
                run.s.report.violation(&tw, ViolationKind::Block);
                run.out.deliver(ChunkKind::Tripwire(tw)).await;
                Ok(ChunkKind::Finish {
                    finish_reason: FinishReason::Other,
                    usage: run.usage,
                })
            }
            Stop::Failed(error) => {
                span.record("outcome", "failed");
                Err(error)
            }
            // No `process_tool_call` runs around a model call: nothing asks for approval.
            Stop::Paused(_) => Err(AgentError::Api(crate::model::ApiError::other(
                "a processor asked for a tool call's approval around a model call",
                false,
            ))),
        }
    }
}

impl Run {
    /// The call: the input processors on the request's prompt, the input-step processors on
    /// its settings, then the model call and its stream as a step's, and the step's end.
    async fn call<I: Pipeline, O: Pipeline, E: Pipeline>(
        &mut self,
        agent: &AgentInner<I, O, E>,
        request: ModelRequest,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Result<ChunkKind, Stop> {
        let options = GenerateOptions::default();
        let Call {
            bound,
            limits,
            stream,
            stream_slots,
            active,
        } = Call::prepare(agent, &options, &mut self.s.states)?;
        let lists = bound.lists();
        let mut driver = StreamDriver::new(stream, stream_slots, active);
        let ModelRequest {
            prompt,
            tools: _,
            tool_choice,
            provider_options,
            settings,
        } = request;
        let (system, conversation): (Vec<Message>, Vec<Message>) =
            prompt.into_iter().partition(|m| m.role == Role::System);
        self.s.list.replace_all_system(system);
        self.s.list.add_all(conversation, MessageSource::Input);
        if lists.input.has(Hook::Input) {
            hooks::input(&lists.input, &mut self.s).await?;
        }
        let mut config = StepConfig {
            model: agent.model.clone(),
            tools,
            tool_choice,
            active_tools: None,
            provider_options,
            model_settings: settings,
        };
        if lists.step.has(Hook::InputStep) {
            // There is no step to ask for again: an abort, retry or not, ends the call.
            hooks::input_step(&lists.step, &mut self.s, 0, &mut config)
                .await
                .map_err(|h| match h {
                    Halt::Abort(tw) => Stop::Tripwire(tw),
                    other => other.into(),
                })?;
        }
        let offered = offered(&config);
        driver.measure_step();
        let (number, from_cache, reason, usage) = self
            .call_and_stream(&lists, &limits, &config, &offered, 0, &mut driver)
            .await?;
        driver.trace_step(number);
        // The step's end, then the call's, through the stream processors as an agent sends
        // them: what a processor held back is released there.
        let through = !from_cache;
        let step_finish = ChunkKind::StepFinish {
            finish_reason: reason,
            usage,
            is_continued: false,
            retry: None,
        };
        emit!(driver, self.s, self.out, step_finish, through);
        // The call's end is its run's: `process_output_result` runs on the call's one step
        // (memory, last, saves it) before the caller hears of the end, so a caller that stops
        // reading at the `finish` finds it saved.
        if lists.output.has(Hook::OutputResult) {
            self.add_answer(&mut driver.acc, false);
            let step = StepResult {
                step_number: number,
                text: driver.acc.answer.clone(),
                finish_reason: reason,
                usage,
                tool_calls: std::mem::take(&mut driver.acc.tool_calls),
                tool_results: Vec::new(),
                tripwire: None,
            };
            let mut summary = RunSummary {
                text: hooks::response_text(&self.s.list),
                usage: self.usage,
                finish_reason: reason,
                steps: vec![step],
            };
            hooks::output_result(&lists.output, &mut self.s, &mut summary).await?;
        }
        let finish = ChunkKind::Finish {
            finish_reason: reason,
            usage: self.usage,
        };
        // As in an agent, a finish with reason tool-calls does not go through them.
        let through = through && reason != FinishReason::ToolCalls;
        emit!(driver, self.s, self.out, finish.clone(), through);
        Ok(finish)
    }
}
