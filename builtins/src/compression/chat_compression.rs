//! [`ChatCompression`]: when the prompt passes a share of the model's context window, the
//! oldest turns are summarised by a model into one message; and [`ConversationCompactor`],
//! its aggressive form, which first stubs old tool results and drops old reasoning.
//!
//! # What is summarised
//!
//! Before the first model call of a run (`process_input`), the prompt (system messages,
//! memory's history, the new input) is counted with the [`Tokenizer`]. When it is over
//! `threshold × context_window` tokens, the conversation is cut in two:
//!
//! - the newest part, about [`keep_recent`](ChatCompressionBuilder::keep_recent) of its
//!   tokens, stays verbatim. It starts at a user message, so a tool call is never separated
//!   from its result and the prompt never starts with the assistant; the newest user message
//!   always stays;
//! - everything before it (and the summary of an earlier run, when there is one) goes to the
//!   summarising model, whose answer replaces it: one system message under the tag
//!   [`COMPRESSION_TAG`].
//!
//! The summarising call's usage is added to `result.processor_usage` under the processor's
//! id. A failed call, a call past its [timeout](ChatCompressionBuilder::timeout), an empty
//! summary and one that stopped before it was done (at
//! [`max_summary_tokens`](ChatCompressionBuilder::max_summary_tokens), or filtered) leave the
//! conversation without a summary, with a warning (handed to `on_violation`). A prompt over
//! the budget with nothing it may summarise is left as it is, with a warning: a
//! [`TokenLimiter`](crate::TokenLimiter) after it bounds what is sent.
//!
//! # With memory
//!
//! In an agent with memory, only the messages memory loaded are summarised: memory has them
//! in its store, and saves the run's new messages as they came. A first run whose own input is
//! over the budget is sent as it is, with a warning; the next run summarises it.
//!
//! Given the agent's memory ([`memory`](ChatCompressionBuilder::memory)), the summary is also
//! kept in the thread's metadata (under [`METADATA_KEY`]), with the ids of the last message it
//! covers and of the one after it. Each later run puts the kept summary in place of the
//! messages it covers as memory loads them, so the conversation is summarised again only when
//! it has grown past the budget again, and then from the kept summary, not from the whole
//! history. When memory's window of recent messages starts after the messages that followed
//! the summary, those are read back from the store, so none falls between the two. The store
//! keeps every message whole: the summary is an addition, and deleting it from the thread's
//! metadata brings the whole history back. Put the processor after memory in `input` (where
//! memory runs unless placed), and after a
//! [`MemoryInputFilter`](crate::MemoryInputFilter); placed before memory, it leaves the kept
//! summary out, with a warning.
//!
//! Without memory, each run's prompt is compressed on its own: a client that sends the whole
//! conversation each time pays for a summary each time it is over the budget.
//!
//! A run's own steps (its tool calls and results) are never summarised: the answer being
//! built stays whole. A [`TokenLimiter`](crate::TokenLimiter) bounds each step.

use crate::config::ConfigError;
use crate::tokenizer::{TOKENS_PER_PROMPT, Tokenizer, message_tokens};
use futures::StreamExt;
use processors_macros::processor;
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::context::RequestContext;
use processors_runtime::memory::{Memory, MemoryStore, Thread};
use processors_runtime::message::{Message, MessageList, MessageSource, Part, Role};
use processors_runtime::model::{LanguageModel, ModelRequest, ModelSettings};
use processors_runtime::processor::Abort;
use serde_json::{Value, json};
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

/// The tag of the system message that carries the summary.
pub const COMPRESSION_TAG: &str = "chat-compression";

/// The key of the thread's metadata under which the summary is kept.
pub const METADATA_KEY: &str = "compression";

/// What the summarising model is asked, unless [`instructions`](ChatCompressionBuilder::instructions)
/// replace it.
pub const DEFAULT_INSTRUCTIONS: &str = "You compress the earlier part of a conversation between a user and an \
assistant into notes that replace it: the assistant will see your notes instead of those messages. \
Keep the user's goals, constraints and preferences; names, numbers, identifiers, file paths and \
facts that were given; decisions made and why; what tools were called and what they found; and \
what is still open or was promised. Leave out greetings, repetition and anything the rest of the \
conversation no longer needs. When a summary of an even earlier part is given, fold it in. Write \
in the conversation's language, as short notes, and answer with the notes only.";

/// The most text a summary may have.
const MAX_SUMMARY: usize = 1 << 20;

/// Compresses the oldest turns of a prompt over budget into a summary; see the
/// [module docs](self).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::chat_compression::{COMPRESSION_TAG, ChatCompression};
/// use processors::builtins::Tokenizer;
/// use processors::prelude::*;
///
/// let summariser = ScriptedModel::new([Turn::text("The user is Ada; she asked about Rust.").usage(90, 12)]);
/// let compression = ChatCompression::builder(summariser.clone(), 100)
///     .threshold(0.5)
///     .tokenizer(Tokenizer::Estimate)
///     .build()?;
/// let model = ScriptedModel::new([Turn::text("Yes, it is.")]);
/// let agent = Agent::builder().model(model.clone()).input(compression).build()?;
///
/// let long = "Rust has ownership, borrowing and lifetimes. ".repeat(4);
/// let conversation = vec![
///     Message::user("I am Ada."),
///     Message::assistant(long.clone()),
///     Message::user("Tell me more."),
///     Message::assistant(long),
///     Message::user("Is it fast?"),
/// ];
/// let result = agent.generate(conversation).await?;
/// let prompt = &model.requests()[0].prompt;
/// // The first two turns became one system message; the newest stayed.
/// assert_eq!(prompt.len(), 2);
/// assert!(prompt[0].text().ends_with("The user is Ada; she asked about Rust."));
/// assert_eq!(prompt[1].text(), "Is it fast?");
/// assert_eq!(result.processor_usage["chat-compression"].total_tokens, 102);
/// # let _ = COMPRESSION_TAG;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ChatCompression {
    core: Arc<Core>,
}

/// Stubs old tool results and drops old reasoning, and compresses as [`ChatCompression`] does
/// when that is not enough; see the [module docs](self).
///
/// Before the cut that [`ChatCompression`] would make (among the messages memory loaded, in
/// an agent with memory), every tool result longer than
/// [`stub_results_over`](ConversationCompactor::stub_results_over) bytes (of JSON) reaches the
/// model as a one-line stub naming the tool and the size left out, and every reasoning part is
/// left out (reasoning counts for the budget only where the provider is sent it; the tokenizer
/// counts none). Only the prompt changes: memory's store, and the tool result's `result` that
/// the run reports, keep them whole (the stub is the result's copy for the model). When the
/// prompt then fits, no summary is asked for; otherwise the compression summarises what the
/// stubs left, as it would have.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::chat_compression::{ChatCompression, ConversationCompactor};
/// use processors::builtins::Tokenizer;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let summariser = ScriptedModel::new([]);
/// let compression = ChatCompression::builder(summariser.clone(), 400)
///     .tokenizer(Tokenizer::Estimate)
///     .build()?;
/// let compactor = ConversationCompactor::new(compression).stub_results_over(100);
/// let model = ScriptedModel::new([Turn::text("It is sunny.")]);
/// let agent = Agent::builder().model(model.clone()).input(compactor).build()?;
///
/// let call = ToolCall { tool_call_id: "c1".into(), tool_name: "fetch".into(), args: json!({}) };
/// let page = ToolResult::new("c1", "fetch", json!("<html>…</html>".repeat(100)));
/// let conversation = vec![
///     Message::user("Fetch the forecast."),
///     Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
///     Message::new(Role::Tool, vec![Part::ToolResult(page)]),
///     Message::assistant("Fetched."),
///     Message::user("And the weather?"),
/// ];
/// agent.generate(conversation).await?;
/// let prompt = model.requests()[0].prompt.clone();
/// // The page became a stub, which was enough: no summary was asked for.
/// assert!(prompt[2].text().is_empty());
/// let Part::ToolResult(stub) = &prompt[2].content.parts[0] else { unreachable!() };
/// assert_eq!(stub.result, json!("[the result of `fetch` is left out here: 1602 bytes]"));
/// assert_eq!(summariser.calls(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ConversationCompactor {
    core: Arc<Core>,
    stub_over: usize,
}

/// Builds a [`ChatCompression`]; see [`ChatCompression::builder`].
#[must_use]
pub struct ChatCompressionBuilder {
    summariser: Arc<dyn LanguageModel>,
    context_window: usize,
    threshold: f64,
    keep_recent: f64,
    tokenizer: Tokenizer,
    store: Option<Arc<dyn MemoryStore>>,
    instructions: Option<String>,
    timeout: Duration,
    max_summary_tokens: u32,
}

/// What a [`ChatCompression`] was built with.
struct Core {
    summariser: Arc<dyn LanguageModel>,
    /// The prompt's budget: `threshold × context_window`, in tokens.
    budget: usize,
    keep_recent: f64,
    tokenizer: Tokenizer,
    store: Option<Arc<dyn MemoryStore>>,
    instructions: String,
    timeout: Duration,
    max_summary_tokens: u32,
}

impl fmt::Debug for ChatCompression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCompression")
            .field("core", &self.core)
            .finish()
    }
}

impl fmt::Debug for ConversationCompactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversationCompactor")
            .field("core", &self.core)
            .field("stub_over", &self.stub_over)
            .finish()
    }
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field(
                "summariser",
                &format!(
                    "{}/{}",
                    self.summariser.provider(),
                    self.summariser.model_id()
                ),
            )
            .field("budget", &self.budget)
            .field("keep_recent", &self.keep_recent)
            .field("tokenizer", &self.tokenizer)
            .field("memory", &self.store.is_some())
            .field("timeout", &self.timeout)
            .field("max_summary_tokens", &self.max_summary_tokens)
            .finish()
    }
}

impl ChatCompression {
    /// Compression for a model whose context window is `context_window` tokens, summarising
    /// with `summariser` (any [`LanguageModel`]; a small, fast one serves). Defaults: compress
    /// past 70 % of the window, keep the newest 30 % of the conversation verbatim, count with
    /// [`Tokenizer::ByModel`], no memory, a 60 s timeout, summaries of at most 1 024 tokens.
    pub fn builder(
        summariser: impl LanguageModel,
        context_window: usize,
    ) -> ChatCompressionBuilder {
        Self::builder_shared(Arc::new(summariser), context_window)
    }

    /// [`builder`](Self::builder) with a shared summarising model.
    pub fn builder_shared(
        summariser: Arc<dyn LanguageModel>,
        context_window: usize,
    ) -> ChatCompressionBuilder {
        ChatCompressionBuilder {
            summariser,
            context_window,
            threshold: 0.7,
            keep_recent: 0.3,
            tokenizer: Tokenizer::ByModel,
            store: None,
            instructions: None,
            timeout: Duration::from_secs(60),
            max_summary_tokens: 1024,
        }
    }
}

impl ChatCompressionBuilder {
    /// The share of the context window past which the prompt is compressed, above 0 and at
    /// most 1 (default 0.7).
    pub fn threshold(mut self, share: f64) -> Self {
        self.threshold = share;
        self
    }

    /// The share of the conversation's tokens kept verbatim, the newest, from 0 (only the
    /// newest user turn) to below 1 (default 0.3). The cut moves forward to the next user
    /// message.
    pub fn keep_recent(mut self, share: f64) -> Self {
        self.keep_recent = share;
        self
    }

    /// How the prompt is counted (default [`Tokenizer::ByModel`], which sees no model before
    /// the first call and counts with `o200k_base`).
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// Keeps the summary in the thread's metadata in `memory`'s store (the agent's memory),
    /// so that later runs start from it.
    pub fn memory(mut self, memory: &Memory) -> Self {
        self.store = Some(memory.store().clone());
        self
    }

    /// Keeps the summary in `store`, as [`memory`](Self::memory) does.
    pub fn store(mut self, store: Arc<dyn MemoryStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// What the summarising model is asked (default [`DEFAULT_INSTRUCTIONS`]).
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// How long the summarising call may take (default 60 s); past it the conversation is
    /// left as it was, with a warning.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The summary's length limit, in tokens (default 1 024).
    pub fn max_summary_tokens(mut self, tokens: u32) -> Self {
        self.max_summary_tokens = tokens;
        self
    }

    /// The compression, or what is wrong with its options.
    ///
    /// ```
    /// use processors::builtins::chat_compression::ChatCompression;
    /// use processors::builtins::ConfigError;
    /// use processors::prelude::*;
    ///
    /// let summariser = || ScriptedModel::new([]);
    /// assert!(ChatCompression::builder(summariser(), 128_000).build().is_ok());
    /// let zero = ChatCompression::builder(summariser(), 0).build().unwrap_err();
    /// assert!(matches!(zero, ConfigError::Zero { option: "context_window", .. }));
    /// let over = ChatCompression::builder(summariser(), 8_000).threshold(1.5).build();
    /// assert!(matches!(over, Err(ConfigError::OutOfRange { option: "threshold", .. })));
    /// let all = ChatCompression::builder(summariser(), 8_000).keep_recent(1.0).build();
    /// assert!(matches!(all, Err(ConfigError::OutOfRange { option: "keep_recent", .. })));
    /// ```
    pub fn build(self) -> Result<ChatCompression, ConfigError> {
        if self.context_window == 0 {
            return Err(ConfigError::Zero {
                option: "context_window",
                why: "no prompt fits in it; give the model's context window in tokens",
            });
        }
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(ConfigError::OutOfRange {
                option: "threshold",
                value: self.threshold.to_string(),
                expected: "give a share of the context window above 0 and at most 1 (0.7 compresses past 70 %)",
            });
        }
        if !(self.keep_recent >= 0.0 && self.keep_recent < 1.0) {
            return Err(ConfigError::OutOfRange {
                option: "keep_recent",
                value: self.keep_recent.to_string(),
                expected: "give a share of the conversation from 0 to below 1 (1 would keep everything and summarise nothing)",
            });
        }
        if self
            .instructions
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(ConfigError::Empty {
                what: "`instructions`",
                why: "give the summarising model its instructions, or leave the default",
            });
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::Zero {
                option: "timeout",
                why: "no summary could arrive; give the summarising call time to answer",
            });
        }
        if self.max_summary_tokens == 0 {
            return Err(ConfigError::Zero {
                option: "max_summary_tokens",
                why: "the summary would be empty; give it room",
            });
        }
        self.tokenizer.load();
        // At most the window: a share of a `usize` window is below it.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let budget = (self.context_window as f64 * self.threshold) as usize;
        Ok(ChatCompression {
            core: Arc::new(Core {
                summariser: self.summariser,
                budget: budget.max(1),
                keep_recent: self.keep_recent,
                tokenizer: self.tokenizer,
                store: self.store,
                instructions: self
                    .instructions
                    .unwrap_or_else(|| DEFAULT_INSTRUCTIONS.to_owned()),
                timeout: self.timeout,
                max_summary_tokens: self.max_summary_tokens,
            }),
        })
    }
}

impl ConversationCompactor {
    /// The aggressive form of `compression`: the same budget, cut, summary and memory, with
    /// tool results over 400 bytes stubbed and reasoning dropped first.
    pub fn new(compression: ChatCompression) -> Self {
        ConversationCompactor {
            core: compression.core,
            stub_over: 400,
        }
    }

    /// Tool results whose JSON is longer than `bytes` are stubbed (default 400; 0 stubs
    /// every result).
    #[must_use]
    pub fn stub_results_over(mut self, bytes: usize) -> Self {
        self.stub_over = bytes;
        self
    }
}

#[processor(crate = processors_runtime, id = "chat-compression")]
impl ChatCompression {
    async fn process_input(&self, list: &mut MessageList, cx: &RequestContext) {
        self.core.compress(list, cx, None, "chat-compression").await;
    }
}

#[processor(crate = processors_runtime, id = "conversation-compactor")]
impl ConversationCompactor {
    async fn process_input(&self, list: &mut MessageList, cx: &RequestContext) {
        let id = "conversation-compactor";
        self.core.compress(list, cx, Some(self.stub_over), id).await;
    }
}

/// A summary as the thread's metadata keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    /// The summary.
    summary: String,
    /// The last stored message it covers.
    through: String,
    /// When that message was made, for a history from which it was deleted.
    #[serde(default)]
    through_at: u64,
    /// The first message after those it covers, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next: Option<String>,
    /// How many messages it covers, its earlier summaries' included.
    messages: usize,
}

/// Why nothing was summarised.
enum Failure {
    /// The summarising call failed.
    Model(String),
    /// It took longer than the timeout.
    Timeout(Duration),
    /// It answered nothing.
    Empty,
    /// It stopped at its token limit.
    Cut(u32),
    /// It stopped for another reason than having finished.
    Stopped(FinishReason),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Model(e) => write!(f, "the summarising model failed: {e}"),
            Failure::Timeout(t) => write!(f, "the summarising model took longer than {t:?}"),
            Failure::Empty => f.write_str("the summarising model answered with no text"),
            Failure::Cut(n) => write!(
                f,
                "the summary stopped at `max_summary_tokens` ({n}) before it was done; raise it"
            ),
            Failure::Stopped(reason) => write!(
                f,
                "the summarising model stopped with `{}` before it was done",
                reason.as_str()
            ),
        }
    }
}

impl Core {
    /// Puts the kept summary in place, and compresses the prompt when it is over the budget.
    async fn compress(
        &self,
        list: &mut MessageList,
        cx: &RequestContext,
        stub_over: Option<usize>,
        id: &str,
    ) {
        let thread = match (&self.store, cx.thread_id(), cx.resource_id()) {
            (Some(store), Some(t), Some(r)) => Some((&**store, t, r)),
            _ => None,
        };
        let kept = match thread {
            Some((store, t, r)) => self.restore(store, t, r, list, cx, id).await,
            None => None,
        };
        let t = self.tokenizer.resolve(None);
        let total = prompt_tokens(t, list);
        if total <= self.budget {
            return;
        }
        let entries: Vec<(Message, MessageSource)> =
            list.sourced().map(|(m, s)| (m.clone(), s)).collect();
        // With memory, only what it loaded is summarised: it has those messages in its store,
        // and saves the run's new ones as they are.
        let remembered = entries
            .iter()
            .take_while(|(_, s)| *s == MessageSource::Memory)
            .count();
        let limit = match thread.is_some() || remembered > 0 {
            true => remembered,
            false => entries.len(),
        };
        let conversation: Vec<Message> = entries.iter().map(|(m, _)| m.clone()).collect();
        let Some(cut) = cut(t, &conversation, self.keep_recent, limit) else {
            let among = if limit < entries.len() {
                " among the messages memory loaded"
            } else {
                ""
            };
            warn(
                cx,
                id,
                format!(
                    "the prompt is {total} tokens, over the budget of {}, and has nothing to summarise{among}: the part summarised ends where a user turn begins, before the newest one",
                    self.budget
                ),
            );
            return;
        };
        let older = &entries[..cut];
        if let Some(over) = stub_over {
            compact(list, older, over);
            if prompt_tokens(t, list) <= self.budget {
                return;
            }
        }
        let previous = kept.as_ref().map(|k| k.summary.as_str());
        // As the list has them now: stubbed, for the compactor.
        let summarised: Vec<Message> = list.all().take(cut).cloned().collect();
        let (answer, usage) = self.summarise(previous, &summarised).await;
        cx.record_usage(id, usage);
        let summary = match answer {
            Ok(summary) => summary,
            Err(failure) => {
                warn(
                    cx,
                    id,
                    format!("{failure}; the {cut} oldest messages are sent without a summary"),
                );
                return;
            }
        };
        let (last, _) = &older[cut - 1];
        let new = Kept {
            summary,
            through: last.id.clone(),
            through_at: last.created_at,
            next: entries.get(cut).map(|(m, _)| m.id.clone()),
            messages: cut + kept.as_ref().map_or(0, |k| k.messages),
        };
        for source in [
            MessageSource::Memory,
            MessageSource::Input,
            MessageSource::Response,
        ] {
            let ids: Vec<&str> = older
                .iter()
                .filter(|(_, s)| *s == source)
                .map(|(m, _)| m.id.as_str())
                .collect();
            if !ids.is_empty() {
                list.remove_from(source, &ids);
            }
        }
        list.clear_tag(COMPRESSION_TAG);
        list.add_system(summary_message(&new), Some(COMPRESSION_TAG));
        if let Some((store, t, r)) = thread
            && let Err(reason) = save(store, t, r, &new).await
        {
            warn(
                cx,
                id,
                format!("the summary was used but could not be kept for later runs: {reason}"),
            );
        }
    }

    /// Reads the summary kept for the thread and puts it in place of the messages it covers,
    /// as memory loaded them: the summary put in place, or `None`.
    async fn restore(
        &self,
        store: &dyn MemoryStore,
        thread_id: &str,
        resource_id: &str,
        list: &mut MessageList,
        cx: &RequestContext,
        id: &str,
    ) -> Option<Kept> {
        let kept = match load(store, thread_id, resource_id).await {
            Ok(kept) => kept?,
            Err(reason) => {
                warn(
                    cx,
                    id,
                    format!("the kept summary could not be read: {reason}"),
                );
                return None;
            }
        };
        if list.remembered().next().is_none() {
            warn(
                cx,
                id,
                "a summary is kept for this thread, but memory loaded none of its messages before this processor; put it after memory in `input`".to_owned(),
            );
            return None;
        }
        if let Err(reason) = fill_gap(store, thread_id, list, &kept).await {
            warn(
                cx,
                id,
                format!(
                    "the messages between the kept summary and memory's window could not be read: {reason}"
                ),
            );
        }
        apply(list, &kept);
        Some(kept)
    }

    /// Asks for a summary of `older`, after the `previous` summary: the summary, or why there
    /// is none, and the call's usage.
    async fn summarise(
        &self,
        previous: Option<&str>,
        older: &[Message],
    ) -> (Result<String, Failure>, Usage) {
        let mut content = String::new();
        if let Some(previous) = previous {
            content.push_str("<earlier-summary>\n");
            content.push_str(&previous.replace("</earlier-summary>", "</ earlier-summary>"));
            content.push_str("\n</earlier-summary>\n\n");
        }
        content.push_str("<conversation>\n");
        content.push_str(&transcript(older).replace("</conversation>", "</ conversation>"));
        content.push_str("</conversation>\n\nWrite the notes that replace this conversation.");
        let request = ModelRequest {
            prompt: vec![Message::system(&*self.instructions), Message::user(content)],
            settings: ModelSettings {
                temperature: Some(0.0),
                max_output_tokens: Some(self.max_summary_tokens),
                ..ModelSettings::default()
            },
            ..ModelRequest::default()
        };
        let mut usage = Usage::default();
        let call = async {
            let mut stream = self
                .summariser
                .stream(request)
                .await
                .map_err(|e| Failure::Model(e.to_string()))?;
            let mut answer = String::new();
            let mut finish = None;
            while let Some(item) = stream.next().await {
                match item.map_err(|e| Failure::Model(e.to_string()))? {
                    ChunkKind::TextDelta { text, .. } => {
                        if answer.len() + text.len() > MAX_SUMMARY {
                            return Err(Failure::Model(format!(
                                "its answer is longer than {MAX_SUMMARY} bytes"
                            )));
                        }
                        answer.push_str(&text);
                    }
                    ChunkKind::Finish {
                        usage: u,
                        finish_reason,
                    } => {
                        usage = u;
                        finish = Some(finish_reason);
                    }
                    _ => {}
                }
            }
            match finish {
                Some(FinishReason::Stop) => {}
                Some(FinishReason::Length) => return Err(Failure::Cut(self.max_summary_tokens)),
                Some(other) => return Err(Failure::Stopped(other)),
                None => {
                    return Err(Failure::Model(
                        "its answer ended without finishing".to_owned(),
                    ));
                }
            }
            match answer.trim() {
                "" => Err(Failure::Empty),
                text => Ok(text.to_owned()),
            }
        };
        let answer = match crate::timer::within(self.timeout, call).await {
            Some(answer) => answer,
            None => Err(Failure::Timeout(self.timeout)),
        };
        (answer, usage)
    }
}

/// Reports a warning of processor `id`.
fn warn(cx: &RequestContext, id: &str, reason: String) {
    cx.report_warning(Abort::new().reason(reason).into_tripwire(id));
}

/// The tokens of the prompt `list` gives.
fn prompt_tokens(t: Tokenizer, list: &MessageList) -> usize {
    let system: usize = list
        .all_system_messages()
        .map(|m| message_tokens(t, m))
        .sum();
    let conversation: usize = list.all().map(|m| message_tokens(t, m)).sum();
    TOKENS_PER_PROMPT + system + conversation
}

/// Where the kept part of `conversation` starts: a user message, after the first and at most
/// at `limit` (the messages before it may be summarised) and at the newest user message; the
/// first such at or after the point that keeps `keep_recent` of the tokens, else the last
/// such. `None` when there is none.
fn cut(t: Tokenizer, conversation: &[Message], keep_recent: f64, limit: usize) -> Option<usize> {
    let tokens: Vec<usize> = conversation.iter().map(|m| message_tokens(t, m)).collect();
    let total: usize = tokens.iter().sum();
    // A share of a `usize`, at most the total.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let keep = (total as f64 * keep_recent) as usize;
    let mut kept = 0;
    let mut from = conversation.len();
    while from > 0 && kept < keep {
        from -= 1;
        kept += tokens[from];
    }
    let newest_user = conversation.iter().rposition(|m| m.role == Role::User)?;
    let last = newest_user.min(limit);
    let mut cuts = (1..=last).filter(|&i| conversation[i].role == Role::User);
    let first_after = cuts.clone().find(|&i| i >= from);
    first_after.or_else(|| cuts.next_back())
}

/// Stubs the tool results longer than `over` bytes of JSON and drops the reasoning of
/// `older`'s messages in `list`.
fn compact(list: &mut MessageList, older: &[(Message, MessageSource)], over: usize) {
    for (message, _) in older {
        let mut changed = message.clone();
        changed
            .content
            .parts
            .retain(|p| !matches!(p, Part::Reasoning { .. }));
        for part in &mut changed.content.parts {
            if let Part::ToolResult(r) = part {
                let size = r.for_model().to_string().len();
                if size > over {
                    r.model_output = Some(Value::String(format!(
                        "[the result of `{}` is left out here: {size} bytes]",
                        r.tool_name
                    )));
                }
            }
        }
        if changed != *message {
            list.replace(changed);
        }
    }
}

/// The conversation as the summarising model reads it: one line per part, tool results cut
/// to 2 000 characters, files named by their type.
fn transcript(messages: &[Message]) -> String {
    const MAX_RESULT: usize = 2000;
    let mut out = String::new();
    for m in messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        };
        for part in &m.content.parts {
            let _ = match part {
                Part::Text { text } => writeln!(out, "{role}: {text}"),
                Part::ToolCall(c) => {
                    writeln!(out, "{role} calls `{}` with {}", c.tool_name, c.args)
                }
                Part::ToolResult(r) => {
                    let result = match r.for_model() {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let cut = crate::tokenizer::floor_boundary(&result, MAX_RESULT);
                    let more = if cut < result.len() { " …" } else { "" };
                    let verb = if r.is_error { "failed" } else { "returned" };
                    writeln!(out, "`{}` {verb}: {}{more}", r.tool_name, &result[..cut])
                }
                Part::File { mime_type, .. } => writeln!(out, "{role}: [a {mime_type} file]"),
                Part::Reasoning { .. } | Part::Data { .. } => Ok(()),
            };
        }
    }
    out
}

/// The system message that carries a summary.
fn summary_message(kept: &Kept) -> Message {
    let mut message = Message::system(format!(
        "Summary of the earlier conversation ({} messages, replaced by this summary):\n\n{}",
        kept.messages, kept.summary
    ));
    message.metadata = Some(json!({ METADATA_KEY: { "messages": kept.messages } }));
    message
}

/// How many of the remembered messages the kept summary covers: up to its last message, or
/// up to the message that followed it, or (both deleted) those made before its last.
fn covered(remembered: &[&Message], kept: &Kept) -> usize {
    if let Some(i) = remembered.iter().position(|m| m.id == kept.through) {
        return i + 1;
    }
    if let Some(next) = &kept.next
        && let Some(i) = remembered.iter().position(|m| &m.id == next)
    {
        return i;
    }
    remembered
        .iter()
        .take_while(|m| m.created_at < kept.through_at)
        .count()
}

/// Removes the remembered messages the kept summary covers, and adds the summary.
fn apply(list: &mut MessageList, kept: &Kept) {
    let remembered: Vec<&Message> = list.remembered().collect();
    let covered = covered(&remembered, kept);
    // The kept part starts at a user message: a covered call's result goes with it.
    let covered = covered
        + remembered[covered..]
            .iter()
            .take_while(|m| m.role == Role::Tool)
            .count();
    let ids: Vec<String> = remembered[..covered].iter().map(|m| m.id.clone()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    list.remove_from(MessageSource::Memory, &ids);
    list.clear_tag(COMPRESSION_TAG);
    list.add_system(summary_message(kept), Some(COMPRESSION_TAG));
}

/// When memory's window starts after the messages that followed the summary (neither the
/// summary's last message nor the next is in it), reads those from the store and puts them
/// before the window, so that nothing falls between the summary and the window.
async fn fill_gap(
    store: &dyn MemoryStore,
    thread_id: &str,
    list: &mut MessageList,
    kept: &Kept,
) -> Result<(), String> {
    let remembered: Vec<Message> = list.remembered().cloned().collect();
    let found = |id: &str| remembered.iter().any(|m| m.id == id);
    let Some(first) = remembered.first() else {
        return Ok(());
    };
    if found(&kept.through) || kept.next.as_deref().is_some_and(found) {
        return Ok(());
    }
    let all = store
        .list_messages(thread_id, None)
        .await
        .map_err(|e| e.to_string())?;
    let Some(window) = all.iter().position(|m| m.id == first.id) else {
        return Ok(());
    };
    let after = match all.iter().position(|m| m.id == kept.through) {
        Some(i) => i + 1,
        None => all[..window]
            .iter()
            .take_while(|m| m.created_at < kept.through_at)
            .count(),
    };
    if after >= window {
        return Ok(());
    }
    let ids: Vec<&str> = remembered.iter().map(|m| m.id.as_str()).collect();
    list.remove_from(MessageSource::Memory, &ids);
    list.add_remembered(all[after..window].iter().cloned().chain(remembered));
    Ok(())
}

/// The summary kept for the thread, if any.
async fn load(
    store: &dyn MemoryStore,
    thread_id: &str,
    resource_id: &str,
) -> Result<Option<Kept>, String> {
    let thread = store
        .get_thread(thread_id)
        .await
        .map_err(|e| e.to_string())?;
    let Some(thread) = thread.filter(|t| t.resource_id == resource_id) else {
        return Ok(None);
    };
    match thread.metadata.as_ref().and_then(|m| m.get(METADATA_KEY)) {
        None => Ok(None),
        Some(value) => serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|e| format!("the thread's `{METADATA_KEY}` metadata is not a summary ({e})")),
    }
}

/// Keeps `kept` in the thread's metadata, creating the thread for its resource when new.
async fn save(
    store: &dyn MemoryStore,
    thread_id: &str,
    resource_id: &str,
    kept: &Kept,
) -> Result<(), String> {
    let now = processors_runtime::message::now_millis();
    let mut thread = match store
        .get_thread(thread_id)
        .await
        .map_err(|e| e.to_string())?
    {
        Some(t) if t.resource_id != resource_id => {
            return Err(format!("thread `{thread_id}` belongs to another resource"));
        }
        Some(t) => t,
        None => Thread {
            id: thread_id.to_owned(),
            resource_id: resource_id.to_owned(),
            title: None,
            created_at: now,
            updated_at: now,
            metadata: None,
        },
    };
    let value = serde_json::to_value(kept).map_err(|e| e.to_string())?;
    match &mut thread.metadata {
        Some(Value::Object(map)) => {
            map.insert(METADATA_KEY.to_owned(), value);
        }
        Some(_) => {
            return Err(
                "the thread's metadata is not a JSON object, and is left as it is".to_owned(),
            );
        }
        None => thread.metadata = Some(json!({ METADATA_KEY: value })),
    }
    store.save_thread(thread).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use processors_runtime::message::{ToolCall, ToolResult};

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn assistant(text: &str) -> Message {
        Message::assistant(text)
    }

    fn kept(through: &Message, next: Option<&Message>) -> Kept {
        Kept {
            summary: "s".into(),
            through: through.id.clone(),
            through_at: through.created_at,
            next: next.map(|m| m.id.clone()),
            messages: 2,
        }
    }

    #[test]
    fn the_cut_falls_on_a_user_message_and_keeps_the_newest_user_turn() {
        let t = Tokenizer::Estimate;
        let c = [
            user("a"),
            assistant(&"x".repeat(400)),
            user("b"),
            assistant(&"y".repeat(400)),
            user("c"),
        ];
        let all = c.len();
        // Keeping nothing keeps the newest user turn.
        assert_eq!(cut(t, &c, 0.0, all), Some(4));
        // A third of the tokens ends inside the second answer: the cut moves to the next
        // user message.
        assert_eq!(cut(t, &c, 0.3, all), Some(4));
        // Most of them reach back to the first answer: the second turn starts the kept part.
        assert_eq!(cut(t, &c, 0.6, all), Some(2));
        // Only what may be summarised (memory's two messages) goes.
        assert_eq!(cut(t, &c, 0.0, 2), Some(2));
        assert_eq!(cut(t, &c, 0.0, 1), None);
        // Only one user message: nothing older than it.
        assert_eq!(cut(t, &[user("a"), assistant("b")], 0.0, 2), None);
        assert_eq!(cut(t, &[assistant("a"), user("b")], 0.0, 2), Some(1));
    }

    #[test]
    fn a_first_message_heavier_than_the_kept_share_is_still_summarised() {
        let t = Tokenizer::Estimate;
        let c = [user(&"doc ".repeat(1000)), assistant("ok"), user("q")];
        assert_eq!(cut(t, &c, 0.3, c.len()), Some(2));
        assert_eq!(cut(t, &c, 0.99, c.len()), Some(2));
    }

    #[test]
    fn a_kept_summary_replaces_what_it_covers_with_the_results_of_its_calls() {
        let mut list = MessageList::new();
        let call = ToolCall {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            args: serde_json::json!({}),
        };
        let old = [
            user("one"),
            Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
            Message::new(
                Role::Tool,
                vec![Part::ToolResult(ToolResult::new("c", "t", json!(1)))],
            ),
            user("three"),
            assistant("four"),
        ];
        list.add_remembered(old.clone());
        list.add(user("five"), MessageSource::Input);
        // The summary's last message is the call: its result goes with it.
        apply(&mut list, &kept(&old[1], Some(&old[2])));
        let texts: Vec<String> = list.all().map(Message::text).collect();
        assert_eq!(texts, ["three", "four", "five"]);
        assert_eq!(list.tagged_system_messages(COMPRESSION_TAG).count(), 1);
    }

    #[test]
    fn a_summary_whose_last_message_was_deleted_covers_up_to_the_next() {
        let mut list = MessageList::new();
        let (a, b, c) = (user("old"), assistant("older"), user("new"));
        // All three made in one millisecond: the next message's id decides.
        list.add_remembered([a.clone(), c.clone()]);
        apply(&mut list, &kept(&b, Some(&c)));
        let texts: Vec<String> = list.all().map(Message::text).collect();
        assert_eq!(texts, ["new"]);
        // Both gone: what was made before the last.
        let mut list = MessageList::new();
        let (mut a, mut c) = (user("old"), user("new"));
        a.created_at = 10;
        c.created_at = 30;
        let mut k = kept(&b, None);
        k.through_at = 20;
        list.add_remembered([a, c]);
        apply(&mut list, &k);
        let texts: Vec<String> = list.all().map(Message::text).collect();
        assert_eq!(texts, ["new"]);
    }

    #[test]
    fn the_messages_between_the_summary_and_memorys_window_are_read_back() {
        use processors_runtime::memory::InMemoryStore;
        let store = InMemoryStore::new();
        let thread = |mut m: Message| {
            m.thread_id = Some("t".into());
            m.resource_id = Some("r".into());
            m
        };
        let all: Vec<Message> = ["a", "b", "c", "d", "e", "f"]
            .into_iter()
            .map(|t| thread(user(t)))
            .collect();
        futures::executor::block_on(store.save_messages(all.clone())).unwrap();
        // The summary covers a and b; memory's window is e and f.
        let mut list = MessageList::new();
        list.add_remembered(all[4..].to_vec());
        let k = kept(&all[1], Some(&all[2]));
        futures::executor::block_on(fill_gap(&store, "t", &mut list, &k)).unwrap();
        apply(&mut list, &k);
        let texts: Vec<String> = list.all().map(Message::text).collect();
        assert_eq!(texts, ["c", "d", "e", "f"]);
    }
}
