//! [`ToolCallFilter`]: leaves tool calls and their results out of what the model sees, to save
//! the tokens of verbose tool exchanges.
//!
//! It works on the prompt of each model call (`process_llm_request`): the message list, memory
//! and the response are untouched, so everything the tools did is still saved and returned.
//!
//! What it leaves out:
//!
//! - the tool calls and results of **earlier turns** (every message before the newest user
//!   message), of every tool or of the named ones ([`ToolCallFilterBuilder::tools`]);
//! - with [`filter_after_tool_steps(n)`](ToolCallFilterBuilder::filter_after_tool_steps), also
//!   those of the **current turn's** tool steps, except the `n` most recent: a long tool loop
//!   then shows the model only its latest rounds.
//!
//! A call is always left out together with its results. A message left with nothing a provider
//! sends (no text, file, tool call or tool result) is left out as well; text beside a call
//! stays. With [`preserve_model_output`](ToolCallFilterBuilder::preserve_model_output), a
//! filtered exchange leaves a compact account of its result, as text, in its place.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::tool_call_filter::ToolCallFilter;
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! let search = tool("search", "Searches the web.", json!({ "type": "object" }), |_| async {
//!     Ok(json!("a very long page of results"))
//! });
//! let model = ScriptedModel::new([
//!     Turn::empty().tool_call("c1", "search", json!({ "q": "rust" })),
//!     Turn::text("Rust is a language."),
//!     Turn::text("You asked about Rust."),
//! ]);
//! let store = InMemoryStore::new();
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .tool(search)
//!     .memory(Memory::new(store.clone()))
//!     .input(ToolCallFilter::all())
//!     .build()?;
//! let options = || {
//!     GenerateOptions::new().request_context(RequestContext::new().with_thread("t-1", "u-1"))
//! };
//! agent.generate_with("what is rust?", options()).await?;
//! agent.generate_with("what did I ask?", options()).await?;
//!
//! // The second turn's prompt has no trace of the first turn's search…
//! let prompt = &model.requests()[2].prompt;
//! assert!(prompt.iter().all(|m| m.role != Role::Tool && m.tool_calls().next().is_none()));
//! // …and memory kept it.
//! let saved = store.list_messages("t-1", None).await?;
//! assert_eq!(saved.iter().filter(|m| m.role == Role::Tool).count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::{Message, Part, Role, ToolResult};
use processors_runtime::model::ModelRequest;
use processors_runtime::processor::LlmRequestAction;
use std::collections::{HashMap, HashSet};

/// Leaves tool calls and results out of the prompt; see the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct ToolCallFilter {
    /// The tools to filter (`None`: every tool).
    tools: Option<HashSet<String>>,
    /// Keep this many of the current turn's most recent tool steps, filtering older ones.
    keep_recent: Option<usize>,
    /// The model-facing text of a filtered result, kept in place of the exchange.
    model_output: Option<ModelOutput>,
}

/// What a filtered tool result leaves in the prompt, if anything: see
/// [`ToolCallFilterBuilder::preserve_model_output`].
pub type ModelOutput = fn(&ToolResult) -> Option<String>;

/// Builds a [`ToolCallFilter`]; see [`ToolCallFilter::builder`].
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ToolCallFilterBuilder {
    tools: Option<Vec<String>>,
    keep_recent: Option<usize>,
    model_output: Option<ModelOutput>,
}

impl ToolCallFilterBuilder {
    /// Filters only the calls of these tools (every tool by default).
    pub fn tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Also filters the current turn's tool steps, keeping the `n` most recent (a tool step is
    /// a model answer with calls of the filtered tools).
    pub fn filter_after_tool_steps(mut self, n: usize) -> Self {
        self.keep_recent = Some(n);
        self
    }

    /// Keeps a compact, model-facing account of each filtered exchange whose result `output`
    /// gives a text for (as the reference keeps a tool's `toModelOutput`): the call and its
    /// raw arguments and result leave the prompt, and the assistant message that made the
    /// call says instead, as text, `` `name` returned: <text> ``. A result `output` gives
    /// nothing for is filtered whole, as without it.
    pub fn preserve_model_output(mut self, output: ModelOutput) -> Self {
        self.model_output = Some(output);
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<ToolCallFilter, ConfigError> {
        let tools = match self.tools {
            None => None,
            Some(names) if names.is_empty() => {
                return Err(ConfigError::Empty {
                    what: "the list of tools to filter",
                    why: "name the tools to filter, or use `ToolCallFilter::all()` to filter every tool",
                });
            }
            Some(names) if names.iter().any(String::is_empty) => {
                return Err(ConfigError::Empty {
                    what: "a tool name to filter",
                    why: "name each tool",
                });
            }
            Some(names) => Some(names.into_iter().collect()),
        };
        if self.keep_recent == Some(0) {
            return Err(ConfigError::Zero {
                option: "filter_after_tool_steps",
                why: "it would hide the results the model just asked for; keep at least 1 recent tool step",
            });
        }
        Ok(ToolCallFilter {
            tools,
            keep_recent: self.keep_recent,
            model_output: self.model_output,
        })
    }
}

impl ToolCallFilter {
    /// Filters the calls of every tool in earlier turns.
    pub fn all() -> Self {
        Self::default()
    }

    /// Starts configuring a filter.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tool_call_filter::ToolCallFilter;
    /// let filter = ToolCallFilter::builder()
    ///     .tools(["search", "fetch_page"])
    ///     .filter_after_tool_steps(2)
    ///     .build()
    ///     .unwrap();
    /// let none: [&str; 0] = [];
    /// let err = ToolCallFilter::builder().tools(none).build().unwrap_err();
    /// let tools = "the list of tools to filter";
    /// assert!(matches!(err, ConfigError::Empty { what, .. } if what == tools));
    /// ```
    pub fn builder() -> ToolCallFilterBuilder {
        ToolCallFilterBuilder::default()
    }

    fn filters(&self, tool_name: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.contains(tool_name))
    }

    /// The prompt without the filtered calls and results, or `None` when nothing is filtered.
    fn filter(&self, prompt: &[Message]) -> Option<Vec<Message>> {
        let turn = prompt
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        // Earlier turns: every call of a filtered tool, and results by name (their call may
        // have fallen out of the history window).
        let mut calls: HashSet<&str> = prompt[..turn]
            .iter()
            .flat_map(Message::tool_calls)
            .filter(|c| self.filters(&c.tool_name))
            .map(|c| c.tool_call_id.as_str())
            .collect();
        if let Some(keep) = self.keep_recent {
            let steps: Vec<&Message> = prompt[turn..]
                .iter()
                .filter(|m| m.tool_calls().any(|c| self.filters(&c.tool_name)))
                .collect();
            let older = steps.len().saturating_sub(keep);
            calls.extend(
                steps[..older]
                    .iter()
                    .flat_map(|m| m.tool_calls())
                    .filter(|c| self.filters(&c.tool_name))
                    .map(|c| c.tool_call_id.as_str()),
            );
        }
        let filtered = |i: usize, part: &Part| match part {
            Part::ToolCall(c) => calls.contains(c.tool_call_id.as_str()),
            Part::ToolResult(r) => {
                calls.contains(r.tool_call_id.as_str()) || (i < turn && self.filters(&r.tool_name))
            }
            _ => false,
        };
        let touched = prompt
            .iter()
            .enumerate()
            .any(|(i, m)| m.content.parts.iter().any(|p| filtered(i, p)));
        if !touched {
            return None;
        }
        // The model-facing accounts of filtered results, by call.
        let accounts: HashMap<&str, String> = match self.model_output {
            None => HashMap::new(),
            Some(output) => (prompt.iter().enumerate())
                .flat_map(|(i, m)| m.content.parts.iter().map(move |p| (i, p)))
                .filter(|(i, p)| filtered(*i, p))
                .filter_map(|(_, p)| match p {
                    Part::ToolResult(r) => Some((r.tool_call_id.as_str(), output(r)?)),
                    _ => None,
                })
                .collect(),
        };
        let mut out = Vec::with_capacity(prompt.len());
        for (i, m) in prompt.iter().enumerate() {
            if !m.content.parts.iter().any(|p| filtered(i, p)) {
                out.push(m.clone());
                continue;
            }
            let mut m = m.clone();
            let parts = std::mem::take(&mut m.content.parts);
            for part in parts {
                if !filtered(i, &part) {
                    m.content.parts.push(part);
                } else if let Part::ToolCall(c) = &part
                    && let Some(text) = accounts.get(c.tool_call_id.as_str())
                {
                    let text = format!("`{}` returned: {text}", c.tool_name);
                    m.content.parts.push(Part::Text { text: text.into() });
                }
            }
            if m.content.parts.iter().any(sent) {
                out.push(m);
            }
        }
        Some(out)
    }
}

/// Whether a provider sends this part (reasoning and data parts it does not).
fn sent(part: &Part) -> bool {
    matches!(
        part,
        Part::Text { .. } | Part::File { .. } | Part::ToolCall(_) | Part::ToolResult(_)
    )
}

#[processor(crate = processors_runtime, id = "tool-call-filter")]
impl ToolCallFilter {
    /// On each call's prompt: leaves the filtered calls and results out, for this call only.
    fn process_llm_request(&self, request: &ModelRequest) -> LlmRequestAction {
        match self.filter(&request.prompt) {
            Some(prompt) => LlmRequestAction::Prompt(prompt),
            None => LlmRequestAction::Continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use processors_runtime::message::{ToolCall, ToolResult};
    use serde_json::json;

    fn call(id: &str, tool: &str, text: Option<&str>) -> Message {
        let mut parts: Vec<Part> = text
            .map(|t| Part::Text { text: t.into() })
            .into_iter()
            .collect();
        parts.push(Part::ToolCall(ToolCall {
            tool_call_id: id.into(),
            tool_name: tool.into(),
            args: json!({}),
        }));
        Message::new(Role::Assistant, parts).with_id(format!("a-{id}"))
    }

    fn result(id: &str, tool: &str) -> Message {
        Message::new(
            Role::Tool,
            vec![Part::ToolResult(ToolResult {
                tool_call_id: id.into(),
                tool_name: tool.into(),
                result: json!("r"),
                is_error: false,
                model_output: None,
            })],
        )
        .with_id(format!("r-{id}"))
    }

    fn ids(prompt: &[Message]) -> Vec<&str> {
        prompt.iter().map(|m| m.id.as_str()).collect()
    }

    /// A system message, an earlier turn with two tool steps, then a turn with three.
    fn conversation() -> Vec<Message> {
        vec![
            Message::system("be brief").with_id("sys"),
            Message::user("first").with_id("u1"),
            call("1", "search", None),
            result("1", "search"),
            call("2", "weather", Some("checking")),
            result("2", "weather"),
            Message::assistant("done").with_id("a1"),
            Message::user("second").with_id("u2"),
            call("3", "search", None),
            result("3", "search"),
            call("4", "weather", None),
            result("4", "weather"),
            call("5", "search", None),
            result("5", "search"),
        ]
    }

    #[test]
    fn earlier_turns_lose_their_tool_exchanges_and_the_current_turn_keeps_them() {
        let out = ToolCallFilter::all().filter(&conversation()).unwrap();
        assert_eq!(
            ids(&out),
            [
                "sys", "u1", "a-2", "a1", "u2", "a-3", "r-3", "a-4", "r-4", "a-5", "r-5"
            ]
        );
        assert_eq!(
            out[2].content.parts,
            [Part::Text {
                text: "checking".into()
            }],
            "text beside a call stays"
        );
    }

    #[test]
    fn only_the_named_tools_are_filtered() {
        let filter = ToolCallFilter::builder()
            .tools(["weather"])
            .build()
            .unwrap();
        let out = filter.filter(&conversation()).unwrap();
        assert_eq!(
            ids(&out),
            [
                "sys", "u1", "a-1", "r-1", "a-2", "a1", "u2", "a-3", "r-3", "a-4", "r-4", "a-5",
                "r-5"
            ]
        );
        assert!(out[4].tool_calls().next().is_none());
    }

    #[test]
    fn after_n_tool_steps_only_the_most_recent_stay() {
        let filter = ToolCallFilter::builder()
            .filter_after_tool_steps(1)
            .build()
            .unwrap();
        let out = filter.filter(&conversation()).unwrap();
        assert_eq!(ids(&out), ["sys", "u1", "a-2", "a1", "u2", "a-5", "r-5"]);
        let named = ToolCallFilter::builder()
            .tools(["search"])
            .filter_after_tool_steps(1)
            .build()
            .unwrap();
        let out = named.filter(&conversation()).unwrap();
        assert_eq!(
            ids(&out),
            [
                "sys", "u1", "a-2", "r-2", "a1", "u2", "a-4", "r-4", "a-5", "r-5"
            ],
            "steps are counted among the named tools' calls"
        );
    }

    #[test]
    fn a_result_whose_call_fell_out_of_the_window_is_filtered_by_name() {
        let prompt = vec![
            result("0", "search"),
            Message::assistant("so").with_id("a0"),
            Message::user("q").with_id("u"),
        ];
        let out = ToolCallFilter::all().filter(&prompt).unwrap();
        assert_eq!(ids(&out), ["a0", "u"]);
    }

    #[test]
    fn a_prompt_without_filtered_calls_is_left_as_it_is() {
        let prompt = vec![Message::user("hi"), Message::assistant("hello")];
        assert!(ToolCallFilter::all().filter(&prompt).is_none());
        assert!(ToolCallFilter::all().filter(&[]).is_none());
        let current_turn_only = vec![Message::user("q"), call("1", "search", None)];
        assert!(ToolCallFilter::all().filter(&current_turn_only).is_none());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let empty: Vec<String> = Vec::new();
        assert!(matches!(
            ToolCallFilter::builder().tools(empty).build().unwrap_err(),
            ConfigError::Empty {
                what: "the list of tools to filter",
                ..
            }
        ));
        assert!(matches!(
            ToolCallFilter::builder()
                .tools(["search", ""])
                .build()
                .unwrap_err(),
            ConfigError::Empty {
                what: "a tool name to filter",
                ..
            }
        ));
        let zero = ToolCallFilter::builder()
            .filter_after_tool_steps(0)
            .build()
            .unwrap_err();
        assert!(matches!(
            zero,
            ConfigError::Zero {
                option: "filter_after_tool_steps",
                ..
            }
        ));
        assert!(zero.to_string().contains("at least 1"));
    }
}
