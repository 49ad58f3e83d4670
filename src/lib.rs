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

#[cfg(feature = "otel")]
pub mod otel;

pub use processors_builtins as builtins;
pub use processors_providers as providers;
pub use processors_runtime::*;

mod macros_doc;

#[doc(inline)]
pub use macros_doc::{agent, processor};

/// The names most programs need: `use processors::prelude::*;`.
pub mod prelude {
    pub use crate::{agent, processor};
    /// `Memory::sqlite("agent.db")`.
    pub use processors_builtins::storage::SqliteMemory as _;
    pub use processors_runtime::model::ModelRequest;
    pub use processors_runtime::prelude::*;
    pub use processors_runtime::processor::extract::{
        Delivered, FromCache, RetryCount, RunUsage, StepNumber, SystemMessages,
    };
    pub use processors_runtime::processor::{DataWriter, StepConfig};
    /// A JSON value (`serde_json::Value`): what tools return, and what a `tool_result` hook
    /// reads and may replace. An alias rather than a re-export, so the variants' names
    /// (`String`, …) do not come along and make the compiler spell out `std::string::String`
    /// in its messages.
    pub type Value = serde_json::Value;
}

/// Paths used by the code the macros generate. Not a stable API.
#[doc(hidden)]
pub use processors_runtime::__private;
