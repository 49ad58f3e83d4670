//! [`PrefillErrorHandler`]: continues a conversation that ends with an assistant message on a
//! model that refuses to continue one.

use super::{StepAttempts, error_text, mentions_any};
use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, MessageList, MessageSource};
use processors_runtime::model::ApiError;
use processors_runtime::processor::ApiErrorAction;
use processors_runtime::processor::extract::StepNumber;
use serde_json::json;

/// The continuation sent by default.
pub const DEFAULT_CONTINUATION: &str = "Continue.";

/// What the refusal says: Anthropic's "This model does not support assistant message prefill.
/// The conversation must end with a user message.", and the "assistant response prefill is
/// incompatible with enable_thinking" of llama.cpp and Qwen servers.
const PREFILL: &[&str] = &[
    "assistant message prefill",
    "assistant response prefill",
    "must end with a user message",
    "prefill is not supported",
    "does not support prefill",
];

/// Continues a conversation that ends with an assistant message when the provider refuses to
/// continue it ("assistant message prefill").
///
/// Anthropic's newer models reject a request whose last message is the assistant's: "This
/// model does not support assistant message prefill. The conversation must end with a user
/// message." On that rejection (status 400, its message matched without case), the handler
/// adds a user message, "Continue." unless set, at the end of the run's list and asks for
/// the call again, once per step: if the provider refuses again, the run ends with its error.
///
/// The continuation is context: it is in the prompt of this run's later calls, but memory does
/// not save it and it is not among the response messages. Its metadata is
/// `{"recovery": "prefill-error-handler"}`, for a client that shows the list.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::PrefillErrorHandler;
/// use processors::prelude::*;
///
/// let refusal = ApiError::new(
///     400,
///     "bad request: This model does not support assistant message prefill. \
///      The conversation must end with a user message. (invalid_request_error)",
/// );
/// let model = ScriptedModel::new([Turn::error(refusal), Turn::text(" and the rest of it.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .error(PrefillErrorHandler::new())
///     .build()?;
/// let conversation = vec![Message::user("Tell me a story."), Message::assistant("Once upon a time")];
/// let result = agent.generate(conversation).await?;
/// assert_eq!(result.text, " and the rest of it.");
/// let retried = &model.requests()[1].prompt;
/// assert_eq!(retried.last().map(Message::text).as_deref(), Some("Continue."));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct PrefillErrorHandler {
    continuation: String,
}

/// Builds a [`PrefillErrorHandler`]; see [`PrefillErrorHandler::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PrefillErrorHandlerBuilder {
    continuation: String,
}

impl PrefillErrorHandlerBuilder {
    /// The user message added to continue ("Continue." by default).
    pub fn continuation(mut self, text: impl Into<String>) -> Self {
        self.continuation = text.into();
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<PrefillErrorHandler, ConfigError> {
        if self.continuation.trim().is_empty() {
            return Err(ConfigError::Empty {
                what: "the continuation message",
                why: "providers refuse an empty user message, so give it some text (\"Continue.\" by default)",
            });
        }
        Ok(PrefillErrorHandler {
            continuation: self.continuation,
        })
    }
}

/// The per-request state of a [`PrefillErrorHandler`]: whether it acted in the current step.
#[derive(Debug, Default)]
pub struct PrefillErrorHandlerState {
    attempts: StepAttempts,
}

impl Default for PrefillErrorHandler {
    fn default() -> Self {
        Self::new()
    }
}

impl PrefillErrorHandler {
    /// A handler that continues with "Continue.".
    pub fn new() -> Self {
        PrefillErrorHandler {
            continuation: DEFAULT_CONTINUATION.to_owned(),
        }
    }

    /// Starts configuring a handler.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::recovery::PrefillErrorHandler;
    /// let handler = PrefillErrorHandler::builder().continuation("Please go on.").build().unwrap();
    /// assert_eq!(handler.continuation(), "Please go on.");
    /// let err = PrefillErrorHandler::builder().continuation("  ").build().unwrap_err();
    /// assert!(matches!(err, ConfigError::Empty { what: "the continuation message", .. }));
    /// ```
    pub fn builder() -> PrefillErrorHandlerBuilder {
        PrefillErrorHandlerBuilder {
            continuation: DEFAULT_CONTINUATION.to_owned(),
        }
    }

    /// The user message it adds.
    pub fn continuation(&self) -> &str {
        &self.continuation
    }

    /// Whether `error` is a provider's refusal to continue an assistant message: status 400
    /// and a message (or body) that says so.
    ///
    /// ```
    /// use processors::builtins::PrefillErrorHandler;
    /// use processors::model::ApiError;
    /// let refusal = ApiError::new(400, "This model does not support assistant message prefill.");
    /// assert!(PrefillErrorHandler::is_prefill_error(&refusal));
    /// assert!(!PrefillErrorHandler::is_prefill_error(&ApiError::new(400, "Unknown parameter")));
    /// let overloaded = ApiError::new(529, "assistant message prefill");
    /// assert!(!PrefillErrorHandler::is_prefill_error(&overloaded));
    /// ```
    pub fn is_prefill_error(error: &ApiError) -> bool {
        error.status == Some(400) && mentions_any(&error_text(error), PREFILL)
    }
}

#[processor(crate = processors_runtime, id = "prefill-error-handler")]
impl PrefillErrorHandler {
    /// On the refusal: adds the continuation and asks for the call again, once per step.
    fn process_api_error(
        &self,
        error: &ApiError,
        list: &mut MessageList,
        step: StepNumber,
        state: &mut PrefillErrorHandlerState,
    ) -> ApiErrorAction {
        if !Self::is_prefill_error(error) || state.attempts.used(step.0) > 0 {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        let mut continuation = Message::user(self.continuation.clone());
        continuation.metadata = Some(json!({ "recovery": "prefill-error-handler" }));
        list.add(continuation, MessageSource::Context);
        tracing::debug!(
            "the provider refused an assistant prefill; continuing with a user message"
        );
        ApiErrorAction::Retry
    }
}
