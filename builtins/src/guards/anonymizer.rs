//! [`Anonymizer`]: reversible anonymisation. Personal data and credentials in what the model
//! is sent become typed placeholders (`[EMAIL_1]`, `[SSN_1]`), and the placeholders in what
//! the model answers become the values again, for the caller, streamed too.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::Anonymizer;
//! use processors::prelude::*;
//!
//! // The model echoes what it was sent, placeholder split across two deltas.
//! let model = ScriptedModel::new([Turn::deltas(["I will write to [EMA", "IL_1] today."])]);
//! let anonymizer = Anonymizer::builder().build()?;
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(anonymizer.clone())
//!     .output(anonymizer)
//!     .build()?;
//! let result = agent.generate("Please write to jane.doe@example.com, SSN 536-22-1847.").await?;
//! // The model never saw the values...
//! assert_eq!(model.requests()[0].prompt[0].text(), "Please write to [EMAIL_1], SSN [SSN_1].");
//! // ...and the caller gets them back.
//! assert_eq!(result.text, "I will write to jane.doe@example.com today.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Where it works
//!
//! - `process_llm_request` (in `input`): every model call's prompt, as sent: the text and
//!   reasoning of every message (system, user, assistant, remembered turns included), the
//!   arguments of tool calls and the results of tools (their strings). The rewrite is for the
//!   call only: the message list and memory keep what the caller sent.
//! - `process_tool_call` (in `output`): a tool the model calls gets the values, not the
//!   placeholders, in its arguments.
//! - `process_output_stream` (in `output`): text and reasoning deltas, and the arguments of
//!   `tool-call` chunks. A placeholder split across deltas is restored whole: the end of a
//!   delta that may be the start of one (`[EMA`) is held until the next delta settles it, and
//!   goes at the latest with the chunk that ends the text block.
//! - `process_output_result` (in `output`): the answer's text, reasoning and tool calls, once
//!   at the end (what did not stream through it); this is what `result.text` and memory get.
//!
//! Place it in both lists: its two halves share their per-request state (the vault) through
//! its id, `anonymizer`.
//!
//! # The vault
//!
//! One per request, in the processor's per-request state: each value found gets a placeholder
//! of its rule's kind, numbered from 1 in the order first seen (`[EMAIL_1]`, `[EMAIL_2]`); the
//! same value gets the same placeholder in every call of the request, so a tool loop's prompts
//! agree. Only placeholders of the vault are restored: `[EMAIL_9]` that no value had stays as
//! it is, and a placeholder-shaped text the prompt already holds (`[EMAIL_1]` written by the
//! user) is never given to a value, so the numbering skips it. The vault is dropped with the
//! request and never stored, logged or traced (its `Debug` shows counts only); memory keeps
//! the conversation as the caller sent and received it, and each request's model calls see it
//! anonymised again. A value the vault holds is
//! replaced wherever it appears in a later call's prompt, also where its rule no longer
//! matches it (a digit the model wrote after a restored number).
//!
//! A [`ResponseCache`](crate::ResponseCache) after it in `input` sees prompts that read alike
//! for different values (`Reply to [EMAIL_1]`), and keeps answers as the caller got them, with
//! the values: the anonymizer adds a digest of its vault's values to the cache's key
//! ([`KeyParts`]), so that an answer is replayed only to a request with the same values.
//!
//! # What is found
//!
//! The rules of a [`RegexFilter`]: by default the `pii` and `secrets` presets (e-mail, SSN,
//! card and IBAN numbers checked by their check digits, IP addresses, dates of birth, phone
//! numbers, the common providers' API keys, JWTs, private keys); add presets and rules of your
//! own, or leave some out, as with the filter.

use crate::config::ConfigError;
use crate::regex_filter::{Preset, RegexFilter, RegexFilterBuilder, Rule};
use crate::response_cache::KeyParts;
use crate::stream_text::{Blocks, Fed, Scan};
use processors_macros::processor;
use processors_runtime::ProcessorError;
use processors_runtime::chunk::{Chunk, ChunkKind};
use processors_runtime::context::RequestContext;
use processors_runtime::message::{Message, Part, Role, ToolCall};
use processors_runtime::model::ModelRequest;
use processors_runtime::processor::{
    LlmRequestAction, OutputOutcome, StreamAction, ToolCallAction,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

/// The longest placeholder the stream holds back for with the presets' labels, in bytes: `[`,
/// a label, `_`, a number, `]`; rules of one's own with longer names raise it.
const MAX_PLACEHOLDER: usize = 64;
/// The room a placeholder needs beside its label: the brackets, `_` and a `u32`.
const PLACEHOLDER_ROOM: usize = 13;

/// Builds an [`Anonymizer`]: the rules that find what to replace.
#[must_use]
pub struct AnonymizerBuilder {
    filter: RegexFilterBuilder,
    presets: bool,
}

impl fmt::Debug for AnonymizerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnonymizerBuilder").finish_non_exhaustive()
    }
}

impl AnonymizerBuilder {
    /// Finds a preset's values too. Naming a preset replaces the default ones (`pii` and
    /// `secrets`).
    pub fn preset(mut self, preset: Preset) -> Self {
        self.presets = false;
        self.filter = self.filter.preset(preset);
        self
    }

    /// Finds a rule's values too; its name gives the placeholders' kind (`ticket` →
    /// `[TICKET_1]`). Its strategy and placeholder are not used.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.filter = self.filter.rule(rule);
        self
    }

    /// Leaves a rule out (by name, as [`RegexFilterBuilder::without`]).
    pub fn without(mut self, name: impl Into<String>) -> Self {
        self.filter = self.filter.without(name);
        self
    }

    /// The anonymizer; errors name a rule that does not compile, an unknown rule left out, or
    /// no rule at all.
    pub fn build(self) -> Result<Anonymizer, ConfigError> {
        let mut filter = self.filter;
        if self.presets {
            filter = filter.preset(Preset::Pii).preset(Preset::Secrets);
        }
        let filter = filter.build()?;
        let labels: HashMap<String, String> = filter
            .rule_names()
            .map(|name| (name.to_owned(), crate::redact::label(name)))
            .collect();
        let longest = labels.values().map(String::len).max().unwrap_or(0);
        Ok(Anonymizer {
            inner: Arc::new(Inner {
                filter,
                labels,
                max_placeholder: MAX_PLACEHOLDER.max(longest + PLACEHOLDER_ROOM),
            }),
        })
    }
}

/// Replaces personal data and credentials with typed placeholders before the model sees them
/// and restores them in its answer. See [the module](self) for the whole story.
#[derive(Clone)]
pub struct Anonymizer {
    inner: Arc<Inner>,
}

struct Inner {
    filter: RegexFilter,
    /// Each rule's placeholder label (`credit-card` → `CREDIT_CARD`).
    labels: HashMap<String, String>,
    /// The longest placeholder its labels make, in bytes.
    max_placeholder: usize,
}

impl fmt::Debug for Anonymizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Anonymizer")
            .field("rules", &self.inner.filter.rule_names().collect::<Vec<_>>())
            .finish()
    }
}

impl Anonymizer {
    /// Starts an anonymizer with the `pii` and `secrets` presets.
    pub fn builder() -> AnonymizerBuilder {
        AnonymizerBuilder {
            filter: RegexFilter::builder(),
            presets: true,
        }
    }

    /// The names of the rules that find what it replaces.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.inner.filter.rule_names()
    }
}

/// The placeholders of one request and the values they stand for.
struct Vault {
    /// Placeholder by value.
    by_value: HashMap<String, String>,
    /// Value by placeholder.
    by_placeholder: HashMap<String, String>,
    /// How many placeholders each label has given.
    counts: HashMap<String, u32>,
    /// The values, longest first (for replacing them where no rule matches them again).
    values: Vec<String>,
    /// The longest placeholder, in bytes.
    max: usize,
    /// Placeholder-shaped text the prompt holds of itself (`[EMAIL_1]` written by the user):
    /// never given to a value, so that restoring leaves it as it was.
    taken: HashSet<String>,
}

impl Default for Vault {
    fn default() -> Self {
        Vault {
            by_value: HashMap::new(),
            by_placeholder: HashMap::new(),
            counts: HashMap::new(),
            values: Vec::new(),
            max: MAX_PLACEHOLDER,
            taken: HashSet::new(),
        }
    }
}

impl Vault {
    /// The placeholder of `value`, found by a rule labelled `label`.
    fn placeholder(&mut self, label: &str, value: &str) -> &str {
        if !self.by_value.contains_key(value) {
            let n = self.counts.entry(label.to_owned()).or_insert(0);
            let placeholder = loop {
                *n += 1;
                let candidate = format!("[{label}_{n}]");
                if !self.taken.contains(&candidate) {
                    break candidate;
                }
            };
            self.by_placeholder
                .insert(placeholder.clone(), value.to_owned());
            self.by_value.insert(value.to_owned(), placeholder);
            let at = self.values.partition_point(|v| v.len() >= value.len());
            self.values.insert(at, value.to_owned());
        }
        &self.by_value[value]
    }

    /// Keeps the placeholder-shaped pieces of `text` (`[` capitals, digits or `_` `]`) that
    /// are not the vault's from being given to a value.
    fn reserve_literals(&mut self, text: &str) {
        let mut rest = text;
        while let Some(open) = rest.find('[') {
            let tail = &rest[open..];
            let inner = tail[1..]
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .map_or(tail.len() - 1, |n| n);
            if inner > 0 && tail[1 + inner..].starts_with(']') {
                let token = &tail[..inner + 2];
                if !self.by_placeholder.contains_key(token) {
                    self.taken.insert(token.to_owned());
                }
            }
            rest = &tail[1..];
        }
    }

    /// A digest of the values (SipHash-2-4 of them in placeholder order), for the response
    /// cache's key: equal for equal vaults, and no value in it.
    fn digest(&self) -> String {
        use std::hash::Hasher as _;
        let mut pairs: Vec<(&String, &String)> = self.by_placeholder.iter().collect();
        pairs.sort();
        let mut h = siphasher::sip::SipHasher24::new();
        for (placeholder, value) in pairs {
            h.write(placeholder.as_bytes());
            h.write_u8(0);
            h.write(value.as_bytes());
            h.write_u8(0);
        }
        format!("{:016x}", h.finish())
    }

    /// `text` with the vault's placeholders replaced by their values: `None` when none is in
    /// it.
    fn restore(&self, text: &str) -> Option<String> {
        self.restore_as(text, false)
    }

    /// [`restore`](Self::restore) in JSON text: each value written as the inside of a JSON
    /// string (a placeholder only ever stands in a string of the arguments the model wrote).
    fn restore_in_json(&self, text: &str) -> Option<String> {
        self.restore_as(text, true)
    }

    fn restore_as(&self, text: &str, json: bool) -> Option<String> {
        if self.by_placeholder.is_empty() || !text.contains('[') {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut changed = false;
        while let Some(open) = rest.find('[') {
            out.push_str(&rest[..open]);
            let tail = &rest[open..];
            // Only as far as the longest placeholder: a text of `[` and no `]` is one pass.
            let window = &tail.as_bytes()[..tail.len().min(self.max)];
            let found = window
                .iter()
                .position(|&b| b == b']')
                .and_then(|close| Some((close, self.by_placeholder.get(&tail[..=close])?)));
            match found {
                Some((close, value)) => {
                    match json {
                        true => push_json_escaped(&mut out, value),
                        false => out.push_str(value),
                    }
                    rest = &tail[close + 1..];
                    changed = true;
                }
                None => {
                    out.push('[');
                    rest = &tail[1..];
                }
            }
        }
        out.push_str(rest);
        changed.then_some(out)
    }

    /// `value` with the strings in it restored: `None` when none changes.
    fn restore_json(&self, value: &Value) -> Option<Value> {
        map_strings(value, &mut |s| self.restore(s))
    }
}

/// `m` with `f` applied to every text that is anonymised (text, reasoning, and the strings of
/// tool calls' arguments and tool results): `None` when `f` changes none.
fn map_texts(m: &Message, f: &mut impl FnMut(&str) -> Option<String>) -> Option<Message> {
    let mut changed: Option<Message> = None;
    for (i, part) in m.content.parts.iter().enumerate() {
        let new = match part {
            Part::Text { text } => f(text).map(|t| Part::Text { text: t.into() }),
            Part::Reasoning { text } => f(text).map(|t| Part::Reasoning { text: t.into() }),
            Part::ToolCall(call) => map_strings(&call.args, f).map(|args| {
                Part::ToolCall(ToolCall {
                    args,
                    ..call.clone()
                })
            }),
            Part::ToolResult(result) => {
                let value = map_strings(&result.result, f);
                let output = result.model_output.as_ref().and_then(|o| map_strings(o, f));
                (value.is_some() || output.is_some()).then(|| {
                    let mut r = result.clone();
                    if let Some(v) = value {
                        r.result = v;
                    }
                    if output.is_some() {
                        r.model_output = output;
                    }
                    Part::ToolResult(r)
                })
            }
            Part::File { .. } | Part::Data { .. } => None,
        };
        if let Some(new) = new {
            changed.get_or_insert_with(|| m.clone()).content.parts[i] = new;
        }
    }
    changed
}

/// `value` with `f` applied to every string in it (keys apart): `None` when `f` changes none.
fn map_strings(value: &Value, f: &mut impl FnMut(&str) -> Option<String>) -> Option<Value> {
    match value {
        Value::String(s) => f(s).map(Value::String),
        Value::Array(items) => {
            let mut changed: Option<Vec<Value>> = None;
            for (i, item) in items.iter().enumerate() {
                if let Some(new) = map_strings(item, f) {
                    changed.get_or_insert_with(|| items.clone())[i] = new;
                }
            }
            changed.map(Value::Array)
        }
        Value::Object(map) => {
            let mut changed: Option<serde_json::Map<String, Value>> = None;
            for (k, v) in map {
                if let Some(new) = map_strings(v, f) {
                    changed
                        .get_or_insert_with(|| map.clone())
                        .insert(k.clone(), new);
                }
            }
            changed.map(Value::Object)
        }
        _ => None,
    }
}

/// `value` as the inside of a JSON string.
fn push_json_escaped(out: &mut String, value: &str) {
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    out.push_str(&quoted[1..quoted.len() - 1]);
}

/// Whether `tail`, the end of a text from a `[`, could be the start of a placeholder: then
/// only capitals, digits and `_`, shorter than the longest placeholder (`max` bytes).
fn may_open_placeholder(tail: &str, max: usize) -> bool {
    tail.len() < max
        && tail[1..]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// What a streamed tool call holds of its arguments.
struct HeldArgs {
    tool_call_id: String,
    tool_name: String,
    text: String,
}

/// The per-request state of an [`Anonymizer`]: the vault, and the text the stream holds
/// back. Its `Debug` shows counts, never values.
#[derive(Default)]
pub struct AnonymizerState {
    vault: Vault,
    blocks: Blocks,
    held: String,
    /// The end of a streamed tool call's arguments that may begin a placeholder, by call, until
    /// the next delta of the call (or the call itself, or the step's end) settles it.
    args_held: Vec<HeldArgs>,
}

impl fmt::Debug for AnonymizerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnonymizerState")
            .field("placeholders", &self.vault.by_placeholder.len())
            .field("held_bytes", &self.held.len())
            .field(
                "held_argument_bytes",
                &self.args_held.iter().map(|h| h.text.len()).sum::<usize>(),
            )
            .finish_non_exhaustive()
    }
}

impl AnonymizerState {
    /// How many values the request's vault holds.
    pub fn len(&self) -> usize {
        self.vault.by_placeholder.len()
    }

    /// Whether the vault is empty.
    pub fn is_empty(&self) -> bool {
        self.vault.by_placeholder.is_empty()
    }
}

impl Inner {
    /// `text` with every value found replaced by its placeholder: `None` when none is found.
    /// A value the vault holds is replaced wherever it is, also where no rule matches it any
    /// more (`536-22-18475`, an answer's digit after a restored SSN).
    fn anonymize(&self, text: &str, vault: &mut Vault) -> Option<String> {
        let found = self.filter.find(text);
        let mut out: Option<String> = None;
        if !found.is_empty() {
            let mut o = String::with_capacity(text.len());
            let mut pos = 0;
            for m in found {
                o.push_str(&text[pos..m.start]);
                let label = self.labels.get(m.rule).map_or("VALUE", String::as_str);
                o.push_str(vault.placeholder(label, &text[m.start..m.end]));
                pos = m.end;
            }
            o.push_str(&text[pos..]);
            out = Some(o);
        }
        for value in &vault.values {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(value.as_str()) {
                out = Some(current.replace(value.as_str(), &vault.by_value[value]));
            }
        }
        out
    }

    /// A message with its text, reasoning, tool calls' arguments and tool results
    /// anonymised, when any changes.
    fn anonymize_message(&self, m: &Message, vault: &mut Vault) -> Option<Message> {
        map_texts(m, &mut |s| self.anonymize(s, vault))
    }
}

/// A message with its text, reasoning and tool calls' arguments restored, when any changes.
fn restore_message(m: &Message, vault: &Vault) -> Option<Message> {
    let mut changed: Option<Message> = None;
    for (i, part) in m.content.parts.iter().enumerate() {
        let new = match part {
            Part::Text { text } => vault.restore(text).map(|t| Part::Text { text: t.into() }),
            Part::Reasoning { text } => vault
                .restore(text)
                .map(|t| Part::Reasoning { text: t.into() }),
            Part::ToolCall(call) => vault.restore_json(&call.args).map(|args| {
                Part::ToolCall(ToolCall {
                    args,
                    ..call.clone()
                })
            }),
            _ => None,
        };
        if let Some(new) = new {
            changed.get_or_insert_with(|| m.clone()).content.parts[i] = new;
        }
    }
    changed
}

/// The stream side: restores the placeholders of a text block, holding back a possible
/// placeholder's start at the end of a delta.
struct Restore<'a> {
    vault: &'a Vault,
    held: &'a mut String,
}

impl Scan for Restore<'_> {
    fn feed(&mut self, text: &str, out: &mut String) -> Result<Fed, ProcessorError> {
        if self.held.is_empty() && (self.vault.by_placeholder.is_empty() || !text.contains('[')) {
            return Ok(Fed::Unchanged);
        }
        let fresh = self.held.is_empty();
        self.held.push_str(text);
        let hold = match self.held.rfind('[') {
            Some(at) if may_open_placeholder(&self.held[at..], self.vault.max) => at,
            _ => self.held.len(),
        };
        let done = &self.held[..hold];
        let fed = match self.vault.restore(done) {
            Some(restored) => {
                out.push_str(&restored);
                Fed::Emit
            }
            // A delta with a `[` of no placeholder, nothing held before or after: it goes on
            // as it came.
            None if fresh && hold == self.held.len() => Fed::Unchanged,
            None => {
                out.push_str(done);
                Fed::Emit
            }
        };
        self.held.drain(..hold);
        Ok(fed)
    }

    fn finish(&mut self, out: &mut String) -> Result<(), ProcessorError> {
        match self.vault.restore(self.held) {
            Some(restored) => out.push_str(&restored),
            None => out.push_str(self.held),
        }
        self.held.clear();
        Ok(())
    }
}

/// A tool call's argument delta with its placeholders restored: what goes on now (nothing
/// when all of it may begin a placeholder and is held), or `None` when it goes on as it came.
fn restore_args_delta(
    vault: &Vault,
    args_held: &mut Vec<HeldArgs>,
    at: &Chunk,
    (tool_call_id, tool_name, delta): (&str, &str, &str),
) -> Option<Vec<Chunk>> {
    let i = args_held
        .iter()
        .position(|h| h.tool_call_id == tool_call_id);
    if i.is_none() && (vault.by_placeholder.is_empty() || !delta.contains('[')) {
        return None;
    }
    let mut text = i.map(|i| args_held.swap_remove(i).text).unwrap_or_default();
    let fresh = text.is_empty();
    text.push_str(delta);
    let hold = match text.rfind('[') {
        Some(at) if may_open_placeholder(&text[at..], vault.max) => at,
        _ => text.len(),
    };
    let rest = text.split_off(hold);
    let nothing_held = rest.is_empty();
    let args = |text| HeldArgs {
        tool_call_id: tool_call_id.to_owned(),
        tool_name: tool_name.to_owned(),
        text,
    };
    if !nothing_held {
        args_held.push(args(rest));
    }
    let restored = vault.restore_in_json(&text);
    if restored.is_none() && fresh && nothing_held {
        return None;
    }
    let now = restored.unwrap_or(text);
    Some(match now.is_empty() {
        true => Vec::new(),
        false => vec![args_chunk(at, args(now))],
    })
}

/// What a call held of its arguments, restored, as a delta of that call before the chunk `at`.
fn settle_args(vault: &Vault, mut held: HeldArgs, at: &Chunk) -> Chunk {
    if let Some(restored) = vault.restore_in_json(&held.text) {
        held.text = restored;
    }
    args_chunk(at, held)
}

/// A delta of the call's arguments carrying its `text`, from the run of `at`.
fn args_chunk(at: &Chunk, args: HeldArgs) -> Chunk {
    Chunk {
        kind: ChunkKind::ToolCallDelta {
            tool_call_id: args.tool_call_id,
            tool_name: args.tool_name,
            args_text_delta: args.text,
        },
        ..at.clone()
    }
}

#[processor(crate = processors_runtime, id = "anonymizer")]
impl Anonymizer {
    /// Replaces the values in this call's prompt with their placeholders.
    fn process_llm_request(
        &self,
        request: &ModelRequest,
        cx: &mut RequestContext,
        state: &mut AnonymizerState,
    ) -> LlmRequestAction {
        state.vault.max = self.inner.max_placeholder;
        for m in &request.prompt {
            map_texts(m, &mut |t| {
                state.vault.reserve_literals(t);
                None
            });
        }
        let mut changed: Option<Vec<Message>> = None;
        for (i, m) in request.prompt.iter().enumerate() {
            if let Some(new) = self.inner.anonymize_message(m, &mut state.vault) {
                changed.get_or_insert_with(|| request.prompt.clone())[i] = new;
            }
        }
        // A response cache after this processor keys the call by the prompt it sends, which
        // reads alike for other values: its key gets the values' digest, so that an answer
        // (which holds the values as the caller got them) is replayed for these values only.
        if !state.is_empty() {
            KeyParts::add(cx, Self::ID, state.vault.digest());
        }
        match changed {
            Some(prompt) => LlmRequestAction::Prompt(prompt),
            None => LlmRequestAction::Continue,
        }
    }

    /// Gives the tool the values, not the placeholders, in its arguments.
    fn process_tool_call(&self, call: &ToolCall, state: &mut AnonymizerState) -> ToolCallAction {
        match state.vault.restore_json(&call.args) {
            Some(args) => ToolCallAction::Rewrite(args),
            None => ToolCallAction::Continue,
        }
    }

    /// Restores placeholders in text and reasoning deltas, and in streamed tool calls'
    /// argument deltas (each whole, when split across deltas), and in tool calls.
    fn process_output_stream(
        &self,
        chunk: &Chunk,
        state: &mut AnonymizerState,
    ) -> Result<StreamAction, ProcessorError> {
        let AnonymizerState {
            vault,
            blocks,
            held,
            args_held,
        } = state;
        // What stands for the chunk: its arguments restored, what a call held first.
        let mine: Option<Vec<Chunk>> = match &chunk.kind {
            ChunkKind::ToolCallDelta {
                tool_call_id,
                tool_name,
                args_text_delta,
            } => restore_args_delta(
                vault,
                args_held,
                chunk,
                (tool_call_id, tool_name, args_text_delta),
            ),
            ChunkKind::ToolCall(call) => {
                let before = args_held
                    .iter()
                    .position(|h| h.tool_call_id == call.tool_call_id)
                    .map(|i| settle_args(vault, args_held.swap_remove(i), chunk));
                let call = vault.restore_json(&call.args).map(|args| Chunk {
                    kind: ChunkKind::ToolCall(ToolCall {
                        args,
                        ..call.clone()
                    }),
                    ..chunk.clone()
                });
                match (before, call) {
                    (None, None) => None,
                    (before, call) => Some(
                        before
                            .into_iter()
                            .chain(Some(call.unwrap_or_else(|| chunk.clone())))
                            .collect(),
                    ),
                }
            }
            // A step that ends before a call it streamed: what the call held goes first.
            ChunkKind::StepFinish { .. } | ChunkKind::Finish { .. } | ChunkKind::Error { .. }
                if !args_held.is_empty() =>
            {
                let settled = std::mem::take(args_held)
                    .into_iter()
                    .map(|held| settle_args(vault, held, chunk));
                Some(settled.chain(Some(chunk.clone())).collect())
            }
            _ => None,
        };
        let mut scan = Restore { vault, held };
        let action = blocks.on_chunk(&mut scan, chunk)?;
        let Some(mine) = mine else {
            return Ok(action);
        };
        // The text block's held text (if any) goes first, then what stands for the chunk: for a
        // chunk that is no text delta, the driver gives `Pass`, or the held text and the chunk.
        Ok(match action {
            StreamAction::Many(mut v) => {
                v.pop();
                v.extend(mine);
                StreamAction::Many(v)
            }
            _ => match mine.len() {
                0 => StreamAction::Drop,
                1 => {
                    StreamAction::Replace(mine.into_iter().next().unwrap_or_else(|| chunk.clone()))
                }
                _ => StreamAction::Many(mine),
            },
        })
    }

    /// Restores placeholders in the answer's text, reasoning and tool calls.
    fn process_output_result(
        &self,
        mut messages: Vec<Message>,
        state: &mut AnonymizerState,
    ) -> OutputOutcome {
        let mut changed = false;
        for m in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
            if let Some(new) = restore_message(m, &state.vault) {
                *m = new;
                changed = true;
            }
        }
        match changed {
            true => OutputOutcome::Messages(messages),
            false => OutputOutcome::Unchanged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vault_of(pairs: &[(&str, &str)]) -> Vault {
        let mut v = Vault::default();
        for (label, value) in pairs {
            v.placeholder(label, value);
        }
        v
    }

    #[test]
    fn equal_values_share_a_placeholder_numbered_by_kind() {
        let mut v = Vault::default();
        assert_eq!(v.placeholder("EMAIL", "a@example.com"), "[EMAIL_1]");
        assert_eq!(v.placeholder("EMAIL", "b@example.com"), "[EMAIL_2]");
        assert_eq!(v.placeholder("SSN", "536-22-1847"), "[SSN_1]");
        assert_eq!(v.placeholder("EMAIL", "a@example.com"), "[EMAIL_1]");
    }

    #[test]
    fn only_the_vaults_placeholders_are_restored() {
        let v = vault_of(&[("EMAIL", "a@example.com")]);
        assert_eq!(
            v.restore("[EMAIL_1], [EMAIL_2], [x] [").as_deref(),
            Some("a@example.com, [EMAIL_2], [x] [")
        );
        assert_eq!(v.restore("no placeholder [here]"), None);
        assert_eq!(Vault::default().restore("[EMAIL_1]"), None);
    }

    #[test]
    fn a_possible_placeholder_start_is_held_and_nothing_else() {
        assert!(may_open_placeholder("[", 64));
        assert!(may_open_placeholder("[EMAIL_", 64));
        assert!(!may_open_placeholder("[email", 64));
        assert!(!may_open_placeholder("[EMAIL_1] ", 64));
        let long = format!("[{}", "A".repeat(70));
        assert!(!may_open_placeholder(&long, 64));
        assert!(may_open_placeholder(&long, 90));
    }

    #[test]
    fn the_stream_restores_a_placeholder_split_anywhere() {
        let v = vault_of(&[("EMAIL", "a@example.com"), ("SSN", "536-22-1847")]);
        let text = "Mail [EMAIL_1] about [SSN_1] [not one] [EMAIL_7].";
        let expected = "Mail a@example.com about 536-22-1847 [not one] [EMAIL_7].";
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let mut held = String::new();
                let mut all = String::new();
                let mut scan = Restore {
                    vault: &v,
                    held: &mut held,
                };
                for piece in [&text[..cut], &text[cut..cut2], &text[cut2..]] {
                    let mut out = String::new();
                    match scan.feed(piece, &mut out).unwrap() {
                        Fed::Unchanged => all.push_str(piece),
                        Fed::Emit => all.push_str(&out),
                    }
                }
                let mut out = String::new();
                scan.finish(&mut out).unwrap();
                all.push_str(&out);
                assert_eq!(all, expected, "cut at {cut} and {cut2}");
            }
        }
    }

    #[test]
    fn a_text_of_brackets_is_restored_in_one_pass_and_long_labels_still_restore() {
        let v = vault_of(&[("EMAIL", "a@example.com")]);
        let brackets = "[".repeat(200_000);
        assert_eq!(v.restore(&brackets), None);
        let mut v = vault_of(&[(&"LONG".repeat(20), "x-1")]);
        v.max = 80 + PLACEHOLDER_ROOM;
        let placeholder = format!("[{}_1]", "LONG".repeat(20));
        assert_eq!(
            v.restore(&format!("see {placeholder}")).as_deref(),
            Some("see x-1")
        );
    }

    #[test]
    fn the_digest_tells_vaults_apart_and_holds_no_value() {
        let a = vault_of(&[("EMAIL", "a@example.com")]);
        let b = vault_of(&[("EMAIL", "b@example.com")]);
        assert_eq!(a.digest(), vault_of(&[("EMAIL", "a@example.com")]).digest());
        assert_ne!(a.digest(), b.digest());
        assert!(!a.digest().contains('@'));
    }

    #[test]
    fn strings_inside_json_are_mapped_keys_apart() {
        let v = vault_of(&[("EMAIL", "a@example.com")]);
        let args =
            serde_json::json!({ "to": ["[EMAIL_1]", 3], "[EMAIL_1]": { "cc": "[EMAIL_1]" } });
        assert_eq!(
            v.restore_json(&args),
            Some(
                serde_json::json!({ "to": ["a@example.com", 3], "[EMAIL_1]": { "cc": "a@example.com" } })
            )
        );
        assert_eq!(v.restore_json(&serde_json::json!({ "n": 1 })), None);
    }
}
