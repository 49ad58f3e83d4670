//! Recovering from provider errors: error processors that repair what a provider refused and
//! ask the runner to call the model again.
//!
//! | processor | hooks | recovers from |
//! |---|---|---|
//! | [`PrefillErrorHandler`] | API error | a conversation that ends with an assistant message, on a provider that does not continue one ("assistant message prefill") |
//! | [`ProviderHistoryCompat`] | LLM request, API error | history a provider refuses: orphan tool results, tool calls without results, empty assistant messages, reasoning without signatures, tool-call ids it does not accept |
//! | [`ContextLengthHandler`] | API error | a prompt over the model's context window: drops the oldest turns, pair-safe |
//! | [`StreamErrorRetry`] | API error | a stream that failed mid-answer (a cut connection, a stall, an error event) |
//! | [`TrailingAssistantGuard`] | LLM request | a prompt ending with the assistant's message, for a model that refuses to continue one: fixed before the call |
//! | [`UnsupportedFileHandler`] | API error | a file whose type the model does not accept: replaced by a note |
//!
//! When a model call fails, the runner asks `process_api_error` of the input, output and
//! error processors in that order; the first that asks for a retry wins, and the call is made
//! again, up to the agent's `max_processor_retries` (3 when unset and a processor handles API
//! errors). Each of these processors acts only on the errors it recognises and, on top of
//! that limit, keeps its own count per step: a fix that did not help is not applied forever,
//! and a persistent error ends the run with [`AgentError::Api`](processors_runtime::AgentError).
//!
//! Provider errors are recognised by their status and by what their message (or body) says,
//! compared without case, quotes or backticks, so that the wording of OpenAI, Anthropic and
//! the servers that copy them is understood.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::recovery::{
//!     ContextLengthHandler, PrefillErrorHandler, ProviderHistoryCompat, StreamErrorRetry,
//! };
//! use processors::prelude::*;
//!
//! let model = ScriptedModel::new([
//!     Turn::error(ApiError::new(400, "prompt is too long: 210000 tokens > 200000 maximum")),
//!     Turn::text("Half an ans").fail_mid_stream(ApiError::other("connection reset", true)),
//!     Turn::text("A whole answer."),
//! ]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(ProviderHistoryCompat::new())
//!     .error(PrefillErrorHandler::new())
//!     .error(ContextLengthHandler::new())
//!     .error(StreamErrorRetry::new())
//!     .build()?;
//! let history = vec![
//!     Message::user("An old question"),
//!     Message::assistant("An old answer"),
//!     Message::user("The question"),
//! ];
//! let result = agent.generate(history).await?;
//! assert_eq!(result.text, "A whole answer.");
//! assert_eq!(model.calls(), 3);
//! // The oldest turn was dropped after the context-length error.
//! let last: Vec<String> = model.requests()[2].prompt.iter().map(Message::text).collect();
//! assert_eq!(last, ["The question"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod context_length;
mod history_compat;
mod prefill;
mod stream_retry;
mod trailing;
mod unsupported_file;
mod unsupported_setting;

pub use context_length::{
    ContextLengthHandler, ContextLengthHandlerBuilder, ContextLengthHandlerState,
};
pub use history_compat::{
    BuiltinRule, CompatRule, MAX_TOOL_CALL_ID_LEN, ProviderHistoryCompat,
    ProviderHistoryCompatBuilder, ProviderHistoryCompatState,
};
pub use prefill::{
    DEFAULT_CONTINUATION, PrefillErrorHandler, PrefillErrorHandlerBuilder, PrefillErrorHandlerState,
};
pub use stream_retry::{
    Backoff, Jitter, StreamErrorRetry, StreamErrorRetryBuilder, StreamErrorRetryState,
};
pub use trailing::{TrailingAssistantGuard, TrailingAssistantGuardBuilder, TrailingStrategy};
pub use unsupported_file::{UnsupportedFileHandler, UnsupportedFileHandlerState};
pub use unsupported_setting::{Setting, UnsupportedSettingHandler, UnsupportedSettingHandlerState};

use processors_runtime::message::{Message, MessageList, MessageSource};
use processors_runtime::model::ApiError;
use std::collections::HashMap;

/// What an error says, for matching: its message and body, lower-cased, without the quotes
/// and backticks providers put around field names.
fn error_text(error: &ApiError) -> String {
    let mut text = error.message.to_lowercase();
    if let Some(body) = &error.body {
        text.push('\n');
        text.push_str(&body.to_lowercase());
    }
    text.retain(|c| !matches!(c, '`' | '\'' | '"'));
    text
}

/// Whether `text` (from [`error_text`]) contains any of `needles`.
fn mentions_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

/// How many times a processor acted in the current step: the count starts again at a step
/// of another number.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct StepAttempts {
    step: Option<u32>,
    count: u32,
}

impl StepAttempts {
    /// The attempts made in `step` so far.
    fn used(&mut self, step: u32) -> u32 {
        if self.step != Some(step) {
            self.step = Some(step);
            self.count = 0;
        }
        self.count
    }

    /// Counts one more attempt in `step`.
    fn add(&mut self, step: u32) {
        let used = self.used(step);
        self.count = used.saturating_add(1);
    }
}

/// Makes `messages` the list's conversation (its non-system messages), in their order: a
/// message keeps the source it had (so memory saves what it would have saved), and one that
/// is new comes in as context (sent, never saved).
fn replace_conversation(list: &mut MessageList, messages: Vec<Message>) {
    let sources: HashMap<String, MessageSource> = list
        .all()
        .filter_map(|m| Some((m.id.clone(), list.source_of(&m.id)?)))
        .collect();
    let ids: Vec<String> = sources.keys().cloned().collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    list.remove(&ids);
    for m in messages {
        let source = sources
            .get(&m.id)
            .copied()
            .unwrap_or(MessageSource::Context);
        list.add(m, source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_reads_message_and_body_without_quotes() {
        let e = ApiError::new(400, "bad request: `tool_use` ids were found")
            .with_body(r#"{"error":{"code":"Context_Length_Exceeded"}}"#);
        let text = error_text(&e);
        assert!(text.contains("tool_use ids were found"), "{text}");
        assert!(text.contains("code:context_length_exceeded"), "{text}");
    }

    #[test]
    fn attempts_count_per_step() {
        let mut a = StepAttempts::default();
        assert_eq!(a.used(0), 0);
        a.add(0);
        a.add(0);
        assert_eq!(a.used(0), 2);
        assert_eq!(a.used(3), 0);
        a.add(3);
        assert_eq!(a.used(3), 1);
    }

    #[test]
    fn replacing_the_conversation_keeps_order_and_sources() {
        let mut list = MessageList::new();
        let old = Message::user("old");
        let kept = Message::assistant("kept");
        list.add(old.clone(), MessageSource::Memory);
        list.add(kept.clone(), MessageSource::Response);
        list.add_system(Message::system("rules"), None);
        let added = Message::user("added");
        replace_conversation(&mut list, vec![added.clone(), kept.clone()]);
        let ids: Vec<&str> = list.all().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, [added.id.as_str(), kept.id.as_str()]);
        assert_eq!(list.source_of(&kept.id), Some(MessageSource::Response));
        assert_eq!(list.source_of(&added.id), Some(MessageSource::Context));
        assert_eq!(list.system_messages().len(), 1);
    }
}
