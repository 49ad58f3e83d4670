//! Tools the model can call between steps.

pub(crate) mod typed;

pub use typed::{IntoTool, ToolError, ToolOutput};

use crate::chunk::DataWriter;
use crate::context::RequestContext;
use crate::error::BoxError;
use crate::message::MessageList;
use crate::model::ToolSpec;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// What a tool's `execute` receives besides its arguments.
#[non_exhaustive]
pub struct ToolContext<'a> {
    /// The id of the call being answered.
    pub tool_call_id: &'a str,
    /// The request's context.
    pub request_context: &'a RequestContext,
    /// The run's messages, read-only: those remembered, the input and this run's responses so
    /// far (the answer that made this call among them), as the run's list holds them, not as a
    /// `process_llm_request` processor rewrote one call's prompt.
    pub message_list: &'a MessageList,
    /// Emits `data-*` chunks into the agent's stream; they stream right after the tool
    /// returns, before its result, and non-transient ones are saved with the tool's result.
    pub writer: DataWriter<'a>,
}

/// A tool: name, description, JSON schema of its arguments, and an async `execute`.
///
/// [`tool`] makes one from a closure; a type of your own implements the trait, and reads the
/// call's id, the request's context or a [`DataWriter`] from its [`ToolContext`]:
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::FutureExt;
/// use futures::future::{BoxFuture, ready};
/// use processors_runtime::BoxError;
/// use processors_runtime::prelude::*;
/// use processors_runtime::tool::ToolContext;
/// use serde_json::{Value, json};
/// use std::sync::Arc;
///
/// struct Add {
///     schema: Value,
/// }
///
/// impl Tool for Add {
///     fn name(&self) -> &str {
///         "add"
///     }
///     fn description(&self) -> &str {
///         "Adds two numbers"
///     }
///     fn parameters(&self) -> &Value {
///         &self.schema
///     }
///     fn execute<'a>(
///         &'a self,
///         args: Value,
///         _cx: ToolContext<'a>,
///     ) -> BoxFuture<'a, Result<Value, BoxError>> {
///         let sum = match (args["a"].as_f64(), args["b"].as_f64()) {
///             (Some(a), Some(b)) => Ok(json!(a + b)),
///             _ => Err(BoxError::from("`a` and `b` must be numbers")),
///         };
///         ready(sum).boxed()
///     }
/// }
///
/// let add = Add {
///     schema: json!({
///         "type": "object",
///         "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
///         "required": ["a", "b"],
///     }),
/// };
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("call-1", "add", json!({ "a": 2, "b": 3 })),
///     Turn::text("2 + 3 = 5"),
/// ]);
/// let agent = Agent::builder().model(model.clone()).tool(Arc::new(add)).build().unwrap();
/// let result = agent.generate("What is 2 + 3?").await.unwrap();
/// assert_eq!(result.tool_results[0].result, json!(5.0));
/// assert_eq!(result.text, "2 + 3 = 5");
/// assert_eq!(model.requests()[0].tools[0].name, "add");
/// # });
/// ```
pub trait Tool: Send + Sync + 'static {
    /// Its name, as the model calls it.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of its arguments.
    fn parameters(&self) -> &Value;
    /// Runs the tool.
    fn execute<'a>(
        &'a self,
        args: Value,
        cx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value, BoxError>>;

    /// The tool as the model sees it.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters().clone(),
        }
    }
}

/// A tool made of a closure; see [`tool`].
pub struct FnTool<F> {
    name: String,
    description: String,
    parameters: Value,
    f: F,
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, BoxError>> + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> &Value {
        &self.parameters
    }
    fn execute<'a>(
        &'a self,
        args: Value,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        (self.f)(args).boxed()
    }
}

/// A tool from a name, a description, a JSON schema and an async closure.
///
/// ```
/// use processors_runtime::tool::tool;
/// use serde_json::json;
/// let weather = tool(
///     "weather",
///     "Current weather for a city",
///     json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
///     |args| async move { Ok(json!({ "city": args["city"], "celsius": 21 })) },
/// );
/// assert_eq!(weather.name(), "weather");
/// ```
pub fn tool<F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: Value,
    f: F,
) -> Arc<dyn Tool>
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, BoxError>> + Send + 'static,
{
    Arc::new(FnTool {
        name: name.into(),
        description: description.into(),
        parameters,
        f,
    })
}
