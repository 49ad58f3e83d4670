//! Runtime of the processors framework: messages, chunks, the [`Processor`] trait and its
//! hooks, the runner, the agent loop, models, tools and memory.
//!
//! Most users depend on the `processors` facade crate and write `use processors::prelude::*;`.
// No unsafe code, except in `processor::future_slot` (reused memory for futures behind `dyn`)
// and `Outbox::stage` in `runner::stream::outbox` (a chunk made in place where it waits for
// the consumer).
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[doc(hidden)]
pub mod __private;
pub mod agent;
pub mod chunk;
pub mod context;
pub mod error;
pub mod memory;
pub mod message;
pub mod model;
pub mod processor;
pub(crate) mod runner;
mod shadow;
pub mod step;
pub mod testing;
pub mod tool;
pub mod trace;
pub mod tripwire;
pub mod workflow;

pub use agent::{Agent, AgentError, GenerateOptions, GenerateResult};
pub use chunk::{Chunk, ChunkKind, FinishReason, Usage};
pub use context::RequestContext;
pub use message::{Message, MessageList, Role, ToolCall, ToolResult};
pub use processor::{Abort, Hook, Hooks, Processor, ProcessorError};
pub use tripwire::TripWire;

pub use error::BoxError;

/// The names most programs need.
pub mod prelude {
    pub use crate::agent::{
        Agent, AgentError, AgentStream, AnswerText, AnyAgent, GenerateOptions, GenerateResult,
        HookError, PrepareStep, RunSummary, StepResult, TextChange, Violation, ViolationKind,
    };
    pub use crate::chunk::{Chunk, ChunkKind, FinishReason, StepRetry, Usage};
    pub use crate::context::RequestContext;
    pub use crate::memory::{InMemoryStore, Memory, MemoryStore};
    pub use crate::message::{
        Message, MessageList, MessageSource, Part, Role, Text, ToolCall, ToolResult,
    };
    pub use crate::model::{
        ApiError, LanguageModel, LanguageModelExt, ScriptedModel, ToolChoice, Turn,
    };
    pub use crate::processor::{Abort, ProcessorError};
    pub use crate::processor::{
        ApiErrorAction, ApiErrorArgs, DynPipeline, DynProcessor, ErrorProcessor, Hook, Hooks,
        InputArgs, InputOutcome, InputProcessor, InputStepArgs, LlmRequestAction, LlmRequestArgs,
        LlmResponse, LlmResponseArgs, OutputOutcome, OutputProcessor, OutputResultArgs,
        OutputStepArgs, OutputStreamArgs, Pipeline, Processor, Shadow, ShadowAction,
        ShadowDecision, StepOverrides, StreamAction, ToolCallAction, ToolCallArgs,
        ToolResultAction, ToolResultArgs, api_error_fn, boxed, input_fn, input_step_fn,
        llm_request_fn, llm_response_fn, output_result_fn, output_step_fn, output_stream_fn,
        shadow, tool_call_fn, tool_result_fn,
    };
    pub use crate::tool::{Tool, tool};
    pub use crate::tripwire::TripWire;
    pub use crate::workflow::{Workflow, WorkflowInput};
    /// JSON values written as JSON (`json!({ "type": "object" })`): tools' schemas and
    /// results, and the metadata of aborts.
    pub use serde_json::json;
}
