//! [`TokenLimiter`]: keeps prompts within a context window and answers within an output budget,
//! counting with the model's real tokenizer.
//!
//! One limiter, two placements:
//!
//! - **In `input`**, the limit is the size of each prompt. When the conversation is over it,
//!   the oldest messages go first: system messages are never dropped, a tool call is dropped
//!   together with its results, and the newest user message is always kept. Messages loaded
//!   from memory (or added as context) are removed from the run's list before the loop
//!   (`process_input`) and before each step (`process_input_step`), since memory already holds
//!   them; the run's own input and answers are only ever left out of the prompt of one call
//!   (`process_llm_request`), so memory still saves the whole turn. The request hook sees the
//!   prompt exactly as sent, system messages and tool schemas included, so what reaches the
//!   model fits.
//! - **In `output`**, the limit is the length of the answer: text deltas are counted as they
//!   stream, across the run ([`CountMode::Cumulative`]) or step by step
//!   ([`CountMode::PerStep`]). Past the limit, [`LimitStrategy::Abort`] ends the run with a
//!   trip wire, and [`LimitStrategy::Truncate`] cuts the delta that crosses the limit, drops
//!   the rest of the text and reasoning, and reports finish reason `length` on the streamed
//!   `step-finish` and `finish` chunks (the run's result keeps the model's own finish reason,
//!   which processors cannot change). Tool calls still pass, so a tool loop goes on; counted
//!   across the run, its later steps' text is dropped as well. `process_output_result` applies
//!   the same limit to the response messages, which covers answers replayed from a cache (they
//!   skip stream processors).
//!
//! With [`LimitStrategy::Abort`] on the input side, a prompt over the limit ends the run instead
//! of being trimmed; with either strategy, a prompt that cannot fit even after trimming (the
//! system messages, tools and newest user message alone are over the limit) ends it.
//!
//! # Counting
//!
//! [`Tokenizer::ByModel`] (the default) counts with the encoding of the model a hook sees
//! (`process_input_step`, `process_llm_request`): `o200k_base` for GPT-4o, GPT-4.1, GPT-5 and
//! the o-series, `cl100k_base` for GPT-4 and GPT-3.5, and `o200k_base` for any other model.
//! Hooks that do not see the model (`process_input` and the output hooks) use `o200k_base`; name
//! the encoding ([`Tokenizer::for_model`], [`Tokenizer::Cl100k`]) to count them alike.
//! [`Tokenizer::Estimate`] loads no tokenizer and counts one token per four bytes of UTF-8.
//! The encodings are compiled into the binary: counting never touches the network.
//!
//! A message costs its text, its tool calls (name and JSON arguments) and tool results (the
//! JSON result), 85 tokens per file, and 3 tokens of framing; a prompt costs 3 more, and the
//! tools it offers their names, descriptions and schemas. Reasoning and `data` parts are not
//! sent to providers and cost nothing.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::token_limiter::{LimitStrategy, TokenLimiter};
//! use processors::prelude::*;
//!
//! let model = ScriptedModel::new([Turn::deltas(["one two three ", "four five six seven"])]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(TokenLimiter::new(2_000)?)
//!     .output(
//!         TokenLimiter::builder(3)
//!             .strategy(LimitStrategy::Truncate)
//!             .build()?,
//!     )
//!     .build()?;
//! let result = agent.generate("count to seven").await?;
//! assert_eq!(result.text, "one two three");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::chunk::{Chunk, ChunkKind, FinishReason};
use processors_runtime::context::RequestContext;
use processors_runtime::message::{Message, MessageList, MessageSource, Part, Role};
use processors_runtime::model::{LanguageModel, ModelRequest, ToolSpec};
use processors_runtime::processor::{
    Abort, LlmRequestAction, OutputOutcome, ProcessorError, StepConfig, StreamAction,
};
use serde_json::json;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::tokenizer::Tokenizer;
use crate::tokenizer::{
    MAX_PIECE, TOKENS_PER_PROMPT, floor_boundary, last_word_start, message_tokens, tools_tokens,
};

/// What the limiter does at the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitStrategy {
    /// Input: drop the oldest messages until the prompt fits. Output: cut the answer at the
    /// limit and finish with reason `length`.
    #[default]
    Truncate,
    /// End the run with a trip wire, changing nothing.
    Abort,
}

/// The counts a [`TokenLimiter`] made, readable while and after a run: put a clone in the
/// request context (`RequestContext::new().with(count.clone())`) and read it through the
/// one you kept.
///
/// - [`prompt_tokens`](TokenCount::prompt_tokens): the last model call's prompt, as the
///   input side counted it in `process_llm_request` (after trimming), at no extra cost.
/// - [`answer_tokens`](TokenCount::answer_tokens): the run's answer as the output side
///   keeps it, counted at the end of the run (`process_output_result`); only a limiter that
///   finds a count in the context counts an answer far below its limit there.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::token_limiter::{TokenCount, TokenLimiter};
/// use processors::prelude::*;
///
/// let count = TokenCount::new();
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([Turn::deltas(["one two ", "three"])]))
///     .input(TokenLimiter::new(1_000)?)
///     .output(TokenLimiter::new(1_000)?)
///     .build()?;
/// let options = GenerateOptions::new().request_context(RequestContext::new().with(count.clone()));
/// agent.generate_with("count to three", options).await?;
/// assert_eq!(count.answer_tokens(), 3);
/// assert!(count.prompt_tokens() > 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct TokenCount(Arc<(AtomicUsize, AtomicUsize)>);

impl TokenCount {
    /// A count of nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last model call's prompt, in tokens (0 before the first).
    pub fn prompt_tokens(&self) -> usize {
        self.0.0.load(Ordering::Relaxed)
    }

    /// The run's answer, in tokens (0 before the run ends).
    pub fn answer_tokens(&self) -> usize {
        self.0.1.load(Ordering::Relaxed)
    }
}

/// Which messages the input side leaves out when the conversation is over the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrimMode {
    /// The oldest first, until the rest fits: what is kept is the newest part of the
    /// conversation, without gaps (the default).
    #[default]
    Contiguous,
    /// The newest that fit: going from the newest back, each message (with its tool results)
    /// is kept when it fits in the room left and left out when it does not, so an older short
    /// message can stay where a newer long one goes. More of the conversation fits; what is
    /// kept may have gaps.
    BestFit,
}

/// How the output side counts the answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CountMode {
    /// The text of every step of the run counts against one limit.
    #[default]
    Cumulative,
    /// Each step's text has the whole limit to itself.
    PerStep,
}

/// Keeps prompts and answers within a token limit; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct TokenLimiter {
    limit: usize,
    tokenizer: Tokenizer,
    strategy: LimitStrategy,
    count_mode: CountMode,
    trim_mode: TrimMode,
}

/// Builds a [`TokenLimiter`]; see [`TokenLimiter::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct TokenLimiterBuilder {
    limit: usize,
    tokenizer: Tokenizer,
    strategy: LimitStrategy,
    count_mode: CountMode,
    trim_mode: TrimMode,
}

impl TokenLimiterBuilder {
    /// Which tokenizer counts ([`Tokenizer::ByModel`] by default).
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// What happens at the limit ([`LimitStrategy::Truncate`] by default).
    pub fn strategy(mut self, strategy: LimitStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How the answer is counted on the output side ([`CountMode::Cumulative`] by default).
    pub fn count_mode(mut self, count_mode: CountMode) -> Self {
        self.count_mode = count_mode;
        self
    }

    /// Which messages the input side leaves out ([`TrimMode::Contiguous`] by default).
    pub fn trim_mode(mut self, trim_mode: TrimMode) -> Self {
        self.trim_mode = trim_mode;
        self
    }

    /// Checks the configuration and loads the tokenizer it names (`o200k_base` for
    /// [`Tokenizer::ByModel`]; `cl100k_base` is loaded when a model first needs it), so that
    /// no hook pays for loading it.
    pub fn build(self) -> Result<TokenLimiter, ConfigError> {
        if self.limit == 0 {
            return Err(ConfigError::Zero {
                option: "limit",
                why: "no prompt or answer fits in it; give a limit of at least 1",
            });
        }
        self.tokenizer.load();
        Ok(TokenLimiter {
            limit: self.limit,
            tokenizer: self.tokenizer,
            strategy: self.strategy,
            count_mode: self.count_mode,
            trim_mode: self.trim_mode,
        })
    }
}

/// The per-request state of a [`TokenLimiter`]: what the output side counted.
#[derive(Debug, Default)]
pub struct TokenLimiterState {
    /// The answer counted so far (this step's, per step).
    counted: Counted,
    /// What was counted when the current step started, to forget a rejected attempt.
    at_step_start: Option<(Counted, bool)>,
    /// The limit was reached: later text is dropped (until the next step, per step).
    cut: bool,
    /// This step's text was cut.
    step_cut: bool,
    /// An accepted step's text was cut: the run finishes with reason `length`.
    run_cut: bool,
}

/// Text counted incrementally: the tokens of everything up to the last word start, and the
/// text after it, counted again as it grows, so that the total is the count of the whole.
#[derive(Debug, Default, Clone)]
struct Counted {
    /// Tokens (bytes, for the estimate) of the text before `pending`.
    committed: usize,
    pending: String,
}

/// What adding text to a [`Counted`] found.
enum Added {
    /// The total fits in the limit.
    Fits,
    /// The total is over the limit; `keep` bytes of the added text fit.
    Over { total: usize, keep: usize },
}

impl Counted {
    /// Adds `text`, checking the total against `limit`. Past it, only the part that fits
    /// stays counted.
    fn add(&mut self, t: Tokenizer, text: &str, limit: usize) -> Added {
        if t == Tokenizer::Estimate {
            let before = self.committed;
            self.committed += text.len();
            let total = self.committed.div_ceil(4);
            if total <= limit {
                return Added::Fits;
            }
            let keep = floor_boundary(text, limit.saturating_mul(4).saturating_sub(before));
            self.committed = before + keep;
            return Added::Over { total, keep };
        }
        let earlier = self.pending.len();
        self.pending.push_str(text);
        // A token is at least one byte: while even that many tokens fit, counting can wait
        // (so an answer far below the limit is tokenized once, not at every delta).
        if self.committed.saturating_add(self.pending.len()) <= limit {
            return Added::Fits;
        }
        let total = self.committed + t.count(&self.pending);
        if total > limit {
            let kept = t
                .prefix(&self.pending, limit.saturating_sub(self.committed))
                .len();
            let keep = floor_boundary(text, kept.saturating_sub(earlier));
            self.pending.truncate(earlier + keep);
            return Added::Over { total, keep };
        }
        // What comes before the last word start will not change: count it once.
        let cut = match last_word_start(&self.pending) {
            Some(i) => i,
            None if self.pending.len() > MAX_PIECE => floor_boundary(&self.pending, MAX_PIECE),
            None => 0,
        };
        if cut > 0 {
            self.committed += t.count(&self.pending[..cut]);
            self.pending.drain(..cut);
        }
        Added::Fits
    }
}

/// The messages that go together: a message and the tool results after it.
fn groups(messages: &[&Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=messages.len() {
        if i == messages.len() || messages[i].role != Role::Tool {
            out.push(start..i);
            start = i;
        }
    }
    out
}

/// What trimming a conversation found.
struct Trim {
    /// Tokens before trimming.
    before: usize,
    /// Tokens after dropping `drop`.
    after: usize,
    /// The indices of the messages to drop.
    drop: Vec<usize>,
}

impl TokenLimiter {
    /// A limiter with the default options: [`Tokenizer::ByModel`], [`LimitStrategy::Truncate`],
    /// [`CountMode::Cumulative`].
    pub fn new(limit: usize) -> Result<Self, ConfigError> {
        Self::builder(limit).build()
    }

    /// Starts configuring a limiter of `limit` tokens.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::token_limiter::*;
    /// let limiter = TokenLimiter::builder(500)
    ///     .tokenizer(Tokenizer::for_model("gpt-4"))
    ///     .strategy(LimitStrategy::Abort)
    ///     .count_mode(CountMode::PerStep)
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(limiter.limit(), 500);
    /// let error = TokenLimiter::new(0).unwrap_err();
    /// assert!(matches!(error, ConfigError::Zero { option: "limit", .. }));
    /// ```
    pub fn builder(limit: usize) -> TokenLimiterBuilder {
        TokenLimiterBuilder {
            limit,
            tokenizer: Tokenizer::ByModel,
            strategy: LimitStrategy::Truncate,
            count_mode: CountMode::Cumulative,
            trim_mode: TrimMode::Contiguous,
        }
    }

    /// The limit, in tokens.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Which messages to drop so that `fixed` tokens plus `messages` fit: groups (a message
    /// and its tool results), never the newest user message's, and only groups whose every
    /// message is `removable`; the oldest first ([`TrimMode::Contiguous`]), or those that do
    /// not fit going from the newest back ([`TrimMode::BestFit`]).
    fn plan(
        &self,
        t: Tokenizer,
        fixed: usize,
        messages: &[&Message],
        removable: impl Fn(&Message) -> bool,
    ) -> Trim {
        let costs: Vec<usize> = messages.iter().map(|m| message_tokens(t, m)).collect();
        let before = fixed + costs.iter().sum::<usize>();
        let mut trim = Trim {
            before,
            after: before,
            drop: Vec::new(),
        };
        if self.strategy == LimitStrategy::Abort || before <= self.limit {
            return trim;
        }
        let newest_user = messages.iter().rposition(|m| m.role == Role::User);
        let kept = |group: &Range<usize>| {
            newest_user.is_some_and(|u| group.contains(&u))
                || !messages[group.clone()].iter().all(|m| removable(m))
        };
        let cost = |group: &Range<usize>| costs[group.clone()].iter().sum::<usize>();
        let groups = groups(messages);
        match self.trim_mode {
            TrimMode::Contiguous => {
                for group in groups {
                    if trim.after <= self.limit {
                        break;
                    }
                    if kept(&group) {
                        continue;
                    }
                    trim.after -= cost(&group);
                    trim.drop.extend(group);
                }
            }
            TrimMode::BestFit => {
                let fixed = fixed + groups.iter().filter(|g| kept(g)).map(cost).sum::<usize>();
                let mut room = self.limit.saturating_sub(fixed);
                for group in groups.iter().rev().filter(|g| !kept(g)) {
                    match cost(group) <= room {
                        true => room -= cost(group),
                        false => {
                            trim.after -= cost(group);
                            trim.drop.extend(group.clone());
                        }
                    }
                }
                trim.drop.sort_unstable();
            }
        }
        trim
    }

    /// The abort of a prompt over the limit (strategy abort), or that cannot fit.
    fn prompt_abort(&self, abort: Abort, t: Tokenizer, trim: &Trim) -> ProcessorError {
        let reason = match self.strategy {
            LimitStrategy::Abort => format!(
                "the prompt has {} tokens, over the limit of {}",
                trim.before, self.limit
            ),
            LimitStrategy::Truncate => format!(
                "the prompt cannot fit in {} tokens: after dropping every older message it still has {} (the system messages, the tools and the newest user message are never dropped)",
                self.limit, trim.after
            ),
        };
        abort
            .reason(reason)
            .metadata(json!({
                "limit": self.limit,
                "tokens": trim.before,
                "tokensAfterTrim": trim.after,
                "encoding": t.name(),
            }))
            .into()
    }

    /// Trims the run's list: drops messages loaded from memory or added as context. Aborts
    /// when the strategy is abort and the conversation is over the limit.
    fn trim_list(
        &self,
        t: Tokenizer,
        fixed: usize,
        list: &mut MessageList,
        abort: Abort,
    ) -> Result<(), ProcessorError> {
        let fixed = fixed
            + TOKENS_PER_PROMPT
            + list
                .all_system_messages()
                .map(|m| message_tokens(t, m))
                .sum::<usize>();
        let messages: Vec<&Message> = list.all().collect();
        let trim = self.plan(t, fixed, &messages, |m| {
            matches!(
                list.source_of(&m.id),
                Some(MessageSource::Memory | MessageSource::Context)
            )
        });
        if self.strategy == LimitStrategy::Abort && trim.before > self.limit {
            return Err(self.prompt_abort(abort, t, &trim));
        }
        let ids: Vec<String> = trim.drop.iter().map(|&i| messages[i].id.clone()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        list.remove(&ids);
        Ok(())
    }

    /// Cuts the text parts of `m` to `room` tokens; returns the tokens it kept.
    fn cut_message(&self, t: Tokenizer, m: &mut Message, room: usize) -> usize {
        let mut used = 0;
        for part in &mut m.content.parts {
            if let Part::Text { text } = part {
                let keep = t.prefix(text, room.saturating_sub(used)).len();
                text.truncate(keep);
                used += t.count(text);
            }
        }
        m.content
            .parts
            .retain(|p| !matches!(p, Part::Text { text } if text.is_empty()));
        used
    }

    /// The abort of an answer past the limit.
    fn answer_abort(&self, abort: Abort, counted: usize) -> ProcessorError {
        let mode = match self.count_mode {
            CountMode::Cumulative => "cumulative",
            CountMode::PerStep => "per-step",
        };
        abort
            .reason(format!(
                "the answer reached the limit of {} output tokens",
                self.limit
            ))
            .metadata(json!({
                "limit": self.limit,
                "tokens": counted,
                "countMode": mode,
                "encoding": self.tokenizer.resolve(None).name(),
            }))
            .into()
    }
}

#[processor(crate = processors_runtime, id = "token-limiter")]
impl TokenLimiter {
    /// Before the loop: drops the oldest remembered messages until the conversation fits.
    fn process_input(&self, list: &mut MessageList, abort: Abort) -> Result<(), ProcessorError> {
        self.trim_list(self.tokenizer.resolve(None), 0, list, abort)
    }

    /// Before each step: the same, on the conversation as it grew, with the step's tools.
    fn process_input_step(
        &self,
        list: &mut MessageList,
        config: &StepConfig,
        abort: Abort,
    ) -> Result<(), ProcessorError> {
        let t = self.tokenizer.resolve(Some(config.model.model_id()));
        let offered = config.tools.iter().filter(|tool| {
            config
                .active_tools
                .as_ref()
                .is_none_or(|a| a.iter().any(|n| n == tool.name()))
        });
        let specs: Vec<ToolSpec> = offered.map(|tool| tool.spec()).collect();
        self.trim_list(t, tools_tokens(t, specs.iter()), list, abort)
    }

    /// On the prompt as sent: leaves the oldest messages out of this call's prompt until it
    /// fits; aborts when it cannot fit.
    fn process_llm_request(
        &self,
        request: &ModelRequest,
        model: &dyn LanguageModel,
        cx: &RequestContext,
        abort: Abort,
    ) -> Result<LlmRequestAction, ProcessorError> {
        let t = self.tokenizer.resolve(Some(model.model_id()));
        let prompt = &request.prompt;
        let rest: Vec<usize> = (0..prompt.len())
            .filter(|&i| prompt[i].role != Role::System)
            .collect();
        let fixed = TOKENS_PER_PROMPT
            + tools_tokens(t, request.tools.iter())
            + prompt
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| message_tokens(t, m))
                .sum::<usize>();
        let messages: Vec<&Message> = rest.iter().map(|&i| &prompt[i]).collect();
        let trim = self.plan(t, fixed, &messages, |_| true);
        if let Some(count) = cx.get::<TokenCount>() {
            count.0.0.store(trim.after, Ordering::Relaxed);
        }
        if trim.after > self.limit {
            return Err(self.prompt_abort(abort, t, &trim));
        }
        if trim.drop.is_empty() {
            return Ok(LlmRequestAction::Continue);
        }
        let dropped: Vec<usize> = trim.drop.iter().map(|&i| rest[i]).collect();
        let prompt = prompt
            .iter()
            .enumerate()
            .filter(|(i, _)| !dropped.contains(i))
            .map(|(_, m)| m.clone())
            .collect();
        Ok(LlmRequestAction::Prompt(prompt))
    }

    /// On each chunk: counts the answer's text; past the limit, aborts or cuts it.
    fn process_output_stream(
        &self,
        chunk: &Chunk,
        state: &mut TokenLimiterState,
        abort: Abort,
    ) -> Result<StreamAction, ProcessorError> {
        let t = self.tokenizer.resolve(None);
        match &chunk.kind {
            ChunkKind::StepStart { .. } => {
                match self.count_mode {
                    CountMode::PerStep => {
                        state.counted = Counted::default();
                        state.cut = false;
                    }
                    CountMode::Cumulative => {
                        state.at_step_start = Some((state.counted.clone(), state.cut));
                    }
                }
                state.step_cut = false;
                Ok(StreamAction::Pass)
            }
            ChunkKind::TextDelta { text, .. } => {
                if state.cut {
                    state.step_cut = true;
                    return Ok(StreamAction::Drop);
                }
                let Added::Over { total, keep } = state.counted.add(t, text, self.limit) else {
                    return Ok(StreamAction::Pass);
                };
                if self.strategy == LimitStrategy::Abort {
                    return Err(self.answer_abort(abort, total));
                }
                state.cut = true;
                state.step_cut = true;
                Ok(match keep {
                    0 => StreamAction::Drop,
                    n => chunk.clone().map_text(|text| text[..n].to_owned()).into(),
                })
            }
            ChunkKind::ReasoningDelta { .. } if state.cut => Ok(StreamAction::Drop),
            ChunkKind::StepFinish {
                finish_reason: FinishReason::Retry,
                ..
            } => {
                // A rejected attempt's text does not count: the client was told to forget it.
                if let Some((counted, cut)) = state.at_step_start.take() {
                    state.counted = counted;
                    state.cut = cut;
                }
                Ok(StreamAction::Pass)
            }
            ChunkKind::StepFinish { finish_reason, .. } => {
                state.run_cut |= state.step_cut;
                match (finish_reason, state.step_cut) {
                    (FinishReason::Stop, true) => Ok(with_length(chunk).into()),
                    _ => Ok(StreamAction::Pass),
                }
            }
            ChunkKind::Finish {
                finish_reason: FinishReason::Stop,
                ..
            } if state.run_cut => Ok(with_length(chunk).into()),
            _ => Ok(StreamAction::Pass),
        }
    }

    /// At the end: the same limit on the response messages (answers replayed from a cache
    /// skip the stream).
    fn process_output_result(
        &self,
        mut messages: Vec<Message>,
        cx: &RequestContext,
        abort: Abort,
    ) -> Result<OutputOutcome, ProcessorError> {
        let t = self.tokenizer.resolve(None);
        // Tokens counted, and the bytes of the messages not counted yet: a token is at least
        // a byte, so while the tokens and those bytes fit, nothing needs counting (an answer
        // far below the limit is never tokenized here).
        let (mut used, mut bytes) = (0, 0);
        let mut uncounted: Vec<usize> = Vec::new();
        let mut changed = false;
        for i in 0..messages.len() {
            if messages[i].role != Role::Assistant {
                continue;
            }
            if self.count_mode == CountMode::PerStep {
                (used, bytes) = (0, 0);
                uncounted.clear();
            }
            let len: usize = texts(&messages[i]).map(str::len).sum();
            if used + bytes + len <= self.limit {
                bytes += len;
                uncounted.push(i);
                continue;
            }
            for j in uncounted.drain(..) {
                used += texts(&messages[j]).map(|s| t.count(s)).sum::<usize>();
            }
            bytes = 0;
            let n: usize = texts(&messages[i]).map(|s| t.count(s)).sum();
            if used + n <= self.limit {
                used += n;
                continue;
            }
            if self.strategy == LimitStrategy::Abort {
                return Err(self.answer_abort(abort, used + n));
            }
            used += self.cut_message(t, &mut messages[i], self.limit - used);
            changed = true;
        }
        if let Some(count) = cx.get::<TokenCount>() {
            let answer = (messages.iter())
                .filter(|m| m.role == Role::Assistant)
                .flat_map(texts)
                .map(|s| t.count(s))
                .sum();
            count.0.1.store(answer, Ordering::Relaxed);
        }
        Ok(match changed {
            true => OutputOutcome::Messages(messages),
            false => OutputOutcome::Unchanged,
        })
    }
}

/// The texts of `m`'s text parts.
fn texts(m: &Message) -> impl Iterator<Item = &str> {
    m.content.parts.iter().filter_map(|p| match p {
        Part::Text { text } => Some(&**text),
        _ => None,
    })
}

/// The same `step-finish` or `finish` chunk with finish reason `length`.
fn with_length(chunk: &Chunk) -> Chunk {
    let mut chunk = chunk.clone();
    if let ChunkKind::StepFinish { finish_reason, .. } | ChunkKind::Finish { finish_reason, .. } =
        &mut chunk.kind
    {
        *finish_reason = FinishReason::Length;
    }
    chunk
}

#[cfg(all(test, feature = "tiktoken"))]
mod tests {
    use super::*;
    use crate::tokenizer::tests::{TEXT, call, msg};

    #[test]
    fn text_counted_as_it_streams_counts_as_the_whole() {
        for t in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Estimate] {
            for size in [1, 2, 3, 7, 16] {
                let mut counted = Counted::default();
                let chars: Vec<char> = TEXT.chars().collect();
                for delta in chars.chunks(size) {
                    let delta: String = delta.iter().collect();
                    assert!(matches!(counted.add(t, &delta, usize::MAX), Added::Fits));
                }
                let streamed =
                    counted
                        .committed
                        .div_ceil(if t == Tokenizer::Estimate { 4 } else { 1 })
                        + t.count(&counted.pending);
                assert_eq!(streamed, t.count(TEXT), "{t:?}, deltas of {size}");
            }
        }
    }

    #[test]
    fn text_over_the_limit_keeps_what_fits() {
        let t = Tokenizer::O200k;
        let mut counted = Counted::default();
        assert!(matches!(counted.add(t, "one two", 3), Added::Fits));
        match counted.add(t, " three four", 3) {
            Added::Over { total, keep } => {
                assert_eq!(total, 4);
                assert_eq!(&" three four"[..keep], " three");
            }
            Added::Fits => panic!("over the limit"),
        }
    }

    #[test]
    fn trimming_drops_whole_groups_oldest_first_and_keeps_the_newest_user_message() {
        let limiter = TokenLimiter::new(1).unwrap();
        let ms = [
            msg(Role::User, "old question"),
            call("c1"),
            msg(Role::Tool, "result one"),
            msg(Role::Tool, "result two"),
            msg(Role::Assistant, "old answer"),
            msg(Role::User, "new question"),
            call("c2"),
            msg(Role::Tool, "result three"),
        ];
        let refs: Vec<&Message> = ms.iter().collect();
        assert_eq!(
            groups(&refs),
            [0..1, 1..4, 4..5, 5..6, 6..8],
            "a call goes with the results after it"
        );
        let trim = limiter.plan(Tokenizer::O200k, 0, &refs, |_| true);
        assert_eq!(trim.drop, [0, 1, 2, 3, 4, 6, 7]);
        assert_eq!(trim.after, message_tokens(Tokenizer::O200k, &ms[5]));
        let only_answers = limiter.plan(Tokenizer::O200k, 0, &refs, |m| m.role == Role::Assistant);
        assert_eq!(
            only_answers.drop,
            [4],
            "a group is dropped only when all of it may be"
        );
    }

    #[test]
    fn trimming_stops_as_soon_as_the_conversation_fits() {
        let t = Tokenizer::O200k;
        let ms = [
            msg(Role::User, "a b c"),
            msg(Role::Assistant, "d e f"),
            msg(Role::User, "g"),
        ];
        let refs: Vec<&Message> = ms.iter().collect();
        let all: usize = ms.iter().map(|m| message_tokens(t, m)).sum();
        let limiter = TokenLimiter::new(all - 1).unwrap();
        assert_eq!(limiter.plan(t, 0, &refs, |_| true).drop, [0]);
        let roomy = TokenLimiter::new(all).unwrap();
        assert!(roomy.plan(t, 0, &refs, |_| true).drop.is_empty());
        let aborting = TokenLimiter::builder(1)
            .strategy(LimitStrategy::Abort)
            .build()
            .unwrap();
        let trim = aborting.plan(t, 0, &refs, |_| true);
        assert!(
            trim.drop.is_empty() && trim.after == all,
            "abort drops nothing"
        );
    }

    #[test]
    fn a_zero_limit_is_refused() {
        assert!(matches!(
            TokenLimiter::new(0).unwrap_err(),
            ConfigError::Zero {
                option: "limit",
                ..
            }
        ));
        assert!(
            TokenLimiter::new(0)
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
    }
}
