//! Tools the model can call between steps.

use crate::BoxError;
use crate::chunk::DataWriter;
use crate::context::RequestContext;
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
    /// Emits `data-*` chunks into the agent's stream; they stream right after the tool
    /// returns, before its result, and non-transient ones are saved with the tool's result.
    pub writer: DataWriter<'a>,
}

/// A tool: name, description, JSON schema of its arguments, and an async `execute`.
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
