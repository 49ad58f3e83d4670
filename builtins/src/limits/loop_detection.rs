//! [`LoopDetection`]: notices a model going round in circles (the same tool call with the same
//! arguments again and again, or the same answer step after step) and ends the run or steers
//! the model out of it.
//!
//! Two signs of a loop, each with its threshold:
//!
//! - a **tool call** repeated: the same tool with the same arguments (compared as JSON, key
//!   order aside) called [`tool_call_repeats`](LoopDetectionBuilder::tool_call_repeats) times
//!   in the run (3 by default);
//! - **answers** repeated: [`answer_repeats`](LoopDetectionBuilder::answer_repeats) steps in a
//!   row (3 by default) whose texts are the same once normalised (case, punctuation and spacing
//!   aside), or, with [`answer_similarity`](LoopDetectionBuilder::answer_similarity), at least
//!   that similar (the Dice coefficient of their word pairs).
//!
//! A loop is reported when the latest step continues it, so a model that moved on is not
//! flagged for what it did earlier. Steps rejected by a processor do not count.
//!
//! What happens then ([`LoopStrategy`]):
//!
//! - [`Abort`](LoopStrategy::Abort) ends the run with a trip wire whose reason names the loop
//!   and whose metadata holds its details (`kind`: `tool-call` or `answer`, `count`, and the
//!   tool and arguments);
//! - [`Steer`](LoopStrategy::Steer) adds a system message to the next model call telling the
//!   model it is repeating itself, and reports the loop to `on_violation` as a warning; a loop
//!   that goes on after [`max_steers`](LoopDetectionBuilder::max_steers) such messages (1 by
//!   default) ends the run.
//!
//! In the **output** list it checks each answer before its tools run, so with `Abort` the
//! repeated call never runs; its steering message lasts for the next step. In the **input**
//! list it checks the steps so far before each model call, and its steering message is part of
//! that call. Placed in both (one value, cloned), a loop is handled once.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::loop_detection::LoopDetection;
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! // A model that asks for the same page forever.
//! let model = ScriptedModel::cycle([
//!     Turn::empty().tool_call("c", "fetch", json!({ "url": "https://example.com" })),
//! ]);
//! let fetch = tool("fetch", "Fetches a page.", json!({ "type": "object" }), |_| async {
//!     Ok(json!("<html>…</html>"))
//! });
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .tool(fetch)
//!     .max_steps(10)
//!     .output(LoopDetection::new())
//!     .build()?;
//! let result = agent.generate("summarise example.com").await?;
//! let tripwire = result.tripwire.expect("the loop ended the run");
//! assert_eq!(tripwire.reason, "the model called `fetch` with the same arguments 3 times");
//! assert_eq!(model.calls(), 3);
//! assert_eq!(result.steps.iter().map(|s| s.tool_results.len()).sum::<usize>(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::agent::StepResult;
use processors_runtime::chunk::FinishReason;
use processors_runtime::message::{Message, MessageList, ToolCall};
use processors_runtime::processor::extract::StepNumber;
use processors_runtime::processor::{Abort, ProcessorError};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The tag of the steering message the output side adds for the next step.
const STEER_TAG: &str = "loop-detection";

/// What [`LoopDetection`] does about a loop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopStrategy {
    /// End the run with a trip wire.
    #[default]
    Abort,
    /// Tell the model it is looping, in a system message for the next call; end the run if it
    /// goes on.
    Steer,
}

/// Detects tool-call and answer loops; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct LoopDetection {
    tool_call_repeats: Option<usize>,
    answer_repeats: Option<usize>,
    similarity: Option<f64>,
    strategy: LoopStrategy,
    steering_message: Option<String>,
    max_steers: u32,
}

/// Builds a [`LoopDetection`]; see [`LoopDetection::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct LoopDetectionBuilder {
    inner: LoopDetection,
}

impl LoopDetectionBuilder {
    /// How many calls of one tool with the same arguments make a loop (3 by default).
    pub fn tool_call_repeats(mut self, n: usize) -> Self {
        self.inner.tool_call_repeats = Some(n);
        self
    }

    /// Does not look for repeated tool calls.
    pub fn ignore_tool_calls(mut self) -> Self {
        self.inner.tool_call_repeats = None;
        self
    }

    /// How many near-identical answers in a row make a loop (3 by default).
    pub fn answer_repeats(mut self, n: usize) -> Self {
        self.inner.answer_repeats = Some(n);
        self
    }

    /// Does not look for repeated answers.
    pub fn ignore_answers(mut self) -> Self {
        self.inner.answer_repeats = None;
        self
    }

    /// Answers at least this similar (0 to 1: the Dice coefficient of their word pairs, after
    /// normalising) count as the same; by default only equal normalised texts do.
    pub fn answer_similarity(mut self, threshold: f64) -> Self {
        self.inner.similarity = Some(threshold);
        self
    }

    /// What to do about a loop ([`LoopStrategy::Abort`] by default).
    pub fn strategy(mut self, strategy: LoopStrategy) -> Self {
        self.inner.strategy = strategy;
        self
    }

    /// The steering message (by default, one that names the loop and asks for another
    /// approach or an answer).
    pub fn steering_message(mut self, message: impl Into<String>) -> Self {
        self.inner.steering_message = Some(message.into());
        self
    }

    /// How many steering messages a run gets before a loop ends it (1 by default).
    pub fn max_steers(mut self, n: u32) -> Self {
        self.inner.max_steers = n;
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<LoopDetection, ConfigError> {
        let d = self.inner;
        if let Some(n @ 0..=1) = d.tool_call_repeats {
            return Err(ConfigError::OutOfRange {
                option: "tool_call_repeats",
                value: n.to_string(),
                expected: "a loop takes at least 2 repeats (1 would flag every tool call); to stop checking, use ignore_tool_calls()",
            });
        }
        if let Some(n @ 0..=1) = d.answer_repeats {
            return Err(ConfigError::OutOfRange {
                option: "answer_repeats",
                value: n.to_string(),
                expected: "a loop takes at least 2 repeats (1 would flag every answer); to stop checking, use ignore_answers()",
            });
        }
        if let Some(t) = d.similarity
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(ConfigError::OutOfRange {
                option: "answer_similarity",
                value: t.to_string(),
                expected: "give a number above 0 and at most 1 (1: the same words)",
            });
        }
        if d.tool_call_repeats.is_none() && d.answer_repeats.is_none() {
            return Err(ConfigError::NothingToDo(
                "both checks are off (tool calls and answers)",
            ));
        }
        if d.steering_message
            .as_deref()
            .is_some_and(|m| m.trim().is_empty())
        {
            return Err(ConfigError::Empty {
                what: "the steering message",
                why: "leave it unset for the default one",
            });
        }
        if d.max_steers == 0 {
            return Err(ConfigError::Zero {
                option: "max_steers",
                why: "the first loop would end the run; use LoopStrategy::Abort for that",
            });
        }
        Ok(d)
    }
}

impl Default for LoopDetection {
    fn default() -> Self {
        LoopDetection {
            tool_call_repeats: Some(3),
            answer_repeats: Some(3),
            similarity: None,
            strategy: LoopStrategy::Abort,
            steering_message: None,
            max_steers: 1,
        }
    }
}

/// The per-request state of a [`LoopDetection`].
#[derive(Debug, Default)]
pub struct LoopDetectionState {
    /// Steering messages sent so far.
    steers: u32,
    /// The step in which the last loop was found, so that it is handled once.
    flagged: Option<u32>,
}

/// A loop found.
struct Found {
    /// What the loop is, for the trip wire and `on_violation`.
    reason: String,
    /// The same, said to the model.
    told: String,
    metadata: Value,
}

/// One step as the detector sees it.
struct Seen<'a> {
    text: &'a str,
    calls: &'a [ToolCall],
}

impl LoopDetection {
    /// Detects both kinds of loop, aborting by default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts configuring a detector.
    ///
    /// ```
    /// use processors::builtins::loop_detection::*;
    /// let detector = LoopDetection::builder()
    ///     .tool_call_repeats(4)
    ///     .answer_repeats(2)
    ///     .answer_similarity(0.9)
    ///     .strategy(LoopStrategy::Steer)
    ///     .max_steers(2)
    ///     .build()
    ///     .unwrap();
    /// let err = LoopDetection::builder().tool_call_repeats(1).build().unwrap_err();
    /// assert!(err.to_string().contains("ignore_tool_calls()"));
    /// ```
    pub fn builder() -> LoopDetectionBuilder {
        LoopDetectionBuilder {
            inner: LoopDetection::default(),
        }
    }

    /// The loop the latest step of `history` continues, if any.
    fn detect(&self, history: &[Seen<'_>]) -> Option<Found> {
        let latest = history.last()?;
        if let Some(limit) = self.tool_call_repeats {
            for call in latest.calls {
                let key = canonical(&call.args);
                let count = history
                    .iter()
                    .flat_map(|s| s.calls)
                    .filter(|c| c.tool_name == call.tool_name && canonical(&c.args) == key)
                    .count();
                if count >= limit {
                    return Some(Found {
                        reason: format!(
                            "the model called `{}` with the same arguments {count} times",
                            call.tool_name
                        ),
                        told: format!(
                            "You have called `{}` with the same arguments {count} times.",
                            call.tool_name
                        ),
                        metadata: json!({
                            "kind": "tool-call",
                            "tool": call.tool_name,
                            "args": call.args,
                            "count": count,
                        }),
                    });
                }
            }
        }
        let limit = self.answer_repeats?;
        let normalised: Vec<String> = history
            .iter()
            .rev()
            .take(limit)
            .map(|s| normalise(s.text))
            .collect();
        let repeated = normalised.len() == limit
            && !normalised[0].is_empty()
            && normalised
                .windows(2)
                .all(|w| self.same_answer(&w[0], &w[1]));
        repeated.then(|| Found {
            reason: format!("the model gave {limit} near-identical answers in a row"),
            told: format!("Your last {limit} answers were nearly the same."),
            metadata: json!({
                "kind": "answer",
                "count": limit,
                "similarity": self.similarity,
            }),
        })
    }

    fn same_answer(&self, a: &str, b: &str) -> bool {
        match self.similarity {
            None => a == b,
            Some(threshold) => !b.is_empty() && similarity(a, b) >= threshold,
        }
    }

    /// Ends the run, or steers: `add` puts the steering message where the hook's side needs
    /// it, and the loop is reported as a warning.
    fn respond(
        &self,
        found: Found,
        state: &mut LoopDetectionState,
        add: impl FnOnce(Message),
    ) -> Result<(), ProcessorError> {
        let abort = Abort::new();
        if self.strategy == LoopStrategy::Abort {
            return Err(abort.reason(found.reason).metadata(found.metadata).into());
        }
        if state.steers >= self.max_steers {
            let reason = format!(
                "{} (still looping after {} steering message{})",
                found.reason,
                state.steers,
                if state.steers == 1 { "" } else { "s" }
            );
            let mut metadata = found.metadata;
            metadata["steered"] = json!(state.steers);
            return Err(abort.reason(reason).metadata(metadata).into());
        }
        state.steers += 1;
        let message = match &self.steering_message {
            Some(m) => m.clone(),
            None => format!(
                "You are going round in circles. {} Do not repeat it: use what you already have, try a different approach, or answer the user now.",
                found.told
            ),
        };
        add(Message::system(message));
        Err(abort
            .reason(format!("{}; steering the model", found.reason))
            .metadata(found.metadata)
            .warn())
    }
}

/// The steps that count: accepted ones (a rejected attempt is recorded with reason `retry`).
fn accepted(steps: &[StepResult]) -> impl Iterator<Item = &StepResult> {
    steps
        .iter()
        .filter(|s| s.finish_reason != FinishReason::Retry && s.tripwire.is_none())
}

#[processor(crate = processors_runtime, id = "loop-detection")]
impl LoopDetection {
    /// After each answer, before its tools run: the steps so far and this one.
    fn process_output_step(
        &self,
        step: StepNumber,
        text: &str,
        tool_calls: &[ToolCall],
        steps: &[StepResult],
        list: &mut MessageList,
        state: &mut LoopDetectionState,
    ) -> Result<(), ProcessorError> {
        // The steering message was for the step that just answered.
        list.clear_tag(STEER_TAG);
        let mut history: Vec<Seen<'_>> = accepted(steps)
            .map(|s| Seen {
                text: &s.text,
                calls: &s.tool_calls,
            })
            .collect();
        history.push(Seen {
            text,
            calls: tool_calls,
        });
        let Some(found) = self.detect(&history) else {
            return Ok(());
        };
        state.flagged = Some(step.0);
        self.respond(found, state, |m| {
            list.add_system(m, Some(STEER_TAG));
        })
    }

    /// Before each model call: the steps so far.
    fn process_input_step(
        &self,
        steps: &[StepResult],
        list: &mut MessageList,
        state: &mut LoopDetectionState,
    ) -> Result<(), ProcessorError> {
        let history: Vec<Seen<'_>> = accepted(steps)
            .map(|s| Seen {
                text: &s.text,
                calls: &s.tool_calls,
            })
            .collect();
        let Some(latest) = accepted(steps).last() else {
            return Ok(());
        };
        // Found already by the output side, when the detector is in both lists.
        if state.flagged == Some(latest.step_number) {
            return Ok(());
        }
        let Some(found) = self.detect(&history) else {
            return Ok(());
        };
        state.flagged = Some(latest.step_number);
        self.respond(found, state, |m| list.add_system(m, None))
    }
}

/// JSON with object keys sorted, so that key order does not tell two calls apart.
fn canonical(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Lower-case words of letters and digits, separated by single spaces.
fn normalise(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The Dice coefficient of two normalised texts' word pairs (of their words, for texts of one
/// word): 1 for the same words in the same order, 0 for nothing in common.
fn similarity(a: &str, b: &str) -> f64 {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    fn grams<'a>(words: &'a [&'a str], n: usize) -> HashMap<&'a [&'a str], usize> {
        let mut counts = HashMap::new();
        for gram in words.windows(n) {
            *counts.entry(gram).or_insert(0) += 1;
        }
        counts
    }
    let n = if a.len() < 2 || b.len() < 2 { 1 } else { 2 };
    let (ga, gb) = (grams(&a, n), grams(&b, n));
    let total: usize = ga.values().sum::<usize>() + gb.values().sum::<usize>();
    if total == 0 {
        return 1.0;
    }
    let common: usize = ga
        .iter()
        .map(|(g, &c)| c.min(gb.get(g).copied().unwrap_or(0)))
        .sum();
    (2 * common) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            tool_call_id: "c".into(),
            tool_name: name.into(),
            args,
        }
    }

    fn seen<'a>(text: &'a str, calls: &'a [ToolCall]) -> Seen<'a> {
        Seen { text, calls }
    }

    #[test]
    fn the_same_call_is_the_same_whatever_its_key_order() {
        let a = [call(
            "search",
            json!({ "q": "x", "page": { "n": 1, "size": 10 } }),
        )];
        let b = [call(
            "search",
            json!({ "page": { "size": 10, "n": 1 }, "q": "x" }),
        )];
        let other = [call("search", json!({ "q": "y" }))];
        let d = LoopDetection::builder().ignore_answers().build().unwrap();
        assert!(d.detect(&[seen("", &a), seen("", &b)]).is_none());
        let found = d
            .detect(&[seen("", &a), seen("", &other), seen("", &a), seen("", &b)])
            .unwrap();
        assert_eq!(found.metadata["count"], 3);
        assert_eq!(found.metadata["tool"], "search");
        assert!(
            d.detect(&[seen("", &a), seen("", &b), seen("", &a), seen("", &other)])
                .is_none(),
            "a model that moved on is not flagged"
        );
    }

    #[test]
    fn answers_that_differ_only_in_case_punctuation_and_spacing_repeat() {
        let d = LoopDetection::builder()
            .ignore_tool_calls()
            .answer_repeats(2)
            .build()
            .unwrap();
        let found = d
            .detect(&[
                seen("Let me check that.", &[]),
                seen("let me   CHECK that", &[]),
            ])
            .unwrap();
        assert_eq!(
            found.reason,
            "the model gave 2 near-identical answers in a row"
        );
        assert!(
            d.detect(&[seen("Let me check.", &[]), seen("Here it is.", &[])])
                .is_none()
        );
        assert!(
            d.detect(&[seen("", &[]), seen("", &[])]).is_none(),
            "empty texts are no answers"
        );
        assert!(d.detect(&[seen("same", &[])]).is_none());
    }

    #[test]
    fn a_similarity_threshold_catches_near_repeats() {
        let a = "I could not find the file, I will search the docs folder again";
        let b = "I could not find the file, I will search the docs directory again";
        assert!(similarity(&normalise(a), &normalise(b)) > 0.8);
        assert!(similarity(&normalise(a), &normalise("The answer is 42.")) < 0.1);
        assert_eq!(similarity("same", "same"), 1.0);
        let strict = LoopDetection::builder()
            .ignore_tool_calls()
            .answer_repeats(2)
            .build()
            .unwrap();
        let loose = LoopDetection::builder()
            .ignore_tool_calls()
            .answer_repeats(2)
            .answer_similarity(0.8)
            .build()
            .unwrap();
        let history = [seen(a, &[]), seen(b, &[])];
        assert!(strict.detect(&history).is_none());
        assert!(loose.detect(&history).is_some());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let build = |b: LoopDetectionBuilder| b.build().unwrap_err();
        assert!(matches!(
            build(LoopDetection::builder().tool_call_repeats(1)),
            ConfigError::OutOfRange { option: "tool_call_repeats", ref value, .. } if value == "1"
        ));
        assert!(matches!(
            build(LoopDetection::builder().answer_repeats(0)),
            ConfigError::OutOfRange { option: "answer_repeats", ref value, .. } if value == "0"
        ));
        for t in [0.0, -0.5, 1.5, f64::NAN] {
            assert!(matches!(
                build(LoopDetection::builder().answer_similarity(t)),
                ConfigError::OutOfRange {
                    option: "answer_similarity",
                    ..
                }
            ));
        }
        assert!(matches!(
            build(
                LoopDetection::builder()
                    .ignore_answers()
                    .ignore_tool_calls()
            ),
            ConfigError::NothingToDo(_)
        ));
        assert!(matches!(
            build(LoopDetection::builder().steering_message(" ")),
            ConfigError::Empty {
                what: "the steering message",
                ..
            }
        ));
        assert!(matches!(
            build(LoopDetection::builder().max_steers(0)),
            ConfigError::Zero {
                option: "max_steers",
                ..
            }
        ));
    }
}
