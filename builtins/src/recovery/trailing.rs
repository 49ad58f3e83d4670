//! [`TrailingAssistantGuard`]: a prompt that ends with the assistant's message, fixed before
//! the call for a model that refuses to continue one.

use super::prefill::DEFAULT_CONTINUATION;
use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, Role};
use processors_runtime::model::{LanguageModel, ModelRequest};
use processors_runtime::processor::LlmRequestAction;
use serde::Deserialize;
use serde_json::json;

/// What [`TrailingAssistantGuard`] does to a prompt that ends with the assistant's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TrailingStrategy {
    /// Adds a user message after it ("Continue." unless set), so that the model goes on from
    /// the assistant's text as a provider that accepts a prefill would.
    #[default]
    Continue,
    /// Leaves the trailing assistant messages out of the prompt: the model answers the
    /// conversation before them.
    Drop,
}

/// Fixes a prompt that ends with the assistant's message before the call, for the models that
/// refuse one ("This model does not support assistant message prefill. The conversation must
/// end with a user message."), where [`PrefillErrorHandler`](super::PrefillErrorHandler)
/// repairs it after the refusal, at the cost of a failed call.
///
/// In `process_llm_request`, for each call to a model it is set for (all by default; or those
/// whose `provider/model` matches one of [`models`](TrailingAssistantGuardBuilder::models)'
/// patterns, `*` standing for any characters), a prompt whose last message is the assistant's,
/// without tool calls, is sent with a continuation user message after it
/// ([`TrailingStrategy::Continue`], the default; an empty assistant message is left out
/// instead) or without its trailing assistant messages ([`TrailingStrategy::Drop`]). The fix is
/// that call's prompt only: the message list and memory keep the conversation as it was. An
/// assistant message with tool calls is not a prefill (its results are missing, which
/// [`ProviderHistoryCompat`](super::ProviderHistoryCompat) repairs) and is left alone.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::recovery::TrailingAssistantGuard;
/// use processors::prelude::*;
///
/// let model = ScriptedModel::new([Turn::text(" a princess lived in a tower.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(TrailingAssistantGuard::new())
///     .build()?;
/// let conversation = vec![Message::user("Tell me a story."), Message::assistant("Once upon a time")];
/// agent.generate(conversation).await?;
/// let sent = &model.requests()[0].prompt;
/// assert_eq!(sent.last().map(Message::text).as_deref(), Some("Continue."));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct TrailingAssistantGuard {
    strategy: TrailingStrategy,
    continuation: String,
    /// The `provider/model` patterns of the models it fixes prompts for; every model when
    /// empty.
    models: Vec<String>,
}

/// Builds a [`TrailingAssistantGuard`]; see [`TrailingAssistantGuard::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct TrailingAssistantGuardBuilder {
    guard: TrailingAssistantGuard,
}

impl TrailingAssistantGuardBuilder {
    /// What it does to such a prompt ([`TrailingStrategy::Continue`] by default).
    pub fn strategy(mut self, strategy: TrailingStrategy) -> Self {
        self.guard.strategy = strategy;
        self
    }

    /// The user message added under [`TrailingStrategy::Continue`] ("Continue." by default).
    pub fn continuation(mut self, text: impl Into<String>) -> Self {
        self.guard.continuation = text.into();
        self
    }

    /// Fixes prompts only for the models whose `provider/model` matches one of `patterns`
    /// (`*` for any characters: `"anthropic/*"`, `"*/claude-sonnet-4*"`).
    pub fn models<I: IntoIterator<Item = S>, S: Into<String>>(mut self, patterns: I) -> Self {
        self.guard.models = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<TrailingAssistantGuard, ConfigError> {
        if self.guard.continuation.trim().is_empty() {
            return Err(ConfigError::Empty {
                what: "the continuation message",
                why: "providers refuse an empty user message, so give it some text (\"Continue.\" by default)",
            });
        }
        if let Some(p) = self.guard.models.iter().find(|p| p.trim().is_empty()) {
            return Err(ConfigError::InvalidName {
                what: "model pattern",
                name: p.clone(),
                why: "an empty pattern matches no model; give `provider/model`, `*` for any characters",
            });
        }
        Ok(self.guard)
    }
}

impl Default for TrailingAssistantGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl TrailingAssistantGuard {
    /// A guard for every model that continues with "Continue.".
    pub fn new() -> Self {
        TrailingAssistantGuard {
            strategy: TrailingStrategy::Continue,
            continuation: DEFAULT_CONTINUATION.to_owned(),
            models: Vec::new(),
        }
    }

    /// Starts configuring a guard.
    ///
    /// ```
    /// use processors::builtins::recovery::{TrailingAssistantGuard, TrailingStrategy};
    /// let guard = TrailingAssistantGuard::builder()
    ///     .strategy(TrailingStrategy::Drop)
    ///     .models(["anthropic/*"])
    ///     .build()
    ///     .unwrap();
    /// assert!(guard.fixes("anthropic", "claude-sonnet-4-5"));
    /// assert!(!guard.fixes("openai", "gpt-4o-mini"));
    /// assert!(TrailingAssistantGuard::builder().continuation(" ").build().is_err());
    /// ```
    pub fn builder() -> TrailingAssistantGuardBuilder {
        TrailingAssistantGuardBuilder { guard: Self::new() }
    }

    /// Whether it fixes prompts for the model `model_id` of `provider`.
    pub fn fixes(&self, provider: &str, model_id: &str) -> bool {
        if self.models.is_empty() {
            return true;
        }
        let name = format!("{provider}/{model_id}");
        self.models.iter().any(|p| wildcard(p, &name))
    }

    /// The prompt to send instead of `prompt`, when it ends with the assistant's message.
    fn fixed(&self, prompt: &[Message]) -> Option<Vec<Message>> {
        let prefill = |m: &Message| m.role == Role::Assistant && m.tool_calls().next().is_none();
        let last = prompt.last().filter(|m| prefill(m))?;
        let mut fixed = prompt.to_vec();
        if self.strategy == TrailingStrategy::Continue && !last.text().trim().is_empty() {
            let mut continuation = Message::user(self.continuation.clone());
            continuation.metadata = Some(json!({ "guard": "trailing-assistant-guard" }));
            fixed.push(continuation);
        } else {
            while fixed.last().is_some_and(prefill) {
                fixed.pop();
            }
        }
        // A prompt of nothing but the assistant's words is left as it is: there is no
        // conversation to answer without them.
        (fixed.iter().any(|m| m.role != Role::System)).then_some(fixed)
    }
}

#[processor(crate = processors_runtime, id = "trailing-assistant-guard")]
impl TrailingAssistantGuard {
    /// Sends the fixed prompt for this call, when the model is one it fixes prompts for.
    fn process_llm_request(
        &self,
        request: &ModelRequest,
        model: &dyn LanguageModel,
    ) -> LlmRequestAction {
        if !self.fixes(model.provider(), model.model_id()) {
            return LlmRequestAction::Continue;
        }
        match self.fixed(&request.prompt) {
            Some(prompt) => {
                tracing::debug!(
                    "the prompt ended with the assistant's message; fixed before the call"
                );
                LlmRequestAction::Prompt(prompt)
            }
            None => LlmRequestAction::Continue,
        }
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any characters (none included).
fn wildcard(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_assistant_message_with_tool_calls_or_alone_is_no_prefill_to_fix() {
        use processors_runtime::message::{Part, ToolCall};
        let guard = TrailingAssistantGuard::new();
        let calling = Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall {
                tool_call_id: "c1".into(),
                tool_name: "weather".into(),
                args: json!({}),
            })],
        );
        assert_eq!(guard.fixed(&[Message::user("Weather?"), calling]), None);
        let alone = [Message::system("Be brief."), Message::assistant("")];
        assert_eq!(guard.fixed(&alone), None);
        let fixed = guard.fixed(&[Message::user("Hi."), Message::assistant("Hel")]);
        assert_eq!(fixed.map(|p| p.len()), Some(3));
    }

    #[test]
    fn a_star_stands_for_any_characters() {
        assert!(wildcard("anthropic/*", "anthropic/claude-sonnet-4-5"));
        assert!(wildcard(
            "*/claude-sonnet-4*",
            "anthropic/claude-sonnet-4-5"
        ));
        assert!(wildcard("openai/gpt-4o", "openai/gpt-4o"));
        assert!(!wildcard("openai/gpt-4o", "openai/gpt-4o-mini"));
        assert!(wildcard("*", ""));
        assert!(wildcard("a*b*c", "abc"));
        assert!(!wildcard("a*b*c", "acb"));
        assert!(!wildcard("ab*ba", "aba"));
    }
}
