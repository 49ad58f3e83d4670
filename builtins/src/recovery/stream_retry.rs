//! [`StreamErrorRetry`]: calls the model again when its stream failed mid-answer.

use super::StepAttempts;
use crate::config::ConfigError;
use crate::timer::sleep;
use processors_macros::processor;
use processors_runtime::model::ApiError;
pub use processors_runtime::model::{Backoff, Jitter};
use processors_runtime::processor::ApiErrorAction;
use processors_runtime::processor::extract::StepNumber;
use std::time::Duration;

/// Calls the model again when its stream failed mid-answer: a cut connection, a stall, a
/// malformed event or an error event the provider sent instead of the rest of the answer.
///
/// The runner sends a failure of the model's stream to the error processors as it does a
/// refused request. When one asks for a retry, the failed attempt is rolled back: its partial
/// text is not in the message list, the next prompt or the result, and the client gets the
/// attempt's `step-finish` with reason `retry` before the new attempt's chunks, so a client
/// that drops a retried step's text shows the answer once. Such failures carry no HTTP
/// status ([`ApiError::status`] is `None`); that is how this processor recognises them, which
/// includes a connection that failed before the answer began (the providers' own retry policy
/// has then already tried). Errors with a status (a refused request, a rate limit) are left to
/// other processors.
///
/// It asks for at most [`max_retries`](StreamErrorRetryBuilder::max_retries) retries per step
/// (2 by default), optionally only for errors the provider marked retryable
/// ([`retryable_only`](StreamErrorRetryBuilder::retryable_only)), and may wait before each
/// ([`Backoff`], the providers' own: exponential with jitter, or fixed; none by default). The
/// wait runs on any executor: a Tokio timer inside a Tokio runtime, a helper thread elsewhere.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::StreamErrorRetry;
/// use processors::prelude::*;
///
/// let cut = ApiError::other("the connection failed while streaming", true);
/// let model = ScriptedModel::new([
///     Turn::deltas(["The answer ", "is"]).fail_mid_stream(cut),
///     Turn::text("The answer is 42."),
/// ]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .error(StreamErrorRetry::new())
///     .build()?;
/// let result = agent.generate("What is the answer?").await?;
/// assert_eq!(result.text, "The answer is 42.");
/// assert_eq!(model.calls(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct StreamErrorRetry {
    max_retries: u32,
    retryable_only: bool,
    backoff: Option<Backoff>,
}

/// Builds a [`StreamErrorRetry`]; see [`StreamErrorRetry::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct StreamErrorRetryBuilder {
    max_retries: u32,
    retryable_only: bool,
    backoff: Option<Backoff>,
}

impl StreamErrorRetryBuilder {
    /// Retries per step (2 by default); the agent's `max_processor_retries` still bounds the
    /// retries of all processors together.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Retries only failures the provider marked retryable (a cut connection, a stall, an
    /// overloaded provider), not a malformed stream (off by default: every stream failure).
    pub fn retryable_only(mut self, on: bool) -> Self {
        self.retryable_only = on;
        self
    }

    /// The wait before each retry (none by default).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<StreamErrorRetry, ConfigError> {
        if self.max_retries == 0 {
            return Err(ConfigError::Zero {
                option: "max_retries",
                why: "it would never retry; allow at least 1 retry",
            });
        }
        if let Some(backoff) = self.backoff.filter(Backoff::is_zero) {
            return Err(ConfigError::OutOfRange {
                option: "backoff",
                value: format!("{backoff:?}"),
                expected: "it never waits: give it a wait above zero, or leave the backoff out for no wait",
            });
        }
        Ok(StreamErrorRetry {
            max_retries: self.max_retries,
            retryable_only: self.retryable_only,
            backoff: self.backoff,
        })
    }
}

/// The per-request state of a [`StreamErrorRetry`]: its retries in the current step.
#[derive(Debug, Default)]
pub struct StreamErrorRetryState {
    attempts: StepAttempts,
}

impl Default for StreamErrorRetry {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamErrorRetry {
    /// 2 retries per step, for every stream failure, without waiting.
    pub fn new() -> Self {
        StreamErrorRetry {
            max_retries: 2,
            retryable_only: false,
            backoff: None,
        }
    }

    /// Starts configuring the processor.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::recovery::{Backoff, StreamErrorRetry};
    /// use std::time::Duration;
    /// let retry = StreamErrorRetry::builder()
    ///     .max_retries(3)
    ///     .retryable_only(true)
    ///     .backoff(Backoff::exponential(Duration::from_millis(250), Duration::from_secs(4)))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(retry.max_retries(), 3);
    /// let err = StreamErrorRetry::builder().max_retries(0).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::Zero { option: "max_retries", .. }));
    /// let never = Backoff::fixed(Duration::ZERO);
    /// let err = StreamErrorRetry::builder().backoff(never).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::OutOfRange { option: "backoff", .. }));
    /// ```
    pub fn builder() -> StreamErrorRetryBuilder {
        StreamErrorRetryBuilder {
            max_retries: 2,
            retryable_only: false,
            backoff: None,
        }
    }

    /// Retries per step.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// Whether `error` is a stream failure this processor retries: no HTTP status, and
    /// retryable when [`retryable_only`](StreamErrorRetryBuilder::retryable_only) is on.
    ///
    /// ```
    /// use processors::builtins::StreamErrorRetry;
    /// use processors::model::ApiError;
    /// let retry = StreamErrorRetry::new();
    /// assert!(retry.is_stream_failure(&ApiError::other("connection reset", true)));
    /// assert!(retry.is_stream_failure(&ApiError::other("malformed event", false)));
    /// assert!(!retry.is_stream_failure(&ApiError::new(429, "rate limited")));
    /// ```
    pub fn is_stream_failure(&self, error: &ApiError) -> bool {
        error.status.is_none() && (error.retryable || !self.retryable_only)
    }
}

#[processor(crate = processors_runtime, id = "stream-error-retry")]
impl StreamErrorRetry {
    /// On a stream failure: waits the backoff and asks for the call again, within the limit.
    async fn process_api_error(
        &self,
        error: &ApiError,
        step: StepNumber,
        state: &mut StreamErrorRetryState,
    ) -> ApiErrorAction {
        if !self.is_stream_failure(error) {
            return ApiErrorAction::Unhandled;
        }
        let used = state.attempts.used(step.0);
        if used >= self.max_retries {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        let wait = self.backoff.map_or(Duration::ZERO, |b| b.delay(used));
        tracing::debug!(
            error = %error,
            attempt = used + 1,
            wait_ms = wait.as_millis() as u64,
            "the model's stream failed; calling it again"
        );
        if !wait.is_zero() {
            sleep(wait).await;
        }
        ApiErrorAction::Retry
    }
}
