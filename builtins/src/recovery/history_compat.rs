//! [`ProviderHistoryCompat`]: rewrites history that a provider refuses, before the call or
//! after its refusal.

use super::{StepAttempts, error_text, mentions_any, replace_conversation};
use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, MessageList, Part, Role};
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest};
use processors_runtime::processor::extract::StepNumber;
use processors_runtime::processor::{ApiErrorAction, LlmRequestAction};
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

/// The providers that refuse reasoning without its signature; the messages here carry none.
const SIGNATURE_PROVIDERS: &[&str] = &["anthropic"];

/// The longest tool-call id every provider accepts (OpenAI's limit).
pub const MAX_TOOL_CALL_ID_LEN: usize = 40;

/// One of the rules [`ProviderHistoryCompat`] comes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum BuiltinRule {
    /// Rewrites tool-call ids that are empty, longer than [`MAX_TOOL_CALL_ID_LEN`] or have
    /// characters outside `[a-zA-Z0-9_-]` (Anthropic's pattern `^[a-zA-Z0-9_-]+$`), the same
    /// way in the call and in its results: a stable, valid id made from the old one.
    ToolCallIds,
    /// Drops tool results whose call is not earlier in the conversation.
    OrphanToolResults,
    /// Drops tool calls that have no result later in the conversation.
    UnansweredToolCalls,
    /// Drops reasoning parts: the messages carry no signature, and providers that check
    /// signatures refuse reasoning without one. Before the call, only for those providers
    /// (Anthropic).
    UnsignedReasoning,
    /// Drops assistant messages with nothing but empty or blank text, and blank text parts of
    /// the others.
    EmptyAssistantMessages,
}

impl BuiltinRule {
    /// Every built-in rule, in the order they run.
    pub const ALL: [BuiltinRule; 5] = [
        BuiltinRule::ToolCallIds,
        BuiltinRule::OrphanToolResults,
        BuiltinRule::UnansweredToolCalls,
        BuiltinRule::UnsignedReasoning,
        BuiltinRule::EmptyAssistantMessages,
    ];

    /// Its name, in traces: `tool-call-ids`, `orphan-tool-results`, …
    pub const fn name(self) -> &'static str {
        match self {
            BuiltinRule::ToolCallIds => "tool-call-ids",
            BuiltinRule::OrphanToolResults => "orphan-tool-results",
            BuiltinRule::UnansweredToolCalls => "unanswered-tool-calls",
            BuiltinRule::UnsignedReasoning => "unsigned-reasoning",
            BuiltinRule::EmptyAssistantMessages => "empty-assistant-messages",
        }
    }

    /// Applies the rule to a conversation; returns whether it changed something.
    ///
    /// ```
    /// use processors::builtins::recovery::BuiltinRule;
    /// use processors::message::{Message, Role};
    /// let mut messages = vec![Message::user("hi"), Message::new(Role::Assistant, vec![])];
    /// assert!(BuiltinRule::EmptyAssistantMessages.apply(&mut messages));
    /// assert_eq!(messages.len(), 1);
    /// assert!(!BuiltinRule::EmptyAssistantMessages.apply(&mut messages));
    /// ```
    pub fn apply(self, messages: &mut Vec<Message>) -> bool {
        match self {
            BuiltinRule::ToolCallIds => rewrite_tool_call_ids(messages),
            BuiltinRule::OrphanToolResults => drop_orphan_results(messages),
            BuiltinRule::UnansweredToolCalls => drop_unanswered_calls(messages),
            BuiltinRule::UnsignedReasoning => {
                drop_parts(messages, |_, p| matches!(p, Part::Reasoning { .. }))
            }
            BuiltinRule::EmptyAssistantMessages => drop_empty_assistant_messages(messages),
        }
    }

    /// Whether a provider's error names the problem this rule fixes, as OpenAI's and
    /// Anthropic's messages word it.
    ///
    /// ```
    /// use processors::builtins::recovery::BuiltinRule;
    /// use processors::model::ApiError;
    /// let e = ApiError::new(
    ///     400,
    ///     "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    /// );
    /// assert!(BuiltinRule::ToolCallIds.fixes(&e));
    /// assert!(!BuiltinRule::OrphanToolResults.fixes(&e));
    /// ```
    pub fn fixes(self, error: &ApiError) -> bool {
        let text = error_text(error);
        let t = text.as_str();
        match self {
            BuiltinRule::ToolCallIds => {
                mentions_any(t, &["tool_use", "tool_call", "tool_result"])
                    && mentions_any(
                        t,
                        &[
                            "should match pattern",
                            "string too long",
                            "string_too_long",
                            "invalid id",
                            "invalid tool call id",
                            "invalid tool_use id",
                        ],
                    )
            }
            BuiltinRule::OrphanToolResults => mentions_any(
                t,
                &[
                    "unexpected tool_use_id found in tool_result",
                    "must have a corresponding tool_use",
                    "role tool must be a response to a preceeding message",
                    "role tool must be a response to a preceding message",
                    "tool result does not follow a tool call",
                    "no tool call found for",
                ],
            ),
            BuiltinRule::UnansweredToolCalls => mentions_any(
                t,
                &[
                    "ids were found without tool_result blocks",
                    "must have a corresponding tool_result",
                    "must be followed by tool messages responding to each",
                    "did not have response messages",
                    "tool call without a result",
                ],
            ),
            BuiltinRule::UnsignedReasoning => {
                t.contains("signature") && mentions_any(t, &["thinking", "reasoning"])
            }
            BuiltinRule::EmptyAssistantMessages => mentions_any(
                t,
                &[
                    "must have non-empty content",
                    "content blocks must be non-empty",
                    "must contain non-whitespace text",
                    "content must not be empty",
                    "empty content",
                ],
            ),
        }
    }

    /// Whether the rule rewrites the prompt before a call to this provider.
    fn before_call_to(self, provider: &str) -> bool {
        match self {
            BuiltinRule::UnsignedReasoning => SIGNATURE_PROVIDERS.contains(&provider),
            _ => true,
        }
    }
}

/// A compatibility rule of your own: rewrites the conversation (the non-system messages), and
/// may recognise the provider error it fixes.
///
/// A closure over `&mut Vec<Message>` is a rule too, through
/// [`ProviderHistoryCompatBuilder::custom_rule`]; implement the trait to react to an error.
///
/// ```
/// use processors::builtins::recovery::{CompatRule, ProviderHistoryCompat};
/// use processors::message::{Message, Part};
/// use processors::model::ApiError;
///
/// /// Files are refused by a text-only provider: send their names instead.
/// struct NoFiles;
///
/// impl CompatRule for NoFiles {
///     fn name(&self) -> &str {
///         "no-files"
///     }
///     fn apply(&self, messages: &mut Vec<Message>) -> bool {
///         let mut changed = false;
///         for part in messages.iter_mut().flat_map(|m| &mut m.content.parts) {
///             if let Part::File { mime_type, .. } = part {
///                 *part = Part::Text { text: format!("[a {mime_type} file]").into() };
///                 changed = true;
///             }
///         }
///         changed
///     }
///     fn before_call_to(&self, _provider: &str) -> bool {
///         false // only after a refusal
///     }
///     fn fixes(&self, error: &ApiError) -> bool {
///         error.message.contains("image input is not supported")
///     }
/// }
///
/// let compat = ProviderHistoryCompat::builder().rule(NoFiles).build().unwrap();
/// assert!(format!("{compat:?}").contains("no-files"));
/// ```
pub trait CompatRule: Send + Sync + 'static {
    /// Its name, unique among the processor's rules.
    fn name(&self) -> &str;

    /// Rewrites the conversation; returns whether it changed something.
    fn apply(&self, messages: &mut Vec<Message>) -> bool;

    /// Whether the rule rewrites the prompt of a call to this provider (the model's
    /// [`provider`](LanguageModel::provider): `openai`, `anthropic`, …) before it is sent.
    /// Every provider by default.
    fn before_call_to(&self, provider: &str) -> bool {
        let _ = provider;
        true
    }

    /// Whether a provider's error names the problem this rule fixes: the rule then repairs
    /// the run's message list and the call is made again. Never by default.
    fn fixes(&self, error: &ApiError) -> bool {
        let _ = error;
        false
    }
}

/// A closure rule: before every call, never after an error.
struct FnRule<F> {
    name: String,
    f: F,
}

impl<F> CompatRule for FnRule<F>
where
    F: Fn(&mut Vec<Message>) -> bool + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn apply(&self, messages: &mut Vec<Message>) -> bool {
        (self.f)(messages)
    }
}

/// Rewrites conversation history that a provider refuses: orphan tool results, tool calls
/// without results, empty assistant messages, reasoning without signatures, and tool-call ids
/// the provider does not accept ([`BuiltinRule`]), plus rules of your own ([`CompatRule`]).
///
/// History written with one provider often breaks another: ids with dots or colons, reasoning
/// that Anthropic wants signed, a tool loop cut short, a window that begins with a tool
/// result. The rules run two ways, each of which can be turned off:
///
/// - **before each call** (`process_llm_request`, in `input`): the prompt is rewritten for
///   this call only. The message list, memory and the response are untouched, so what is
///   saved is what happened. A rule runs there for the providers it names
///   ([`CompatRule::before_call_to`]); [`BuiltinRule::UnsignedReasoning`] only for Anthropic.
/// - **after a refusal** (`process_api_error`, in `input` or `error`): on a 400 or 422 whose
///   message names a problem a rule fixes ([`BuiltinRule::fixes`], [`CompatRule::fixes`]),
///   the rules that match repair the run's message list and the call is made again, once per
///   step. Repaired messages of this run are saved repaired; messages loaded from memory are
///   repaired for this run only. An error no rule recognises, or one the repair changes
///   nothing for, is left to the processors after it.
///
/// In `input`, one processor does both (the runner asks input processors about errors too).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::ProviderHistoryCompat;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let model = ScriptedModel::new([Turn::text("Sunny again.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .input(ProviderHistoryCompat::new())
///     .build()?;
/// // A result whose call fell out of the history, then the question.
/// let orphan = Message::new(Role::Tool, vec![Part::ToolResult(ToolResult {
///     tool_call_id: "call_1".into(),
///     tool_name: "weather".into(),
///     result: json!("sunny"),
///     is_error: false,
///     model_output: None,
/// })]);
/// let result = agent.generate(vec![orphan, Message::user("And tomorrow?")]).await?;
/// assert_eq!(result.text, "Sunny again.");
/// let sent = &model.requests()[0].prompt;
/// assert!(sent.iter().all(|m| m.role != Role::Tool), "the orphan was not sent");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ProviderHistoryCompat {
    builtin: Vec<BuiltinRule>,
    custom: Vec<Arc<dyn CompatRule>>,
    before_call: bool,
    after_error: bool,
}

/// Builds a [`ProviderHistoryCompat`]; see [`ProviderHistoryCompat::builder`].
#[must_use]
pub struct ProviderHistoryCompatBuilder {
    builtin: Vec<BuiltinRule>,
    custom: Vec<Arc<dyn CompatRule>>,
    before_call: bool,
    after_error: bool,
}

impl fmt::Debug for ProviderHistoryCompat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderHistoryCompat")
            .field("rules", &self.rule_names())
            .field("before_call", &self.before_call)
            .field("after_error", &self.after_error)
            .finish()
    }
}

impl fmt::Debug for ProviderHistoryCompatBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderHistoryCompatBuilder")
            .field("builtin", &self.builtin)
            .field(
                "custom",
                &self.custom.iter().map(|r| r.name()).collect::<Vec<_>>(),
            )
            .field("before_call", &self.before_call)
            .field("after_error", &self.after_error)
            .finish()
    }
}

impl ProviderHistoryCompatBuilder {
    /// Turns a built-in rule off (all are on by default).
    pub fn disable(mut self, rule: BuiltinRule) -> Self {
        self.builtin.retain(|r| *r != rule);
        self
    }

    /// Turns a built-in rule back on.
    pub fn enable(mut self, rule: BuiltinRule) -> Self {
        if !self.builtin.contains(&rule) {
            self.builtin.push(rule);
            self.builtin
                .sort_by_key(|r| BuiltinRule::ALL.iter().position(|a| a == r));
        }
        self
    }

    /// Keeps only these built-in rules.
    pub fn only(mut self, rules: impl IntoIterator<Item = BuiltinRule>) -> Self {
        let keep: Vec<BuiltinRule> = rules.into_iter().collect();
        self.builtin = BuiltinRule::ALL
            .into_iter()
            .filter(|r| keep.contains(r))
            .collect();
        self
    }

    /// Adds a rule of your own; it runs after the built-in rules, in the order added.
    pub fn rule(mut self, rule: impl CompatRule) -> Self {
        self.custom.push(Arc::new(rule));
        self
    }

    /// Adds a closure as a rule: it rewrites the conversation before every call and returns
    /// whether it changed something.
    pub fn custom_rule(
        self,
        name: impl Into<String>,
        f: impl Fn(&mut Vec<Message>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.rule(FnRule {
            name: name.into(),
            f,
        })
    }

    /// Whether the rules rewrite each call's prompt before it is sent (on by default).
    pub fn before_call(mut self, on: bool) -> Self {
        self.before_call = on;
        self
    }

    /// Whether the rules repair the list after a refusal that names their problem (on by
    /// default).
    pub fn after_error(mut self, on: bool) -> Self {
        self.after_error = on;
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<ProviderHistoryCompat, ConfigError> {
        if self.builtin.is_empty() && self.custom.is_empty() {
            return Err(ConfigError::NothingToDo(
                "every built-in rule is disabled and there is no rule of your own",
            ));
        }
        if !self.before_call && !self.after_error {
            return Err(ConfigError::NothingToDo(
                "both the prompt rewrite (`before_call`) and the repair after a refusal (`after_error`) are off",
            ));
        }
        let mut names: HashSet<&str> = self.builtin.iter().map(|r| r.name()).collect();
        for rule in &self.custom {
            let name = rule.name();
            if name.trim().is_empty() {
                return Err(ConfigError::Empty {
                    what: "a custom rule's name",
                    why: "name it for traces",
                });
            }
            if !names.insert(name) {
                return Err(ConfigError::Duplicate {
                    what: "rules",
                    name: name.to_owned(),
                });
            }
        }
        Ok(ProviderHistoryCompat {
            builtin: self.builtin,
            custom: self.custom,
            before_call: self.before_call,
            after_error: self.after_error,
        })
    }
}

/// The per-request state of a [`ProviderHistoryCompat`]: whether it repaired the list in the
/// current step.
#[derive(Debug, Default)]
pub struct ProviderHistoryCompatState {
    attempts: StepAttempts,
}

impl Default for ProviderHistoryCompat {
    fn default() -> Self {
        Self::new()
    }
}

/// A rule of either kind.
enum AnyRule<'a> {
    Builtin(BuiltinRule),
    Custom(&'a dyn CompatRule),
}

impl AnyRule<'_> {
    fn name(&self) -> &str {
        match self {
            AnyRule::Builtin(r) => r.name(),
            AnyRule::Custom(r) => r.name(),
        }
    }

    fn apply(&self, messages: &mut Vec<Message>) -> bool {
        match self {
            AnyRule::Builtin(r) => r.apply(messages),
            AnyRule::Custom(r) => r.apply(messages),
        }
    }

    fn before_call_to(&self, provider: &str) -> bool {
        match self {
            AnyRule::Builtin(r) => r.before_call_to(provider),
            AnyRule::Custom(r) => r.before_call_to(provider),
        }
    }

    fn fixes(&self, error: &ApiError) -> bool {
        match self {
            AnyRule::Builtin(r) => r.fixes(error),
            AnyRule::Custom(r) => r.fixes(error),
        }
    }
}

impl ProviderHistoryCompat {
    /// Every built-in rule, before each call and after a refusal.
    pub fn new() -> Self {
        ProviderHistoryCompat {
            builtin: BuiltinRule::ALL.to_vec(),
            custom: Vec::new(),
            before_call: true,
            after_error: true,
        }
    }

    /// Starts configuring the processor: every built-in rule, both ways.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::recovery::{BuiltinRule, ProviderHistoryCompat};
    /// use processors::message::Role;
    /// let compat = ProviderHistoryCompat::builder()
    ///     .disable(BuiltinRule::UnsignedReasoning)
    ///     .custom_rule("no-tool-messages", |messages| {
    ///         let before = messages.len();
    ///         messages.retain(|m| m.role != Role::Tool);
    ///         messages.len() != before
    ///     })
    ///     .after_error(false)
    ///     .build()
    ///     .unwrap();
    /// assert!(!compat.rule_names().contains(&"unsigned-reasoning"));
    /// assert!(compat.rule_names().contains(&"no-tool-messages"));
    /// let none = ProviderHistoryCompat::builder().only([]).build().unwrap_err();
    /// assert!(matches!(none, ConfigError::NothingToDo(_)));
    /// ```
    pub fn builder() -> ProviderHistoryCompatBuilder {
        ProviderHistoryCompatBuilder {
            builtin: BuiltinRule::ALL.to_vec(),
            custom: Vec::new(),
            before_call: true,
            after_error: true,
        }
    }

    /// The names of its rules, in the order they run.
    pub fn rule_names(&self) -> Vec<&str> {
        self.builtin
            .iter()
            .map(|r| r.name())
            .chain(self.custom.iter().map(|r| r.name()))
            .collect()
    }

    fn rules(&self) -> impl Iterator<Item = AnyRule<'_>> {
        self.builtin
            .iter()
            .map(|r| AnyRule::Builtin(*r))
            .chain(self.custom.iter().map(|r| AnyRule::Custom(&**r)))
    }

    /// Runs the rules `pick` chooses on `messages`; returns the names of those that changed
    /// something.
    fn run(&self, messages: &mut Vec<Message>, pick: impl Fn(&AnyRule<'_>) -> bool) -> Vec<String> {
        let mut changed = Vec::new();
        for rule in self.rules().filter(|r| pick(r)) {
            if rule.apply(messages) {
                changed.push(rule.name().to_owned());
            }
        }
        changed
    }

    /// The prompt as the rules for `provider` rewrite it, or `None` when they change nothing.
    /// System messages go first, as the runner sends them; rules see the others only.
    ///
    /// ```
    /// use processors::builtins::ProviderHistoryCompat;
    /// use processors::message::{Message, Part, Role};
    /// let thinking = Message::new(Role::Assistant, vec![
    ///     Part::Reasoning { text: "let me think".into() },
    ///     Part::Text { text: "42".into() },
    /// ]);
    /// let prompt = vec![Message::system("Be brief."), Message::user("?"), thinking];
    /// let compat = ProviderHistoryCompat::new();
    /// assert!(compat.rewrite_prompt(&prompt, "openai").is_none());
    /// let sent = compat.rewrite_prompt(&prompt, "anthropic").unwrap();
    /// assert_eq!(sent[2].content.parts, [Part::Text { text: "42".into() }]);
    /// ```
    pub fn rewrite_prompt(&self, prompt: &[Message], provider: &str) -> Option<Vec<Message>> {
        let (system, mut rest): (Vec<Message>, Vec<Message>) =
            prompt.iter().cloned().partition(|m| m.role == Role::System);
        let changed = self.run(&mut rest, |r| r.before_call_to(provider));
        if changed.is_empty() {
            return None;
        }
        tracing::debug!(rules = ?changed, provider, "rewrote the prompt for the provider");
        Some(system.into_iter().chain(rest).collect())
    }
}

#[processor(crate = processors_runtime, id = "provider-history-compat")]
impl ProviderHistoryCompat {
    /// Before the call: the prompt as the rules rewrite it, for this call only.
    fn process_llm_request(
        &self,
        request: &ModelRequest,
        model: &dyn LanguageModel,
    ) -> LlmRequestAction {
        if !self.before_call {
            return LlmRequestAction::Continue;
        }
        match self.rewrite_prompt(&request.prompt, model.provider()) {
            Some(prompt) => LlmRequestAction::Prompt(prompt),
            None => LlmRequestAction::Continue,
        }
    }

    /// After a refusal that names a problem a rule fixes: repairs the list and asks for the
    /// call again, once per step.
    fn process_api_error(
        &self,
        error: &ApiError,
        list: &mut MessageList,
        step: StepNumber,
        state: &mut ProviderHistoryCompatState,
    ) -> ApiErrorAction {
        if !self.after_error
            || !matches!(error.status, Some(400 | 422))
            || state.attempts.used(step.0) > 0
        {
            return ApiErrorAction::Unhandled;
        }
        let mut messages: Vec<Message> = list.all().cloned().collect();
        let changed = self.run(&mut messages, |r| r.fixes(error));
        if changed.is_empty() {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        replace_conversation(list, messages);
        tracing::debug!(rules = ?changed, "repaired the history the provider refused");
        ApiErrorAction::Retry
    }
}

/// Whether a tool-call id is one every provider accepts.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TOOL_CALL_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// FNV-1a: the same in every process and version, unlike the standard hasher.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A valid id for `id`: its valid characters (at most 23), then a digest of the whole, so two
/// ids never become one and the same id always becomes the same.
fn safe_id(id: &str) -> String {
    let mut prefix: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(MAX_TOOL_CALL_ID_LEN - 17)
        .collect();
    if prefix.trim_matches('_').is_empty() {
        prefix = "call".to_owned();
    }
    format!("{prefix}_{:016x}", fnv1a(id))
}

fn rewrite_tool_call_ids(messages: &mut [Message]) -> bool {
    let mut changed = false;
    for part in messages.iter_mut().flat_map(|m| &mut m.content.parts) {
        let id = match part {
            Part::ToolCall(c) => &mut c.tool_call_id,
            Part::ToolResult(r) => &mut r.tool_call_id,
            _ => continue,
        };
        if !valid_id(id) {
            *id = safe_id(id);
            changed = true;
        }
    }
    changed
}

/// Drops the parts `drop(message index, part)` names; a message left without parts goes too.
fn drop_parts(messages: &mut Vec<Message>, drop: impl Fn(usize, &Part) -> bool) -> bool {
    let mut changed = false;
    let mut emptied = HashSet::new();
    for (i, m) in messages.iter_mut().enumerate() {
        let before = m.content.parts.len();
        m.content.parts.retain(|p| !drop(i, p));
        if m.content.parts.len() != before {
            changed = true;
            if m.content.parts.is_empty() {
                emptied.insert(i);
            }
        }
    }
    if !emptied.is_empty() {
        let mut i = 0;
        messages.retain(|_| {
            i += 1;
            !emptied.contains(&(i - 1))
        });
    }
    changed
}

fn drop_orphan_results(messages: &mut Vec<Message>) -> bool {
    // A result answers a call made before it.
    let mut seen: HashSet<String> = HashSet::new();
    let mut orphans: HashSet<(usize, String)> = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        for part in &m.content.parts {
            match part {
                Part::ToolCall(c) => {
                    seen.insert(c.tool_call_id.clone());
                }
                Part::ToolResult(r) if !seen.contains(&r.tool_call_id) => {
                    orphans.insert((i, r.tool_call_id.clone()));
                }
                _ => {}
            }
        }
    }
    if orphans.is_empty() {
        return false;
    }
    drop_parts(
        messages,
        |i, p| matches!(p, Part::ToolResult(r) if orphans.contains(&(i, r.tool_call_id.clone()))),
    )
}

fn drop_unanswered_calls(messages: &mut Vec<Message>) -> bool {
    // A call is answered by a result after it.
    let mut answered: HashSet<String> = HashSet::new();
    let mut unanswered: HashSet<(usize, String)> = HashSet::new();
    for (i, m) in messages.iter().enumerate().rev() {
        for part in m.content.parts.iter().rev() {
            match part {
                Part::ToolResult(r) => {
                    answered.insert(r.tool_call_id.clone());
                }
                Part::ToolCall(c) if !answered.contains(&c.tool_call_id) => {
                    unanswered.insert((i, c.tool_call_id.clone()));
                }
                _ => {}
            }
        }
    }
    if unanswered.is_empty() {
        return false;
    }
    drop_parts(
        messages,
        |i, p| matches!(p, Part::ToolCall(c) if unanswered.contains(&(i, c.tool_call_id.clone()))),
    )
}

fn blank(part: &Part) -> bool {
    matches!(part, Part::Text { text } if text.trim().is_empty())
}

fn drop_empty_assistant_messages(messages: &mut Vec<Message>) -> bool {
    let before = messages.len();
    messages.retain(|m| m.role != Role::Assistant || !m.content.parts.iter().all(blank));
    let mut changed = messages.len() != before;
    for m in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
        if m.content.parts.iter().any(blank) {
            m.content.parts.retain(|p| !blank(p));
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_ids_are_valid_stable_and_distinct() {
        for id in [
            "functions.weather:0",
            "a.b",
            "a:b",
            "",
            "x".repeat(80).as_str(),
            "日本",
        ] {
            let safe = safe_id(id);
            assert!(valid_id(&safe), "{id:?} -> {safe:?}");
            assert_eq!(safe, safe_id(id));
        }
        assert_ne!(safe_id("a.b"), safe_id("a:b"));
        assert!(safe_id("functions.weather:0").starts_with("functions_weather_0_"));
        assert!(valid_id("toolu_01A09q90qw90lq917835lq9"));
        assert!(valid_id("call_abc-123"));
        assert!(!valid_id("call.1"));
    }
}
