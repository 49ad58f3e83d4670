//! Language models: the [`LanguageModel`] trait, its request and errors, and the
//! [`ScriptedModel`] used offline.

mod backoff;
mod scripted;

pub use crate::agent::processed::{
    AROUND_A_MODEL_CALL, LanguageModelExt, Processed, ProcessedBuilder,
};
pub use backoff::{Backoff, Jitter};
pub use scripted::{ScriptedModel, Turn};

use crate::chunk::ChunkKind;
use crate::context::RequestContext;
use crate::message::Message;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// Turns texts into vectors: an embedding model, as semantic recall uses one.
/// `processors_providers::OpenAiEmbeddings` implements it for OpenAI-compatible APIs.
pub trait Embedder: Send + Sync + 'static {
    /// One vector per text, in order.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, crate::BoxError>>;
}

/// A provider's error, classified.
///
/// A model returns it when the provider rejects a request or the stream fails. The error
/// processors ([`process_api_error`](crate::Processor::process_api_error)) see it and may fix
/// the request and ask for a retry; unrecovered, the run fails with
/// [`AgentError::Api`](crate::AgentError::Api).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors_runtime::prelude::*;
///
/// assert!(ApiError::new(429, "slow down").retryable);
/// assert!(ApiError::new(503, "overloaded").retryable);
/// assert!(!ApiError::new(400, "prompt too long").retryable);
/// // A server that does not implement the request answers the same way again.
/// assert!(!ApiError::new(501, "not implemented").retryable);
///
/// let model = ScriptedModel::new([Turn::error(ApiError::new(400, "prompt too long"))]);
/// let agent = Agent::builder().model(model).build().unwrap();
/// match agent.generate("hi").await {
///     Err(AgentError::Api(e)) => {
///         assert_eq!(e.status, Some(400));
///         assert_eq!(e.to_string(), "model API error (status 400): prompt too long");
///     }
///     other => panic!("expected the provider's error, got {other:?}"),
/// }
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("model API error{}: {message}", status.map(|s| format!(" (status {s})")).unwrap_or_default())]
pub struct ApiError {
    /// The HTTP status, when there was a response.
    pub status: Option<u16>,
    /// What went wrong.
    pub message: String,
    /// The response body, when there was one.
    pub body: Option<String>,
    /// Whether calling again may succeed (408, 429, the transient 5xx, connection failures).
    pub retryable: bool,
    /// How long the provider asked its caller to wait before calling again (its
    /// `retry-after-ms` or `Retry-After`), in milliseconds, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ApiError {
    /// An error with this status and message; retryable when the status is
    /// ([`ApiError::transient`]).
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status: Some(status),
            message: message.into(),
            body: None,
            retryable: ApiError::transient(status),
            retry_after_ms: None,
        }
    }

    /// Whether calling again may meet another answer than `status`: 408 (timeout), 429 (rate
    /// limit) and the 5xx of a server that failed or was busy (500, 502, 503, 504, 507, 509,
    /// the 52x of proxies, Anthropic's 529 overloaded, …). Not the 5xx that say the server
    /// cannot do the request at all: 501 (not implemented), 505 (HTTP version not
    /// supported), 506 (variant also negotiates), 508 (loop detected), 510 (not extended)
    /// and 511 (network authentication required).
    pub const fn transient(status: u16) -> bool {
        match status {
            408 | 429 => true,
            501 | 505 | 506 | 508 | 510 | 511 => false,
            500..=599 => true,
            _ => false,
        }
    }

    /// An error without a response (connection, stream or protocol failure).
    pub fn other(message: impl Into<String>, retryable: bool) -> Self {
        ApiError {
            status: None,
            message: message.into(),
            body: None,
            retryable,
            retry_after_ms: None,
        }
    }

    /// The same error with a body.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// The same error with the wait the provider asked for before calling again.
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after_ms = Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// The wait the provider asked for before calling again, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }
}

/// How the model may use tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// Some tool call is required.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// Sampling settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSettings {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    /// Output token limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Seed for deterministic sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments.
    pub parameters: Value,
}

/// One call of a model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    /// The conversation: system messages first.
    pub prompt: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// How tools may be used.
    pub tool_choice: ToolChoice,
    /// Provider-specific options, passed through.
    pub provider_options: Value,
    /// Sampling settings.
    pub settings: ModelSettings,
}

/// A model's answer: model chunks (text deltas, tool calls, one `finish`) or an error.
pub type ModelStream = BoxStream<'static, Result<ChunkKind, ApiError>>;

/// A language model the agent can call.
///
/// `stream` resolves once the provider accepted the request (or rejected it: a 4xx is an
/// [`ApiError`] here, which the `process_api_error` processors may fix); the stream then yields
/// [`ChunkKind`]s ending with [`ChunkKind::Finish`]. Dropping the stream cancels the call.
///
/// A model of your own: an echo that answers with the user's last message, in two deltas.
/// [`ScriptedModel`] is a ready-made one for tests; `processors-providers` has the HTTP ones.
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::FutureExt;
/// use futures::future::BoxFuture;
/// use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
/// use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelStream};
/// use processors_runtime::prelude::*;
/// use std::sync::Arc;
///
/// struct Echo;
///
/// impl LanguageModel for Echo {
///     fn provider(&self) -> &str {
///         "echo"
///     }
///     fn model_id(&self) -> &str {
///         "echo-1"
///     }
///     fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
///         let Some(last) = request.prompt.iter().rev().find(|m| m.role == Role::User) else {
///             return futures::future::ready(Err(ApiError::new(400, "no user message"))).boxed();
///         };
///         let text = last.text();
///         let (head, tail) = text.split_at(text.len() / 2);
///         let id: Arc<str> = Arc::from("text-0");
///         let usage = Usage { input_tokens: 1, output_tokens: 2, total_tokens: 3 };
///         let chunks = vec![
///             ChunkKind::TextStart { id: id.clone() },
///             ChunkKind::TextDelta { id: id.clone(), text: head.to_owned() },
///             ChunkKind::TextDelta { id: id.clone(), text: tail.to_owned() },
///             ChunkKind::TextEnd { id },
///             ChunkKind::Finish { finish_reason: FinishReason::Stop, usage },
///         ];
///         let stream: ModelStream = Box::pin(futures::stream::iter(chunks.into_iter().map(Ok)));
///         futures::future::ready(Ok(stream)).boxed()
///     }
/// }
///
/// let agent = Agent::builder().model(Echo).build().unwrap();
/// let result = agent.generate("hello").await.unwrap();
/// assert_eq!(result.text, "hello");
/// assert_eq!(result.usage.output_tokens, 2);
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a language model",
    label = "not a `LanguageModel`",
    note = "a model id such as \"openai/gpt-4o-mini\" becomes a model with `processors::providers::resolve(\"openai/gpt-4o-mini\")?`; offline, use `ScriptedModel`"
)]
pub trait LanguageModel: Send + Sync + 'static {
    /// The provider's name (`openai`, `anthropic`, `scripted`).
    fn provider(&self) -> &str;
    /// The model's id.
    fn model_id(&self) -> &str;
    /// Starts a call.
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>>;

    /// Starts a call made on behalf of a run whose request context is `context`: an agent
    /// calls its model this way. A model that runs processors of its own ([`Processed`])
    /// gives them the context's thread, resource and values; the others need not read it,
    /// and by default call [`stream`](Self::stream).
    fn stream_with_context(
        &self,
        request: ModelRequest,
        context: &RequestContext,
    ) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let _ = context;
        self.stream(request)
    }
}

impl<M: LanguageModel + ?Sized> LanguageModel for std::sync::Arc<M> {
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn model_id(&self) -> &str {
        (**self).model_id()
    }
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        (**self).stream(request)
    }
    fn stream_with_context(
        &self,
        request: ModelRequest,
        context: &RequestContext,
    ) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        (**self).stream_with_context(request, context)
    }
}
