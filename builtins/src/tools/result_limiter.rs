//! [`ToolResultLimiter`]: what the model reads of a large tool result, capped.

use crate::config::ConfigError;
use crate::tokenizer::Tokenizer;
use processors_macros::processor;
use processors_runtime::message::ToolCall;
use processors_runtime::processor::ToolResultAction;
use processors_runtime::processor::extract::ModelOutput;
use serde_json::Value;
use std::num::NonZeroUsize;

/// Caps the tokens of what the model reads of each tool result: a longer result reaches the
/// model cut to its first `max_tokens` tokens, with a note saying it was cut and how long it
/// was, while the step, the run's result and the history keep it whole
/// ([`ToolResultAction::ForModel`]). A page of search results or a log file then costs the
/// prompt what the cap allows, not its whole length, at this step and at every later one.
///
/// A result that is a JSON string is cut as text; any other JSON value is cut as its JSON
/// text. A copy for the model that an earlier processor set is what is measured and cut.
/// Failed calls are cut too (a stack trace can be long). With
/// [`tools`](ToolResultLimiterBuilder::tools), only the named tools' results.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::tools::ToolResultLimiter;
/// use processors::builtins::tokenizer::Tokenizer;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let read = tool("read_log", "Reads the log", json!({ "type": "object" }), |_| async {
///     Ok(json!("error ".repeat(1_000)))
/// });
/// let limiter = ToolResultLimiter::builder(20).tokenizer(Tokenizer::Estimate).build()?;
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("c1", "read_log", json!({})),
///     Turn::text("The log repeats one error."),
/// ]);
/// let agent = Agent::builder().model(model.clone()).tool(read).output(limiter).build()?;
/// let result = agent.generate("What is in the log?").await?;
/// // The result is whole; the model read 20 tokens of it and a note.
/// assert_eq!(result.tool_results[0].result.as_str().unwrap().len(), 6_000);
/// let read = model.requests()[1].prompt.iter().find(|m| m.role == Role::Tool).unwrap().clone();
/// let Part::ToolResult(r) = &read.content.parts[0] else { unreachable!() };
/// let text = r.result.as_str().unwrap();
/// assert!(text.starts_with("error error"));
/// assert!(text.ends_with("[cut: the result has 1500 tokens; the first 20 are shown]"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ToolResultLimiter {
    max_tokens: NonZeroUsize,
    tokenizer: Tokenizer,
    tools: Option<Vec<String>>,
}

/// Builds a [`ToolResultLimiter`]; see [`ToolResultLimiter::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolResultLimiterBuilder {
    max_tokens: usize,
    tokenizer: Tokenizer,
    tools: Option<Vec<String>>,
}

impl ToolResultLimiter {
    /// Starts configuring a cap of `max_tokens` tokens per result, counted with
    /// [`Tokenizer::ByModel`] (`o200k_base`, as a tool's result does not say its model).
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tools::ToolResultLimiter;
    /// let err = ToolResultLimiter::builder(0).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::Zero { option: "max_tokens", .. }));
    /// ```
    pub fn builder(max_tokens: usize) -> ToolResultLimiterBuilder {
        ToolResultLimiterBuilder {
            max_tokens,
            tokenizer: Tokenizer::ByModel,
            tools: None,
        }
    }

    /// The copy the model reads of `text`, when it is over the cap.
    fn cut(&self, text: &str) -> Option<String> {
        let tokenizer = self.tokenizer.resolve(None);
        let max = self.max_tokens.get();
        let total = tokenizer.count(text);
        if total <= max {
            return None;
        }
        let kept = tokenizer.prefix(text, max);
        Some(format!(
            "{kept}\n[cut: the result has {total} tokens; the first {max} are shown]"
        ))
    }
}

impl ToolResultLimiterBuilder {
    /// Counts with this tokenizer.
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// Caps only the results of these tools.
    pub fn tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tools: I) -> Self {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Checks the configuration: a cap above 0, and tools named when a list is given.
    pub fn build(self) -> Result<ToolResultLimiter, ConfigError> {
        let max_tokens = NonZeroUsize::new(self.max_tokens).ok_or(ConfigError::Zero {
            option: "max_tokens",
            why: "the model would read nothing of any result; give the tokens it may read",
        })?;
        if self
            .tools
            .as_ref()
            .is_some_and(|t| t.is_empty() || t.iter().any(String::is_empty))
        {
            return Err(ConfigError::Empty {
                what: "the list of tools",
                why: "name the tools whose results to cap, or leave the list out for every tool",
            });
        }
        Ok(ToolResultLimiter {
            max_tokens,
            tokenizer: self.tokenizer,
            tools: self.tools,
        })
    }
}

#[processor(crate = processors_runtime, id = "tool-result-limiter")]
impl ToolResultLimiter {
    fn process_tool_result(
        &self,
        call: &ToolCall,
        result: &Value,
        copy: ModelOutput<'_>,
    ) -> ToolResultAction {
        let applies = self
            .tools
            .as_ref()
            .is_none_or(|t| t.contains(&call.tool_name));
        if !applies {
            return ToolResultAction::Keep;
        }
        let read = copy.0.unwrap_or(result);
        let cut = match read {
            Value::String(text) => self.cut(text),
            other => self.cut(&other.to_string()),
        };
        match cut {
            Some(text) => ToolResultAction::ForModel(Value::String(text)),
            None => ToolResultAction::Keep,
        }
    }
}
