//! [`WorkingMemory`]: a scratchpad the model keeps about a user (or a thread) across runs,
//! and updates through a tool.
//!
//! Before each model call (`process_input_step`) it:
//!
//! - reads the working memory of the request's resource (or thread, with
//!   [`WorkingMemoryScope::Thread`]) from the [`MemoryStore`], and adds it to the system
//!   messages under the tag [`WORKING_MEMORY_TAG`] (replacing the previous step's), with a
//!   [template](WorkingMemory::template) to fill in while it is empty;
//! - offers the tool [`update_working_memory`](UPDATE_WORKING_MEMORY) `{ "memory": "…" }`,
//!   whose call replaces the stored text. The next step of the run, and every later run of
//!   the same resource, sees the new text.
//!
//! The resource and thread come from the request context
//! ([`RequestContext::with_thread`](processors_runtime::RequestContext::with_thread)); without
//! them the processor adds nothing and offers no tool. A resource's key never names another's,
//! so no tenant ever reads or writes another's working memory.
//!
//! # Example
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::working_memory::WorkingMemory;
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! let store = InMemoryStore::new();
//! let model = ScriptedModel::new([
//!     Turn::empty().tool_call("c1", "update_working_memory", json!({ "memory": "- name: Ada" })),
//!     Turn::text("Nice to meet you, Ada."),
//!     Turn::text("You are Ada."),
//! ]);
//! let agent = Agent::builder()
//!     .model(model.clone())
//!     .input(WorkingMemory::new(store.clone()))
//!     .build()?;
//! let ada = || GenerateOptions::new().request_context(RequestContext::new().with_thread("t-1", "ada"));
//! agent.generate_with("I am Ada.", ada()).await?;
//! // A later run, in another thread of Ada's, has the memory in its system messages.
//! let later = GenerateOptions::new().request_context(RequestContext::new().with_thread("t-2", "ada"));
//! agent.generate_with("Who am I?", later).await?;
//! let system = &model.requests()[2].prompt[0];
//! assert_eq!(system.role, Role::System);
//! assert!(system.text().contains("- name: Ada"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use futures::future::BoxFuture;
use processors_macros::processor;
use processors_runtime::BoxError;
use processors_runtime::context::RequestContext;
use processors_runtime::memory::{MemoryStore, WorkingMemoryScope, working_memory_key};
use processors_runtime::message::{Message, MessageList};
use processors_runtime::processor::{ProcessorError, StepConfig, StepOverrides};
use processors_runtime::tool::{Tool, ToolContext};
use serde_json::{Value, json};
use std::sync::Arc;

/// The name of the tool that replaces the working memory.
pub const UPDATE_WORKING_MEMORY: &str = "update_working_memory";

/// The tag of the system message that carries the working memory.
pub const WORKING_MEMORY_TAG: &str = "working-memory";

/// Keeps a working memory per resource (or per thread) and lets the model update it; see
/// the [module docs](self).
#[derive(Clone)]
pub struct WorkingMemory {
    store: Arc<dyn MemoryStore>,
    scope: WorkingMemoryScope,
    template: Option<Arc<str>>,
    tool: Arc<dyn Tool>,
}

impl std::fmt::Debug for WorkingMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkingMemory")
            .field("scope", &self.scope)
            .field("template", &self.template)
            .finish()
    }
}

impl WorkingMemory {
    /// Working memory per resource, kept in `store` (usually the store of the agent's
    /// [`Memory`](processors_runtime::memory::Memory)).
    pub fn new(store: impl MemoryStore) -> Self {
        Self::shared(Arc::new(store))
    }

    /// Working memory per resource, kept in a shared store (such as
    /// [`Memory::store`](processors_runtime::memory::Memory::store)).
    pub fn shared(store: Arc<dyn MemoryStore>) -> Self {
        let scope = WorkingMemoryScope::Resource;
        WorkingMemory {
            tool: update_tool(&store, scope),
            store,
            scope,
            template: None,
        }
    }

    /// Keeps one working memory per resource (the default, shared by its threads) or one
    /// per thread.
    pub fn scope(mut self, scope: WorkingMemoryScope) -> Self {
        self.scope = scope;
        self.tool = update_tool(&self.store, scope);
        self
    }

    /// A template (markdown, say) the model fills in: shown while the working memory is
    /// empty, and given as the shape to keep.
    pub fn template(mut self, template: impl Into<String>) -> Self {
        self.template = Some(template.into().into());
        self
    }

    /// The system message for a working memory (`None`: nothing kept yet).
    fn system_message(&self, memory: Option<&str>) -> Message {
        let mut text = format!(
            "You have a working memory: notes about {} that you keep across conversations. \
             When you learn something worth keeping, or something in it changes, call \
             `{UPDATE_WORKING_MEMORY}` with the whole memory rewritten; it replaces what is \
             kept. Do not mention the memory to the user.\n",
            match self.scope {
                WorkingMemoryScope::Resource => "the user",
                WorkingMemoryScope::Thread => "this conversation",
            }
        );
        match (memory.filter(|m| !m.trim().is_empty()), &self.template) {
            (Some(memory), _) => {
                text.push_str(&format!("<working_memory>\n{memory}\n</working_memory>"));
            }
            (None, Some(template)) => text.push_str(&format!(
                "Nothing is kept yet. Keep it in this shape, filling in what you learn:\n\
                 <working_memory_template>\n{template}\n</working_memory_template>"
            )),
            (None, None) => text.push_str("Nothing is kept yet."),
        }
        Message::system(text)
    }
}

/// The key of the request's working memory, when the request names a thread and resource.
fn scope_key(scope: WorkingMemoryScope, cx: &RequestContext) -> Option<String> {
    Some(working_memory_key(
        scope,
        cx.resource_id()?,
        cx.thread_id()?,
    ))
}

/// `update_working_memory`: replaces the request's working memory.
struct UpdateTool {
    store: Arc<dyn MemoryStore>,
    scope: WorkingMemoryScope,
    parameters: Value,
}

fn update_tool(store: &Arc<dyn MemoryStore>, scope: WorkingMemoryScope) -> Arc<dyn Tool> {
    Arc::new(UpdateTool {
        store: store.clone(),
        scope,
        parameters: json!({
            "type": "object",
            "properties": {
                "memory": {
                    "type": "string",
                    "description": "The whole working memory, rewritten; it replaces the kept one."
                }
            },
            "required": ["memory"],
        }),
    })
}

impl Tool for UpdateTool {
    fn name(&self) -> &str {
        UPDATE_WORKING_MEMORY
    }

    fn description(&self) -> &str {
        "Replaces your working memory with the text given: pass the whole memory, updated."
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        cx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        let key = scope_key(self.scope, cx.request_context);
        Box::pin(async move {
            let Some(memory) = args["memory"].as_str() else {
                return Err("give `memory`: the whole working memory, as a string".into());
            };
            let Some(key) = key else {
                return Err("this conversation has no memory: nothing can be kept".into());
            };
            self.store
                .set_working_memory(&key, memory.to_owned())
                .await?;
            Ok(json!({ "updated": true }))
        })
    }
}

#[processor(crate = processors_runtime, id = "working-memory")]
impl WorkingMemory {
    /// Before each call: the working memory in the system messages, and the tool offered.
    async fn process_input_step(
        &self,
        config: &StepConfig,
        list: &mut MessageList,
        cx: &RequestContext,
    ) -> Result<StepOverrides, ProcessorError> {
        let Some(key) = scope_key(self.scope, cx) else {
            return Ok(StepOverrides::new());
        };
        let memory = self.store.get_working_memory(&key).await?;
        list.clear_tag(WORKING_MEMORY_TAG);
        list.add_system(
            self.system_message(memory.as_deref()),
            Some(WORKING_MEMORY_TAG),
        );
        if config
            .tools
            .iter()
            .any(|t| t.name() == UPDATE_WORKING_MEMORY)
        {
            return Ok(StepOverrides::new());
        }
        let mut tools = config.tools.clone();
        tools.push(self.tool.clone());
        let overrides = StepOverrides::new().tools(tools);
        Ok(match &config.active_tools {
            Some(active) => overrides.active_tools(
                active
                    .iter()
                    .cloned()
                    .chain([UPDATE_WORKING_MEMORY.to_owned()]),
            ),
            None => overrides,
        })
    }
}
