//! [`ContextLengthHandler`]: drops the oldest turns when the provider says the prompt is over
//! the model's context window, and asks for the call again.

use super::{StepAttempts, error_text, mentions_any};
use crate::config::ConfigError;
use crate::tokenizer::Tokenizer;
use processors_macros::processor;
use processors_runtime::message::{Message, MessageList, Part, Role};
use processors_runtime::model::ApiError;
use processors_runtime::processor::ApiErrorAction;
use processors_runtime::processor::extract::StepNumber;
use std::collections::HashSet;
use std::ops::Range;

/// What the providers say: OpenAI's "This model's maximum context length is 128000 tokens"
/// (code `context_length_exceeded`), Anthropic's "prompt is too long: 210000 tokens > 200000
/// maximum", and the wording of other servers.
const CONTEXT_TOO_LONG: &[&str] = &[
    "context length",
    "context_length",
    "context window",
    "prompt is too long",
    "prompt too long",
    "input is too long",
    "too many tokens",
    "request_too_large",
    "reduce the length of the messages",
];

/// Drops the oldest turns of the conversation when the provider refuses the prompt as over
/// the model's context window, and asks for the call again.
///
/// It acts on a 400 (or 413) whose message or body says the context is too long ("maximum
/// context length", "prompt is too long", "too many tokens", OpenAI's code
/// `context_length_exceeded`, …; add phrases with [`matching`](ContextLengthHandlerBuilder::matching)).
/// It then removes the oldest messages of the run's list, by whole units, until a
/// [`fraction`](ContextLengthHandlerBuilder::fraction) of the conversation's tokens (half by
/// default, counted with the [`Tokenizer`] of `TokenLimiter`) is gone:
///
/// - the turns before the newest user message, oldest first (a turn is a user message and
///   what answers it, so a tool call always goes with its results);
/// - then, within the current turn, its older tool rounds (an answer and its tool results),
///   never the newest one.
///
/// System messages, the newest user message and the newest round are never dropped, and no
/// tool result is left whose call was dropped. With nothing left to drop, the error is left to
/// the processors after it. It tries at most [`max_attempts`](ContextLengthHandlerBuilder::max_attempts)
/// times per step (2 by default), each dropping the fraction again.
///
/// Messages loaded from memory come first, so they go first; memory keeps them. A message of
/// this run's own input or answers that is dropped is not saved.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::ContextLengthHandler;
/// use processors::prelude::*;
///
/// let too_long = ApiError::new(400, "This model's maximum context length is 8192 tokens.");
/// let model = ScriptedModel::new([Turn::error(too_long), Turn::text("Fine.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .error(ContextLengthHandler::new())
///     .build()?;
/// let conversation = vec![
///     Message::user("first question"), Message::assistant("a long answer ".repeat(50)),
///     Message::user("second question"), Message::assistant("second answer"),
///     Message::user("And now?"),
/// ];
/// assert_eq!(agent.generate(conversation).await?.text, "Fine.");
/// let retried: Vec<String> = model.requests()[1].prompt.iter().map(Message::text).collect();
/// assert_eq!(retried, ["second question", "second answer", "And now?"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ContextLengthHandler {
    fraction: f64,
    max_attempts: u32,
    tokenizer: Tokenizer,
    phrases: Vec<String>,
}

/// Builds a [`ContextLengthHandler`]; see [`ContextLengthHandler::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ContextLengthHandlerBuilder {
    fraction: f64,
    max_attempts: u32,
    tokenizer: Tokenizer,
    phrases: Vec<String>,
}

impl ContextLengthHandlerBuilder {
    /// The part of the conversation's tokens each attempt drops, above 0 and at most 1 (0.5
    /// by default).
    pub fn fraction(mut self, fraction: f64) -> Self {
        self.fraction = fraction;
        self
    }

    /// Attempts per step (2 by default); the agent's `max_processor_retries` still bounds
    /// the retries of all processors together.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// How messages are counted ([`Tokenizer::ByModel`], that is `o200k_base`, by default;
    /// [`Tokenizer::Estimate`] loads no tokenizer).
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// Also recognises an error whose message or body contains this phrase (compared
    /// without case, quotes or backticks).
    pub fn matching(mut self, phrase: impl Into<String>) -> Self {
        self.phrases.push(phrase.into());
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<ContextLengthHandler, ConfigError> {
        if !(self.fraction > 0.0 && self.fraction <= 1.0) {
            return Err(ConfigError::OutOfRange {
                option: "fraction",
                value: self.fraction.to_string(),
                expected: "give a number above 0 and at most 1 (0.5 drops the older half)",
            });
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::Zero {
                option: "max_attempts",
                why: "it would never retry; allow at least 1 attempt",
            });
        }
        let mut phrases = Vec::with_capacity(self.phrases.len());
        for phrase in self.phrases {
            let mut phrase = phrase.to_lowercase();
            phrase.retain(|c| !matches!(c, '`' | '\'' | '"'));
            if phrase.trim().is_empty() {
                return Err(ConfigError::Empty {
                    what: "a phrase to recognise the error by",
                    why: "give words the provider's error message has",
                });
            }
            phrases.push(phrase);
        }
        Ok(ContextLengthHandler {
            fraction: self.fraction,
            max_attempts: self.max_attempts,
            tokenizer: self.tokenizer,
            phrases,
        })
    }
}

/// The per-request state of a [`ContextLengthHandler`]: its attempts in the current step.
#[derive(Debug, Default)]
pub struct ContextLengthHandlerState {
    attempts: StepAttempts,
}

impl Default for ContextLengthHandler {
    fn default() -> Self {
        Self::new()
    }
}

/// What one trim drops and changes.
#[derive(Debug, Default)]
struct Trim {
    /// Ids of the messages to remove.
    drop: Vec<String>,
    /// Kept messages without the results of dropped calls.
    changed: Vec<Message>,
    /// Tokens of the conversation before, and of what is dropped.
    before: usize,
    dropped: usize,
}

impl ContextLengthHandler {
    /// A handler with the defaults: half the conversation per attempt, 2 attempts per step.
    pub fn new() -> Self {
        ContextLengthHandler {
            fraction: 0.5,
            max_attempts: 2,
            tokenizer: Tokenizer::ByModel,
            phrases: Vec::new(),
        }
    }

    /// Starts configuring a handler.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::recovery::ContextLengthHandler;
    /// use processors::builtins::tokenizer::Tokenizer;
    /// let handler = ContextLengthHandler::builder()
    ///     .fraction(0.25)
    ///     .max_attempts(4)
    ///     .tokenizer(Tokenizer::Estimate)
    ///     .matching("input exceeds the model's window")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(handler.max_attempts(), 4);
    /// let err = ContextLengthHandler::builder().fraction(1.5).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::OutOfRange { option: "fraction", .. }));
    /// ```
    pub fn builder() -> ContextLengthHandlerBuilder {
        ContextLengthHandlerBuilder {
            fraction: 0.5,
            max_attempts: 2,
            tokenizer: Tokenizer::ByModel,
            phrases: Vec::new(),
        }
    }

    /// The part of the conversation each attempt drops.
    pub fn fraction(&self) -> f64 {
        self.fraction
    }

    /// Attempts per step.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Whether `error` says the prompt is over the context window: status 400 or 413 and a
    /// message or body that says so.
    ///
    /// ```
    /// use processors::builtins::ContextLengthHandler;
    /// use processors::model::ApiError;
    /// let handler = ContextLengthHandler::new();
    /// let openai = ApiError::new(400, "bad request: Please reduce it. (invalid_request_error)")
    ///     .with_body(r#"{"error":{"code":"context_length_exceeded"}}"#);
    /// assert!(handler.is_context_length_error(&openai));
    /// assert!(!handler.is_context_length_error(&ApiError::new(400, "Unknown parameter")));
    /// assert!(!handler.is_context_length_error(&ApiError::new(500, "prompt is too long")));
    /// ```
    pub fn is_context_length_error(&self, error: &ApiError) -> bool {
        if !matches!(error.status, Some(400 | 413)) {
            return false;
        }
        let text = error_text(error);
        mentions_any(&text, CONTEXT_TOO_LONG) || self.phrases.iter().any(|p| text.contains(p))
    }

    /// Plans the removal of the oldest units until the fraction of tokens is gone.
    fn plan(&self, messages: &[&Message]) -> Trim {
        let costs: Vec<usize> = messages
            .iter()
            .map(|m| self.tokenizer.count_message(m))
            .collect();
        let before: usize = costs.iter().sum();
        let mut trim = Trim {
            before,
            ..Trim::default()
        };
        // At least one token, and at least the fraction (rounded up).
        let target = ((before as f64) * self.fraction).ceil().max(1.0) as usize;
        let mut dropped: Vec<usize> = Vec::new();
        for unit in units(messages) {
            if trim.dropped >= target {
                break;
            }
            trim.dropped += costs[unit.clone()].iter().sum::<usize>();
            dropped.extend(unit);
        }
        if dropped.is_empty() {
            return trim;
        }
        // No result may outlive its call.
        let calls: HashSet<&str> = dropped
            .iter()
            .flat_map(|&i| messages[i].tool_calls())
            .map(|c| c.tool_call_id.as_str())
            .collect();
        let dropped_set: HashSet<usize> = dropped.iter().copied().collect();
        for (i, m) in messages.iter().enumerate() {
            if dropped_set.contains(&i) {
                continue;
            }
            let stale = |p: &Part| matches!(p, Part::ToolResult(r) if calls.contains(r.tool_call_id.as_str()));
            if !m.content.parts.iter().any(stale) {
                continue;
            }
            let mut m = (*m).clone();
            m.content.parts.retain(|p| !stale(p));
            if m.content.parts.is_empty() {
                trim.dropped += costs[i];
                dropped.push(i);
            } else {
                trim.changed.push(m);
            }
        }
        trim.drop = dropped.iter().map(|&i| messages[i].id.clone()).collect();
        trim
    }
}

/// The units the conversation may lose, oldest first: the turns before the newest user
/// message (each from a user message to the next), then the current turn's tool rounds (an
/// answer and the results after it), except the newest.
fn units(messages: &[&Message]) -> Vec<Range<usize>> {
    let newest_user = messages.iter().rposition(|m| m.role == Role::User);
    let mut out = Vec::new();
    let head = newest_user.unwrap_or(0);
    // Each user message before the newest begins a turn (what precedes the first is one too).
    let mut starts: Vec<usize> = (1..head)
        .filter(|&i| messages[i].role == Role::User)
        .collect();
    starts.insert(0, 0);
    starts.push(head);
    for pair in starts.windows(2) {
        if pair[0] < pair[1] {
            out.push(pair[0]..pair[1]);
        }
    }
    // The current turn: rounds start at the assistant's answers after the newest user message.
    let first_round = newest_user.map_or(0, |u| u + 1);
    let rounds: Vec<usize> = (first_round..messages.len())
        .filter(|&i| messages[i].role == Role::Assistant)
        .collect();
    for pair in rounds.windows(2) {
        out.push(pair[0]..pair[1]);
    }
    out
}

#[processor(crate = processors_runtime, id = "context-length-handler")]
impl ContextLengthHandler {
    /// On a context-length refusal: drops the oldest turns and asks for the call again.
    fn process_api_error(
        &self,
        error: &ApiError,
        list: &mut MessageList,
        step: StepNumber,
        state: &mut ContextLengthHandlerState,
    ) -> ApiErrorAction {
        if !self.is_context_length_error(error) || state.attempts.used(step.0) >= self.max_attempts
        {
            return ApiErrorAction::Unhandled;
        }
        let messages: Vec<&Message> = list.all().collect();
        let trim = self.plan(&messages);
        if trim.drop.is_empty() {
            tracing::debug!("the context is too long, and nothing older is left to drop");
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        tracing::debug!(
            messages = trim.drop.len(),
            tokens = trim.dropped,
            of = trim.before,
            "the context is too long: dropped the oldest messages"
        );
        let ids: Vec<&str> = trim.drop.iter().map(String::as_str).collect();
        list.remove(&ids);
        for m in trim.changed {
            list.replace(m);
        }
        ApiErrorAction::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(spec: &str) -> Vec<Message> {
        spec.chars()
            .map(|c| match c {
                'u' => Message::user("u"),
                'a' => Message::assistant("a"),
                _ => Message::new(Role::Tool, vec![]),
            })
            .collect()
    }

    #[test]
    fn units_are_older_turns_then_older_rounds_of_the_current_turn() {
        let ms = roles("uatauauatata");
        let refs: Vec<&Message> = ms.iter().collect();
        // Turns 0..4 and 4..6; the newest user message is at 6; rounds at 7, 9 and 11, the
        // newest one (11..) is kept.
        assert_eq!(units(&refs), [0..4, 4..6, 7..9, 9..11]);
        let ms = roles("ata");
        let refs: Vec<&Message> = ms.iter().collect();
        assert_eq!(units(&refs), vec![Range { start: 0, end: 2 }]);
        let ms = roles("u");
        let refs: Vec<&Message> = ms.iter().collect();
        assert!(units(&refs).is_empty());
        let ms = roles("au");
        let refs: Vec<&Message> = ms.iter().collect();
        assert_eq!(units(&refs), vec![Range { start: 0, end: 1 }]);
    }
}
