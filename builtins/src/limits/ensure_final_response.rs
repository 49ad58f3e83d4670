//! [`EnsureFinalResponse`]: on the last step a run may take, forbids tool calls and tells the
//! model to answer, so that a run never ends on a tool call with nothing to show.
//!
//! A run stops after `max_steps` model calls (`Agent::builder().max_steps(n)`, `max_steps: n`
//! in `agent!`, or `GenerateOptions::max_steps` per call; 5 by default, see
//! [`DEFAULT_MAX_STEPS`]). When the last of them asks for tools, the run ends with finish reason
//! `tool-calls` and no answer. Processors do not see the limit, so this one is given it: give
//! it the same number as the agent (and a per-call limit, a processor list of its own).
//!
//! On the last allowed step (and any after it, if the limit given is lower than the agent's),
//! it sets the step's tool choice to [`ToolChoice::None`], optionally offers no tools at all
//! ([`hide_tools`](EnsureFinalResponseBuilder::hide_tools), for models that ignore the tool
//! choice), and adds a system message for that step only. Steps are counted as the runner
//! counts them against the limit: rejected attempts and provider-error retries do not count.
//! A step that offers no tools is left alone.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::ensure_final_response::EnsureFinalResponse;
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! // A model that calls tools for as long as it may.
//! let model = ScriptedModel::responder(|request, i| match request.tool_choice {
//!     ToolChoice::None => Turn::text("Here is what I found."),
//!     _ => Turn::empty().tool_call(format!("c{i}"), "search", json!({ "page": i })),
//! });
//! let search = tool("search", "Searches.", json!({ "type": "object" }), |_| async {
//!     Ok(json!("more results"))
//! });
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .tool(search)
//!     .max_steps(3)
//!     .input(EnsureFinalResponse::new(3)?)
//!     .build()?;
//! let result = agent.generate("research this").await?;
//! assert_eq!(result.text, "Here is what I found.");
//! assert_eq!(result.finish_reason, FinishReason::Stop);
//! assert_eq!(model.calls(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! [`DEFAULT_MAX_STEPS`]: processors_runtime::agent::DEFAULT_MAX_STEPS
//! [`ToolChoice::None`]: processors_runtime::model::ToolChoice::None

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::agent::StepResult;
use processors_runtime::chunk::FinishReason;
use processors_runtime::message::{Message, MessageList};
use processors_runtime::model::ToolChoice;
use processors_runtime::processor::{StepConfig, StepOverrides};

/// Makes the last allowed step answer instead of calling tools; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct EnsureFinalResponse {
    max_steps: u32,
    message: Option<String>,
    hide_tools: bool,
}

/// Builds an [`EnsureFinalResponse`]; see [`EnsureFinalResponse::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct EnsureFinalResponseBuilder {
    max_steps: u32,
    message: Option<String>,
    hide_tools: bool,
}

impl EnsureFinalResponseBuilder {
    /// The system message of the last step (by default, one that names the step and tells
    /// the model to answer without tools).
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Also offers no tools on the last step, for models that call tools whatever the tool
    /// choice says (off by default).
    pub fn hide_tools(mut self, hide: bool) -> Self {
        self.hide_tools = hide;
        self
    }

    /// Checks the configuration.
    pub fn build(self) -> Result<EnsureFinalResponse, ConfigError> {
        if self.max_steps == 0 {
            return Err(ConfigError::Zero {
                option: "max_steps",
                why: "a run needs at least one step; give the agent's step limit",
            });
        }
        if self.message.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(ConfigError::Empty {
                what: "the final-step message",
                why: "leave it unset for the default one",
            });
        }
        Ok(EnsureFinalResponse {
            max_steps: self.max_steps,
            message: self.message,
            hide_tools: self.hide_tools,
        })
    }
}

impl EnsureFinalResponse {
    /// For a run limited to `max_steps` steps, with the default message.
    pub fn new(max_steps: u32) -> Result<Self, ConfigError> {
        Self::builder(max_steps).build()
    }

    /// Starts configuring it for a run limited to `max_steps` steps.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::ensure_final_response::*;
    /// let last = EnsureFinalResponse::builder(8)
    ///     .message("Stop researching and write the report now.")
    ///     .hide_tools(true)
    ///     .build()
    ///     .unwrap();
    /// let error = EnsureFinalResponse::new(0).unwrap_err();
    /// assert!(matches!(error, ConfigError::Zero { option: "max_steps", .. }));
    /// ```
    pub fn builder(max_steps: u32) -> EnsureFinalResponseBuilder {
        EnsureFinalResponseBuilder {
            max_steps,
            message: None,
            hide_tools: false,
        }
    }

    fn message(&self, step: usize) -> String {
        match &self.message {
            Some(m) => m.clone(),
            None => format!(
                "This is your final step (step {step} of {}). Do not call any more tools: answer the user now, completely, with what you have found.",
                self.max_steps
            ),
        }
    }
}

#[processor(crate = processors_runtime, id = "ensure-final-response")]
impl EnsureFinalResponse {
    /// Before each step: on the last allowed one, no tools and a system message.
    fn process_input_step(
        &self,
        steps: &[StepResult],
        config: &StepConfig,
        list: &mut MessageList,
    ) -> StepOverrides {
        // Steps count against the limit as the runner counts them: retries do not.
        let taken = steps
            .iter()
            .filter(|s| s.finish_reason != FinishReason::Retry)
            .count();
        let offers_tools =
            !config.tools.is_empty() && config.active_tools.as_ref().is_none_or(|a| !a.is_empty());
        if taken + 1 < self.max_steps as usize || !offers_tools {
            return StepOverrides::new();
        }
        list.add_system(Message::system(self.message(taken + 1)), None);
        let overrides = StepOverrides::new().tool_choice(ToolChoice::None);
        match self.hide_tools {
            true => overrides.active_tools(Vec::<String>::new()),
            false => overrides,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configurations_are_refused() {
        assert!(matches!(
            EnsureFinalResponse::new(0).unwrap_err(),
            ConfigError::Zero {
                option: "max_steps",
                ..
            }
        ));
        assert!(matches!(
            EnsureFinalResponse::builder(3)
                .message("  ")
                .build()
                .unwrap_err(),
            ConfigError::Empty {
                what: "the final-step message",
                ..
            }
        ));
    }

    #[test]
    fn the_default_message_names_the_step() {
        let last = EnsureFinalResponse::new(4).unwrap();
        assert!(
            last.message(4)
                .starts_with("This is your final step (step 4 of 4).")
        );
        let custom = EnsureFinalResponse::builder(4)
            .message("Answer.")
            .build()
            .unwrap();
        assert_eq!(custom.message(4), "Answer.");
    }
}
