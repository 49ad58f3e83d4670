//! [`ToolInjection`]: tools offered on a step by the request's context or the step.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::context::RequestContext;
use processors_runtime::processor::extract::StepNumber;
use processors_runtime::processor::{StepConfig, StepOverrides};
use processors_runtime::tool::Tool;
use std::collections::HashSet;
use std::sync::Arc;

/// Says whether a tool is offered on a step.
type Condition = Arc<dyn Fn(&RequestContext, u32) -> bool + Send + Sync>;

/// Offers more tools on a step, chosen by the request's context (the user's plan, a feature
/// flag a caller set) or by the step: the reference's tool injection. An injected tool joins
/// the step's tools (and its active tools, when a processor before it chose some); a tool the
/// step already offers by that name is left as it is. What is offered is decided before each
/// step, so a tool can be offered from the second step on, or only on the first.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::tools::ToolInjection;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// #[derive(Clone)]
/// struct Plan(&'static str);
///
/// let export = tool("export", "Exports the report", json!({ "type": "object" }), |_| async {
///     Ok(json!("exported"))
/// });
/// let inject = ToolInjection::builder()
///     .when(export, |cx: &RequestContext, _step| cx.get::<Plan>().is_some_and(|p| p.0 == "pro"))
///     .build()?;
/// let model = ScriptedModel::new([Turn::text("ok"), Turn::text("ok")]);
/// let agent = Agent::builder().model(model.clone()).input(inject).build()?;
/// agent.generate("hi").await?;
/// let pro = RequestContext::new().with(Plan("pro"));
/// agent.generate_with("hi", GenerateOptions::new().request_context(pro)).await?;
/// let offered = |n: usize| model.requests()[n].tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
/// assert!(offered(0).is_empty());
/// assert_eq!(offered(1), ["export"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolInjection {
    tools: Vec<(Arc<dyn Tool>, Option<Condition>)>,
}

impl std::fmt::Debug for ToolInjection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolInjection")
            .field(
                "tools",
                &self.tools.iter().map(|(t, _)| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Builds a [`ToolInjection`]; see [`ToolInjection::builder`].
#[derive(Clone, Default)]
#[must_use]
pub struct ToolInjectionBuilder {
    tools: Vec<(Arc<dyn Tool>, Option<Condition>)>,
}

impl ToolInjection {
    /// Starts configuring, with no tool.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tools::ToolInjection;
    /// let err = ToolInjection::builder().build().unwrap_err();
    /// assert!(matches!(err, ConfigError::NothingToDo(_)));
    /// ```
    pub fn builder() -> ToolInjectionBuilder {
        ToolInjectionBuilder::default()
    }

    /// The step's settings with the tools to inject added, or nothing when none is added.
    fn inject(&self, config: &StepConfig, cx: &RequestContext, step: u32) -> StepOverrides {
        let offered: HashSet<&str> = config.tools.iter().map(|t| t.name()).collect();
        let added: Vec<Arc<dyn Tool>> = self
            .tools
            .iter()
            .filter(|(t, when)| {
                !offered.contains(t.name()) && when.as_ref().is_none_or(|f| f(cx, step))
            })
            .map(|(t, _)| Arc::clone(t))
            .collect();
        if added.is_empty() {
            return StepOverrides::new();
        }
        let mut overrides = StepOverrides::new();
        if let Some(active) = &config.active_tools {
            let mut active = active.clone();
            active.extend(added.iter().map(|t| t.name().to_owned()));
            overrides = overrides.active_tools(active);
        }
        let mut tools = config.tools.clone();
        tools.extend(added);
        overrides.tools(tools)
    }
}

impl ToolInjectionBuilder {
    /// Offers `tool` on every step.
    pub fn always(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push((tool, None));
        self
    }

    /// Offers `tool` on the steps where `when` holds, given the request's context and the
    /// step's number (from 0).
    pub fn when(
        mut self,
        tool: Arc<dyn Tool>,
        when: impl Fn(&RequestContext, u32) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.tools.push((tool, Some(Arc::new(when))));
        self
    }

    /// Checks the configuration: at least one tool, each name once.
    pub fn build(self) -> Result<ToolInjection, ConfigError> {
        if self.tools.is_empty() {
            return Err(ConfigError::NothingToDo("there is no tool to inject"));
        }
        let mut seen = HashSet::new();
        for (tool, _) in &self.tools {
            if !seen.insert(tool.name()) {
                return Err(ConfigError::Duplicate {
                    what: "tools",
                    name: tool.name().to_owned(),
                });
            }
        }
        Ok(ToolInjection { tools: self.tools })
    }
}

#[processor(crate = processors_runtime, id = "tool-injection")]
impl ToolInjection {
    fn process_input_step(
        &self,
        config: &StepConfig,
        cx: &RequestContext,
        step: StepNumber,
    ) -> StepOverrides {
        self.inject(config, cx, step.0)
    }
}
