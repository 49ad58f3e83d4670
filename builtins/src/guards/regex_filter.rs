//! [`RegexFilter`]: finds personal data, credentials, links or your own patterns in the input,
//! in the streamed answer and in the final answer, and blocks, redacts or flags them.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::regex_filter::{Preset, RegexFilter};
//! use processors::prelude::*;
//!
//! let filter = RegexFilter::builder()
//!     .preset(Preset::Pii)
//!     .preset(Preset::Secrets)
//!     .build()?;
//! // The key arrives split across two deltas; the client never sees either half.
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::deltas([
//!         "Use sk-proj-12",
//!         "34567890abcdefghijkl, or mail ops@example.com.",
//!     ])]))
//!     .output(filter)
//!     .build()?;
//! let result = agent.generate("which key?").await?;
//! assert_eq!(result.text, "Use [OPENAI_API_KEY], or mail [EMAIL].");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Where it works
//!
//! - `process_input` ([`Sites::INPUT`]): the text and reasoning
//!   parts of the new input messages, before the model sees them (and before memory saves
//!   them). Tool calls, tool results and files are left alone.
//! - `process_output_stream` ([`Sites::STREAM`]): text and
//!   reasoning deltas, as they stream. A match split across deltas is caught: the filter holds
//!   back the end of a delta while a match may still be in progress there, and lets the rest
//!   go at once (see [Holding back](#holding-back)).
//! - `process_output_result` ([`Sites::RESULT`]): the text and
//!   reasoning parts of the answer, once at the end; what the stream already handled is found
//!   handled, so this catches what did not stream through the filter (an answer replayed from
//!   a cache) and is what `result.text` and memory get.
//!
//! Tool calls (their arguments) and tool results are not filtered, in any hook. Place the
//! filter in `input`, in `output`, or in both (it is cheap to clone); each hook runs only in a
//! list where it applies.
//!
//! # Strategies
//!
//! [`Strategy::Redact`] (the default) replaces a match with the rule's placeholder
//! (`[EMAIL]`), with `****`, or with a short stable hash of it (`[EMAIL:1f0c2a9b]`), so that
//! equal values can still be told apart. [`Strategy::Block`] ends the run with a trip wire
//! whose reason and metadata name the rule, never the text it matched. [`Strategy::Warn`]
//! lets the text through and reports a violation (`on_violation` hears it, with the rules
//! and how often each matched). A rule may override the filter's strategy
//! ([`Rule::strategy`]).
//!
//! A hook reports either what it changed or a warning, so on the stream a warning travels
//! with the next chunk the filter lets through unchanged (at the latest the step's
//! `step-finish`), and the result hook reports only what the stream did not. In the result
//! hook, a warning that comes with a redaction of the same answer (possible only for text the
//! stream did not see) is logged, and the redaction wins.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::regex_filter::{Preset, RegexFilter, Rule, Strategy};
//! use processors::prelude::*;
//!
//! let filter = RegexFilter::builder()
//!     .preset(Preset::Secrets)
//!     .strategy(Strategy::Block)
//!     .rule(Rule::new("ticket", r"TICKET-[0-9]{4,}").strategy(Strategy::Warn))
//!     .build()?;
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::text("unused")]))
//!     .input(filter)
//!     .build()?;
//! let result = agent.generate("my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789").await?;
//! let tripwire = result.tripwire.expect("blocked");
//! assert_eq!(tripwire.processor_id, "regex-filter");
//! assert_eq!(tripwire.metadata.unwrap()["rule"], "github-token");
//! assert!(!tripwire.reason.contains("ghp_"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Holding back
//!
//! On the stream, the filter lets a delta go at once, as it came and without allocating,
//! unless a match may still be in progress at its end: then it holds back the text from the earliest
//! place where one may be, and lets it go as soon as the next delta settles it. What it holds
//! goes at the latest with the chunk that ends the text block (`text-end`, a tool call,
//! `step-finish`, …), scanned as the end of the text; so nothing is lost and order is kept.
//!
//! How much is held depends on the rules: for a key shape (`sk-…`), the key so far; for the
//! `email` rule, the word at the end of a delta (it could be followed by `@`); for a
//! private-key block, the block until its end marker. Never more than
//! [`max_hold`](RegexFilterBuilder::max_hold) bytes (32 KiB by default): past that, the filter
//! scans what it holds as if the text ended there and lets it go.
//!
//! `data-*` chunks do not go through the filter, so one may overtake held text.
//!
//! # Rules
//!
//! Patterns use the syntax of the `regex` crate. An invalid pattern, a pattern that can match
//! empty text, a rule name used twice, or a filter with no rule is an error from
//! [`build`](RegexFilterBuilder::build), never at run time. Where two rules match at one
//! place, the one added first wins; when a rule's check ([`Rule::validate`]) refuses its
//! match, the rules after it get their turn there.
//!
//! Prefer `(?-u:\b)` to `\b` in your patterns: next to non-ASCII text a Unicode `\b` keeps the
//! streaming matcher from deciding early, and it holds the text conservatively.
//!
//! # State
//!
//! One filter per list: two in one list would share their per-request state (their id is
//! `regex-filter`), which `agent!` refuses at compile time. Put all rules in one filter.

mod engine;
mod presets;

pub use crate::redact::Redaction;
pub use presets::{Preset, is_card_number, is_iban, is_ssn};

use crate::config::ConfigError;
use crate::config::Sites;
use crate::redact::Redacted;
use crate::stream_text::{Blocks, Fed, Scan};
use engine::{Check, Engine};
use processors_macros::processor;
use processors_runtime::chunk::Chunk;
use processors_runtime::message::{Message, MessageList, Part, Role};
use processors_runtime::processor::{OutputOutcome, StreamAction};
use processors_runtime::{Abort, ProcessorError};
use std::fmt;
use std::sync::Arc;

/// What the filter does with a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// End the run with a trip wire naming the rule (never the matched text).
    Block,
    /// Replace the match.
    Redact(Redaction),
    /// Let the text through and report a violation (`on_violation` hears it).
    Warn,
}

impl Default for Strategy {
    /// Redact with the rule's placeholder.
    fn default() -> Self {
        Strategy::Redact(Redaction::Placeholder)
    }
}

/// One pattern to look for.
///
/// ```
/// use processors::builtins::regex_filter::{Rule, Strategy};
/// let rule = Rule::new("employee-id", r"(?-u:\b)EMP-[0-9]{6}(?-u:\b)")
///     .placeholder("[EMPLOYEE]")
///     .strategy(Strategy::Warn);
/// assert_eq!(rule.name(), "employee-id");
/// ```
#[derive(Clone)]
pub struct Rule {
    name: String,
    pattern: String,
    placeholder: Option<String>,
    strategy: Option<Strategy>,
    check: Option<Check>,
}

impl Rule {
    /// A rule named `name` (lowercase letters, digits and `-`, as it appears in trip wires and
    /// placeholders) that matches `pattern`. The pattern is checked by
    /// [`build`](RegexFilterBuilder::build).
    pub fn new(name: impl Into<String>, pattern: impl Into<String>) -> Rule {
        Rule {
            name: name.into(),
            pattern: pattern.into(),
            placeholder: None,
            strategy: None,
            check: None,
        }
    }

    /// Replaces matches with `text` under [`Redaction::Placeholder`] (default: the name in
    /// capitals, `[EMPLOYEE_ID]`). An empty placeholder removes the match.
    pub fn placeholder(mut self, text: impl Into<String>) -> Rule {
        self.placeholder = Some(text.into());
        self
    }

    /// Uses this strategy for this rule's matches instead of the filter's.
    pub fn strategy(mut self, strategy: Strategy) -> Rule {
        self.strategy = Some(strategy);
        self
    }

    /// Accepts a match only when `check` says yes (a checksum, a range), so that text with
    /// the right shape but the wrong content is left alone; [`is_card_number`] and
    /// [`is_iban`] are such checks.
    ///
    /// ```
    /// use processors::builtins::regex_filter::{is_card_number, Rule};
    /// let cards = Rule::new("card", r"(?-u:\b)[0-9]{16}(?-u:\b)").validate(is_card_number);
    /// ```
    pub fn validate(mut self, check: fn(&str) -> bool) -> Rule {
        self.check = Some(check);
        self
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rule's pattern.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rule")
            .field("name", &self.name)
            .field("pattern", &self.pattern)
            .field("placeholder", &self.placeholder)
            .field("strategy", &self.strategy)
            .field("validated", &self.check.is_some())
            .finish()
    }
}

/// Configures a [`RegexFilter`]; [`build`](RegexFilterBuilder::build) checks everything.
#[derive(Debug, Clone)]
#[must_use]
pub struct RegexFilterBuilder {
    rules: Vec<Rule>,
    without: Vec<String>,
    strategy: Strategy,
    sites: Sites,
    max_hold: usize,
    hash_key: [u8; 16],
}

/// The default for [`RegexFilterBuilder::max_hold`].
pub const DEFAULT_MAX_HOLD: usize = 32 * 1024;

impl RegexFilterBuilder {
    /// Adds a preset's rules, after the rules added so far.
    pub fn preset(mut self, preset: Preset) -> Self {
        self.rules.extend(preset.rules());
        self
    }

    /// Adds a rule, after the rules added so far.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Leaves out the rule named `name` (from a preset, typically).
    ///
    /// ```
    /// use processors::builtins::regex_filter::{Preset, RegexFilter};
    /// let filter = RegexFilter::builder().preset(Preset::Pii).without("ip-address").build().unwrap();
    /// assert!(!filter.rule_names().any(|n| n == "ip-address"));
    /// ```
    pub fn without(mut self, name: impl Into<String>) -> Self {
        self.without.push(name.into());
        self
    }

    /// What to do with a match, for rules that do not say (default: redact with the rule's
    /// placeholder).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Where the filter acts (default [`Sites::ALL`]): the new input (`process_input`), the
    /// streamed deltas (`process_output_stream`), the final answer (`process_output_result`).
    pub fn sites(mut self, sites: Sites) -> Self {
        self.sites = sites;
        self
    }

    /// The most text, in bytes, the stream may hold back while a match may be in progress
    /// (default [`DEFAULT_MAX_HOLD`]). Past it, the held text is scanned as if the text ended
    /// there and let go: a longer match split across deltas could then escape.
    pub fn max_hold(mut self, bytes: usize) -> Self {
        self.max_hold = bytes;
        self
    }

    /// The key of [`Redaction::Hash`] (default: all zeros, so tags are the same everywhere).
    pub fn hash_key(mut self, key: [u8; 16]) -> Self {
        self.hash_key = key;
        self
    }

    /// Checks the configuration and compiles the rules.
    pub fn build(self) -> Result<RegexFilter, ConfigError> {
        self.sites.check(Sites::ALL)?;
        if self.max_hold == 0 {
            return Err(ConfigError::Zero {
                option: "max_hold",
                why: "with nothing held, a match split across deltas would escape; give at least 1 byte",
            });
        }
        let mut rules = self.rules;
        for name in &self.without {
            if !rules.iter().any(|r| &r.name == name) {
                let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
                return Err(ConfigError::Unknown {
                    what: "rule (in `without`)",
                    name: name.clone(),
                    known: format!("the filter's rules are: {}", names.join(", ")),
                });
            }
            rules.retain(|r| &r.name != name);
        }
        if rules.is_empty() {
            return Err(ConfigError::Empty {
                what: "the filter's list of rules",
                why: "add a preset (`.preset(Preset::Pii)`) or a rule (`.rule(Rule::new(\"name\", \"pattern\"))`)",
            });
        }
        let mut compiled = Vec::with_capacity(rules.len());
        let mut max_len = Some(0usize);
        for (i, rule) in rules.iter().enumerate() {
            if !valid_name(&rule.name) {
                return Err(ConfigError::InvalidName {
                    what: "rule",
                    name: rule.name.clone(),
                    why: "use lowercase letters, digits and `-`, starting with a letter",
                });
            }
            if rules[..i].iter().any(|r| r.name == rule.name) {
                return Err(ConfigError::Duplicate {
                    what: "rules",
                    name: rule.name.clone(),
                });
            }
            regex_automata::meta::Regex::new(&rule.pattern).map_err(|e| ConfigError::Pattern {
                rule: rule.name.clone(),
                reason: e.to_string(),
            })?;
            let properties = regex_automata::util::syntax::parse(&rule.pattern)
                .ok()
                .map(|hir| {
                    let p = hir.properties();
                    (p.minimum_len(), p.maximum_len())
                });
            if let Some((Some(0), _)) = properties {
                return Err(ConfigError::Pattern {
                    rule: rule.name.clone(),
                    reason: "it can match empty text, so it would match between any two characters; make it match at least one character".to_owned(),
                });
            }
            max_len = match (max_len, properties) {
                (Some(m), Some((_, Some(len)))) => Some(m.max(len)),
                _ => None,
            };
            let label = crate::redact::label(&rule.name);
            compiled.push(CompiledRule {
                placeholder: rule
                    .placeholder
                    .clone()
                    .unwrap_or_else(|| format!("[{label}]")),
                label,
                name: rule.name.clone(),
                strategy: rule.strategy.unwrap_or(self.strategy),
            });
        }
        let patterns: Vec<&str> = rules.iter().map(|r| r.pattern.as_str()).collect();
        let checks = rules.iter().map(|r| r.check).collect();
        let engine = Engine::new(&patterns, checks, max_len)
            .map_err(|e| ConfigError::TooLarge(e.to_string()))?;
        Ok(RegexFilter {
            inner: Arc::new(Inner {
                engine,
                rules: compiled,
                sites: self.sites,
                max_hold: self.max_hold,
                hash_key: self.hash_key,
            }),
        })
    }
}

/// Whether `name` is a rule name: lowercase letters, digits and `-`, starting with a letter.
fn valid_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Blocks, redacts or flags what matches its rules, in the input, the stream and the final
/// answer. See [the module](self) for the whole story.
///
/// ```
/// use processors::builtins::regex_filter::{Preset, RegexFilter};
/// let filter = RegexFilter::builder().preset(Preset::Urls).build().unwrap();
/// assert_eq!(RegexFilter::ID, "regex-filter");
/// assert_eq!(filter.rule_names().collect::<Vec<_>>(), ["url"]);
/// ```
#[derive(Clone)]
pub struct RegexFilter {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    rules: Vec<CompiledRule>,
    sites: Sites,
    max_hold: usize,
    hash_key: [u8; 16],
}

struct CompiledRule {
    name: String,
    label: String,
    placeholder: String,
    strategy: Strategy,
}

impl RegexFilter {
    /// Starts a filter with no rules, the [`Redact`](Strategy::Redact) strategy and every hook
    /// on.
    pub fn builder() -> RegexFilterBuilder {
        RegexFilterBuilder {
            rules: Vec::new(),
            without: Vec::new(),
            strategy: Strategy::default(),
            sites: Sites::ALL,
            max_hold: DEFAULT_MAX_HOLD,
            hash_key: [0; 16],
        }
    }

    /// The names of the filter's rules, in priority order.
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.inner.rules.iter().map(|r| r.name.as_str())
    }

    /// `text` as the filter leaves it when it is complete (as in the input or the final
    /// answer): `Ok(text)` changed or not; an error for a [`Block`](Strategy::Block) match,
    /// or for a [`Warn`](Strategy::Warn) match (a warning, with the text unchanged).
    ///
    /// ```
    /// use processors::builtins::regex_filter::{Preset, RegexFilter};
    /// let filter = RegexFilter::builder().preset(Preset::Pii).build().unwrap();
    /// assert_eq!(filter.apply("call +1 415 555 0100").unwrap(), "call [PHONE]");
    /// ```
    pub fn apply(&self, text: &str) -> Result<String, ProcessorError> {
        let mut flags = Flags::default();
        let out = self.inner.filter_text(text, &mut flags, Where::Input)?;
        match self.inner.warning(&flags, Where::Input) {
            Some(warning) => Err(warning),
            None => Ok(out.unwrap_or_else(|| text.to_owned())),
        }
    }
}

/// Where one of a filter's rules matched a text ([`RegexFilter::find`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleMatch<'f> {
    /// The rule's name.
    pub rule: &'f str,
    /// Where the match starts in the text, in bytes.
    pub start: usize,
    /// Where it ends, in bytes.
    pub end: usize,
}

impl RegexFilter {
    /// The matches of the filter's rules in `text`, a complete text, as the filter handles
    /// them, whatever the rules' strategies: left to right, none overlapping another (a match
    /// found, the scan goes on after it), the rules' checks applied, and where two match at one
    /// place, the one added first.
    ///
    /// ```
    /// use processors::builtins::regex_filter::{Preset, RegexFilter};
    /// let filter = RegexFilter::builder().preset(Preset::Pii).build().unwrap();
    /// let text = "SSN 536-22-1847, mail jo@example.com";
    /// let found: Vec<(&str, &str)> = filter.find(text).iter().map(|m| (m.rule, &text[m.start..m.end])).collect();
    /// assert_eq!(found, [("ssn", "536-22-1847"), ("email", "jo@example.com")]);
    /// ```
    pub fn find(&self, text: &str) -> Vec<RuleMatch<'_>> {
        let mut out = Vec::new();
        let _ = self.inner.engine.scan(text, 0, None, |found| {
            out.push(RuleMatch {
                rule: &self.inner.rules[found.rule].name,
                start: found.start,
                end: found.end,
            });
            Ok::<(), ()>(())
        });
        out
    }
}

impl fmt::Debug for RegexFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegexFilter")
            .field("rules", &self.rule_names().collect::<Vec<_>>())
            .field("sites", &self.inner.sites)
            .field("max_hold", &self.inner.max_hold)
            .finish()
    }
}

#[processor(crate = processors_runtime, id = "regex-filter")]
impl RegexFilter {
    /// Filters the text of the new input messages, editing them in the list (so that a
    /// warning does not undo a redaction).
    fn process_input(&self, list: &mut MessageList) -> Result<(), ProcessorError> {
        if !self.inner.sites.input() {
            return Ok(());
        }
        let mut flags = Flags::default();
        let mut changed = Vec::new();
        for m in list.input() {
            if let Some(m) = self.inner.filter_message(m, &mut flags, Where::Input)? {
                changed.push(m);
            }
        }
        for m in changed {
            list.replace(m);
        }
        match self.inner.warning(&flags, Where::Input) {
            Some(warning) => Err(warning),
            None => Ok(()),
        }
    }

    /// Filters text and reasoning deltas, holding back what a match may still be in progress
    /// in; reports flagged matches with the next chunk that passes unchanged.
    fn process_output_stream(
        &self,
        chunk: &Chunk,
        state: &mut RegexFilterState,
    ) -> Result<StreamAction, ProcessorError> {
        if !self.inner.sites.stream() {
            return Ok(StreamAction::Pass);
        }
        let RegexFilterState {
            blocks,
            held,
            streamed,
            pending,
        } = state;
        let mut scan = StreamScan {
            f: &self.inner,
            held,
            streamed,
            pending: &mut *pending,
        };
        let action = blocks.on_chunk(&mut scan, chunk)?;
        if matches!(action, StreamAction::Pass)
            && let Some(warning) = self.inner.warning(pending, Where::Stream)
        {
            *pending = Flags::default();
            return Err(warning);
        }
        Ok(action)
    }

    /// Filters the answer's text and reasoning parts; reports flagged matches the stream did
    /// not report.
    fn process_output_result(
        &self,
        mut messages: Vec<Message>,
        state: &mut RegexFilterState,
    ) -> Result<OutputOutcome, ProcessorError> {
        let mut flags = Flags::default();
        let mut changed = false;
        if self.inner.sites.result() {
            for m in messages.iter_mut().filter(|m| m.role == Role::Assistant) {
                if let Some(new) = self.inner.filter_message(m, &mut flags, Where::Result)? {
                    *m = new;
                    changed = true;
                }
            }
            // What the stream flagged is in the answer too: report it once.
            flags.subtract(&state.streamed);
        }
        // What the stream flagged but could not report yet.
        let from_stream = std::mem::take(&mut state.pending);
        let warning = match flags.is_empty() {
            true => self.inner.warning(&from_stream, Where::Stream),
            false => {
                flags.merge(&from_stream);
                self.inner.warning(&flags, Where::Result)
            }
        };
        match (changed, warning) {
            (true, warning) => {
                // A hook returns a result or a warning; the redaction wins, the warning is
                // logged.
                if let Some(ProcessorError::Warning(w)) = warning {
                    let tw = w.into_tripwire(Self::ID);
                    tracing::warn!(processor = Self::ID, reason = %tw.reason, "processor warning");
                }
                Ok(OutputOutcome::Messages(messages))
            }
            (false, Some(warning)) => Err(warning),
            (false, None) => Ok(OutputOutcome::Unchanged),
        }
    }
}

/// The per-request state of a [`RegexFilter`]: the text the stream holds back, and what it
/// flagged.
#[derive(Default)]
pub struct RegexFilterState {
    blocks: Blocks,
    held: Held,
    /// Flagged matches the stream saw, by rule (the final answer has them too).
    streamed: Flags,
    /// Flagged matches the stream has not reported yet.
    pending: Flags,
}

impl fmt::Debug for RegexFilterState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The held text may be a piece of a secret: only its length is shown.
        f.debug_struct("RegexFilterState")
            .field("held_bytes", &(self.held.buf.len() - self.held.ctx))
            .finish_non_exhaustive()
    }
}

/// The text the stream holds back.
#[derive(Default)]
struct Held {
    /// The last character let go (look-behind for `\b`), then the held text.
    buf: String,
    /// The length of that character in bytes (0 at the start of a block).
    ctx: usize,
}

/// How often each rule's flagged matches were seen, by rule index.
#[derive(Debug, Default, Clone)]
struct Flags(Vec<u32>);

impl Flags {
    fn add(&mut self, rule: usize) {
        if self.0.len() <= rule {
            self.0.resize(rule + 1, 0);
        }
        self.0[rule] += 1;
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    fn subtract(&mut self, other: &Flags) {
        for (n, o) in self.0.iter_mut().zip(&other.0) {
            *n = n.saturating_sub(*o);
        }
    }

    fn merge(&mut self, other: &Flags) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (n, o) in self.0.iter_mut().zip(&other.0) {
            *n += o;
        }
    }
}

/// Which hook found a match.
#[derive(Debug, Clone, Copy)]
enum Where {
    Input,
    Stream,
    Result,
}

impl Where {
    /// What the text is, for a reason.
    fn what(self) -> &'static str {
        match self {
            Where::Input => "the input",
            Where::Stream | Where::Result => "the answer",
        }
    }

    /// The hook, for metadata.
    fn tag(self) -> &'static str {
        match self {
            Where::Input => "input",
            Where::Stream => "output-stream",
            Where::Result => "output-result",
        }
    }
}

impl Inner {
    /// The abort for a blocked match: the rule's name, never the text.
    fn block(&self, rule: &CompiledRule, at: Where) -> ProcessorError {
        Abort::new()
            .reason(format!(
                "{} contains text matching the `{}` rule",
                at.what(),
                rule.name
            ))
            .metadata(serde_json::json!({ "rule": rule.name, "where": at.tag() }))
            .into()
    }

    /// The warning for flagged matches, if any.
    fn warning(&self, flags: &Flags, at: Where) -> Option<ProcessorError> {
        if flags.is_empty() {
            return None;
        }
        let hits: Vec<(&str, u32)> = flags
            .0
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .filter_map(|(i, &n)| Some((self.rules.get(i)?.name.as_str(), n)))
            .collect();
        let names: Vec<String> = hits.iter().map(|(name, _)| format!("`{name}`")).collect();
        let counts: serde_json::Map<String, serde_json::Value> = hits
            .iter()
            .map(|&(name, n)| (name.to_owned(), n.into()))
            .collect();
        Some(
            Abort::new()
                .reason(format!(
                    "{} contains text matching {} {}",
                    at.what(),
                    if names.len() == 1 {
                        "the rule"
                    } else {
                        "the rules"
                    },
                    names.join(", ")
                ))
                .metadata(serde_json::json!({ "rules": counts, "where": at.tag() }))
                .warn(),
        )
    }

    /// Writes what a redacted match becomes.
    fn redact(&self, how: Redaction, rule: &CompiledRule, matched: &str, out: &mut String) {
        let what = Redacted {
            kind: &rule.name,
            label: &rule.label,
            placeholder: &rule.placeholder,
        };
        how.write(matched, what, &self.hash_key, out);
    }

    /// Complete text with its matches handled: `None` when nothing changes; flagged matches
    /// are counted in `flags`.
    fn filter_text(
        &self,
        text: &str,
        flags: &mut Flags,
        at: Where,
    ) -> Result<Option<String>, ProcessorError> {
        let mut out: Option<String> = None;
        let mut pos = 0;
        self.engine.scan(text, 0, None, |found| {
            let rule = &self.rules[found.rule];
            match rule.strategy {
                Strategy::Block => return Err(self.block(rule, at)),
                Strategy::Warn => flags.add(found.rule),
                Strategy::Redact(how) => {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(&text[pos..found.start]);
                    self.redact(how, rule, &text[found.start..found.end], o);
                    pos = found.end;
                }
            }
            Ok(())
        })?;
        Ok(out.map(|mut o| {
            o.push_str(&text[pos..]);
            o
        }))
    }

    /// A message with its text and reasoning parts filtered, when any changes.
    fn filter_message(
        &self,
        m: &Message,
        flags: &mut Flags,
        at: Where,
    ) -> Result<Option<Message>, ProcessorError> {
        let mut changed: Option<Message> = None;
        for (i, part) in m.content.parts.iter().enumerate() {
            let (Part::Text { text } | Part::Reasoning { text }) = part else {
                continue;
            };
            if let Some(new) = self.filter_text(text, flags, at)? {
                let msg = changed.get_or_insert_with(|| m.clone());
                if let Some(Part::Text { text } | Part::Reasoning { text }) =
                    msg.content.parts.get_mut(i)
                {
                    *text = new.into();
                }
            }
        }
        Ok(changed)
    }
}

/// The stream side of the filter, for one chunk.
struct StreamScan<'a> {
    f: &'a Inner,
    held: &'a mut Held,
    streamed: &'a mut Flags,
    pending: &'a mut Flags,
}

impl StreamScan<'_> {
    /// Scans the held text, writes what goes on now to `out` and returns where the text still
    /// held begins, and whether a match was redacted.
    fn run(&mut self, complete: bool, out: &mut String) -> Result<(usize, bool), ProcessorError> {
        let f = self.f;
        let (streamed, pending) = (&mut *self.streamed, &mut *self.pending);
        let Held { buf, ctx } = &mut *self.held;
        // The lazy DFA's cache is the engine's, lent for the scan: a stream that starts finds
        // the states earlier streams built.
        let mut lent = (!complete).then(|| f.engine.cache());
        let cache = lent.as_deref_mut();
        let (mut pos, mut redacted) = (*ctx, false);
        let hold = f.engine.scan(buf, *ctx, cache, |found| {
            let rule = &f.rules[found.rule];
            match rule.strategy {
                Strategy::Block => return Err(f.block(rule, Where::Stream)),
                Strategy::Warn => {
                    streamed.add(found.rule);
                    pending.add(found.rule);
                }
                Strategy::Redact(how) => {
                    out.push_str(&buf[pos..found.start]);
                    f.redact(how, rule, &buf[found.start..found.end], out);
                    pos = found.end;
                    redacted = true;
                }
            }
            Ok(())
        })?;
        out.push_str(&buf[pos..hold]);
        Ok((hold, redacted))
    }

    /// Keeps the text from `hold` on, after the character before it (look-behind).
    fn keep_from(&mut self, hold: usize) {
        let Held { buf, ctx } = &mut *self.held;
        let cut = buf[..hold]
            .char_indices()
            .next_back()
            .map_or(hold, |(i, _)| i);
        buf.drain(..cut);
        *ctx = hold - cut;
    }
}

impl Scan for StreamScan<'_> {
    fn feed(&mut self, text: &str, out: &mut String) -> Result<Fed, ProcessorError> {
        let was_holding = self.held.buf.len() > self.held.ctx;
        self.held.buf.push_str(text);
        // Past max_hold, stop waiting: scan what is held as complete text.
        let complete = self.held.buf.len() - self.held.ctx > self.f.max_hold;
        let (hold, redacted) = self.run(complete, out)?;
        let whole = !was_holding && !redacted && hold == self.held.buf.len();
        self.keep_from(hold);
        Ok(if whole { Fed::Unchanged } else { Fed::Emit })
    }

    fn finish(&mut self, out: &mut String) -> Result<(), ProcessorError> {
        if self.held.buf.len() > self.held.ctx {
            self.run(true, out)?;
        }
        self.held.buf.clear();
        self.held.ctx = 0;
        Ok(())
    }
}
