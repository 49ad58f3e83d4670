//! A step's model call: the request, `process_llm_request`, the call with its provider-error
//! retries, and the stream of the model's chunks through the driver.

use super::{Run, Stop};
use crate::agent::AgentError;
use crate::agent::call::{Limits, Lists};
use crate::chunk::{ChunkKind, FinishReason, StepRetry, Usage};
use crate::message::Text;
use crate::model::{ApiError, ModelRequest, ModelStream};
use crate::processor::{Hook, LlmResponse, Pipeline, StepConfig};
use crate::runner::hooks;
use crate::runner::hooks::Response;
use crate::runner::stream::outbox::catch_up;
use crate::runner::stream::{Pulled, PumpCx, StepAcc, StreamDriver, pump, replay};
use crate::step::StepResult;
use crate::tool::Tool;
use std::sync::Arc;
use tracing::Instrument;

impl Run {
    /// The step's model call and its stream, with the provider-error retries between, in
    /// the `chat` span; then `process_llm_response`. Returns the step's number (retried
    /// calls before it were steps of their own), whether its response was replayed, why the
    /// model stopped and the step's usage.
    pub(super) async fn call_and_stream<O: Pipeline>(
        &mut self,
        lists: &Lists<'_>,
        limits: &Limits,
        config: &StepConfig,
        offered: &[Arc<dyn Tool>],
        step_number: u32,
        driver: &mut StreamDriver<'_, O>,
    ) -> Result<(u32, bool, FinishReason, Usage), Stop> {
        let collect_raw = lists.output.has(Hook::LlmResponse);
        let mut api_retries = 0u32;
        let chat = chat_span(config);
        let called = async {
            loop {
                let (stream, from_cache, request) = self
                    .call_model(
                        lists,
                        limits,
                        config,
                        offered,
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
        {
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
            Ok((step_number, from_cache, reason, usage))
        }
    }

    /// Builds the request, lets `process_llm_request` rewrite or answer it, and calls the
    /// model, asking the processors about a provider error. A retried call is a step of its
    /// own (an empty `step-start`/`step-finish` pair with reason `retry`). Returns the model's
    /// stream, whether it replays an answer, and the request if `keep` (the model is given
    /// the request itself otherwise, not a copy).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call_model<O: Pipeline>(
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
            let error = match model.stream_with_context(request, &self.s.cx).await {
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
    pub(super) async fn ask_to_retry(
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
        // The failed call is a step of its own, numbered next: the run page shows it so.
        tracing::info!(
            processor = %processor_id,
            attempt = *api_retries,
            step = self.next_number(),
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
    pub(super) async fn retried_step<O: Pipeline>(
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
    pub(super) async fn stream_step<O: Pipeline>(
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
            match kind {
                ChunkKind::Finish {
                    finish_reason,
                    usage,
                } => {
                    finish = Some((finish_reason, usage));
                    continue;
                }
                // A wrapped model's processor aborted: the run ends with its trip wire.
                ChunkKind::Tripwire(tw) => return Err(Stop::Tripwire(tw)),
                kind => emit!(driver, self.s, self.out, kind, through),
            }
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
}

/// The span of a step's model call, with the GenAI semantic conventions' attribute names.
/// `otel.name` and `otel.kind` name the exported span as the conventions do (`chat {model}`,
/// a client span); the arguments are formatted only for a subscriber.
fn chat_span(config: &StepConfig) -> tracing::Span {
    tracing::info_span!(
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
    )
}
