//! # processors
//!
//! Compile-time validated processor pipelines for LLM agents.
//!
//! Processors plug into an agent's loop at fixed points (before the model sees the
//! conversation, before each model call, on every streamed chunk, after each step, after tool
//! results, at the end, and when the provider rejects a request) to normalise and guard input,
//! redact streamed output, retry bad answers with feedback, recover from provider errors and
//! persist memory.
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::prelude::*;
//!
//! struct Shout;
//! impl Processor for Shout {
//!     type State = ();
//!     const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
//!     fn id(&self) -> &str { "shout" }
//!     async fn process_output_stream(
//!         &self,
//!         args: OutputStreamArgs<'_, ()>,
//!     ) -> Result<StreamAction, ProcessorError> {
//!         Ok(args.chunk.clone().map_text(|t| t.to_uppercase()).into())
//!     }
//! }
//!
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::text("hello")]))
//!     .output_pipeline((Shout,))
//!     .build()
//!     .unwrap();
//! assert_eq!(agent.generate("hi").await.unwrap().text, "HELLO");
//! # });
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use processors_builtins as builtins;
pub use processors_providers as providers;
pub use processors_runtime::*;

mod macros_doc;

#[doc(inline)]
pub use macros_doc::{agent, processor};

/// The names most programs need: `use processors::prelude::*;`.
pub mod prelude {
    pub use crate::{agent, processor};
    pub use processors_runtime::model::ModelRequest;
    pub use processors_runtime::prelude::*;
    pub use processors_runtime::processor::extract::{
        Delivered, FromCache, RetryCount, StepNumber, SystemMessages,
    };
    pub use processors_runtime::processor::{DataWriter, StepConfig};
}

/// Paths used by the code the macros generate. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use processors_runtime::agent::Agent;
    pub use processors_runtime::memory::Memory;
    pub use processors_runtime::processor::ProcessorError;
    pub use processors_runtime::processor::extract::*;
    pub use processors_runtime::processor::{
        ApiErrorAction, ApiErrorArgs, ErrorProcessor, Hooks, InputArgs, InputOutcome,
        InputProcessor, InputStepArgs, LlmRequestAction, LlmRequestArgs, LlmResponseArgs,
        OutputOutcome, OutputProcessor, OutputResultArgs, OutputStepArgs, OutputStreamArgs,
        Processor, StepOverrides, StreamAction, ToolResultArgs,
    };
    pub use serde_json::Value;

    /// Checks, at the processor's expression, that it belongs in an `input` list.
    #[inline(always)]
    pub fn assert_input<P: InputProcessor>(p: P) -> P {
        p
    }

    /// Checks, at the processor's expression, that it belongs in an `output` list.
    #[inline(always)]
    pub fn assert_output<P: OutputProcessor>(p: P) -> P {
        p
    }

    /// Checks, at the processor's expression, that it belongs in an `error` list.
    #[inline(always)]
    pub fn assert_error<P: ErrorProcessor>(p: P) -> P {
        p
    }

    /// Whether two static ids are known and equal.
    pub const fn same_id(a: Option<&str>, b: Option<&str>) -> bool {
        let (Some(a), Some(b)) = (a, b) else {
            return false;
        };
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// The error of a hook that asked for one parameter twice.
    pub fn param_taken(id: &str, what: &str) -> ProcessorError {
        ProcessorError::msg(format!(
            "processor `{id}` asks for `{what}` more than once; its hook provides it once"
        ))
    }
}
