//! Agents and processor lists loaded from TOML files, checked as `agent!` checks them at
//! compile time: a processor in a list it has no hook for, misplaced memory, two processors
//! with one id in a list, an unknown processor or option, a bad value. Every mistake of a
//! file is reported at once, each with its file, line and column and what to do.
//!
//! ```toml
//! name = "support"
//! instructions = "You are the support assistant of Acme."
//! model = "openai/gpt-4o-mini"          # its key from OPENAI_API_KEY, never from the file
//! memory = { store = "sqlite", path = "support.db" }
//! max_processor_retries = 2
//!
//! input = ["memory", "unicode-normalizer", { processor = "regex-filter", presets = ["secrets"] }]
//!
//! [[output]]
//! processor = "regex-filter"
//! presets = ["pii"]
//! strategy = "redact"
//!
//! [[output]]
//! processor = "memory"
//! ```
//!
//! Loaded through the prelude's [`FromConfig`] (`Agent::from_config("agent.toml")`), or a
//! [`Loader`] with a [`Registry`] of your own processors. The format, every built-in's
//! name and options, and the errors are listed in `docs/config.md`.
//!
//! ```
//! use processors_config::Loader;
//! let file = r#"
//! model = { scripted = ["Hello!"] }
//! input = ["unicode-normalizer"]
//! output = ["unicode-normalizer", { processor = "batch-parts", batch_sise = 4 }]
//! "#;
//! let error = Loader::new().agent_str("agent.toml", file).err().unwrap();
//! assert_eq!(
//!     error.to_string(),
//!     "agent.toml:4:11: `unicode-normalizer` is in `output` but has no output hook (its hooks: {\"process_input\"}); it belongs in `input`\n\
//!      agent.toml:4:62: `batch-parts` has no option `batch_sise` (did you mean `batch_size`?); its options: batch_size, max_chars, max_wait_ms, emit_on_non_text"
//! );
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod builtins;
mod error;
mod load;
mod memory;
mod model;
mod names;
mod registry;

pub use error::{Diagnostic, LoadError};
pub use load::{Lists, Loader};
pub use registry::Registry;

use processors_runtime::agent::Agent;
use std::path::Path;

/// `Agent::from_config(path)`: an agent from a TOML file, for a program that wrote
/// `use processors::prelude::*;`.
///
/// ```
/// use processors_config::FromConfig;
/// use processors_runtime::prelude::*;
/// let agent = Agent::from_config_str("model = { scripted = [\"Hello!\"] }\n")?;
/// # futures::executor::block_on(async {
/// assert_eq!(agent.generate("hi").await?.text, "Hello!");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait FromConfig: Sized {
    /// The agent of the file at `path`, with every built-in processor, keys read from the
    /// environment.
    fn from_config(path: impl AsRef<Path>) -> Result<Self, LoadError>;

    /// The agent of `text` (named `<string>` in errors).
    fn from_config_str(text: &str) -> Result<Self, LoadError>;

    /// The agent of the file at `path`, loaded by `loader` (your registry, your environment).
    fn from_config_with(path: impl AsRef<Path>, loader: &Loader) -> Result<Self, LoadError>;
}

impl FromConfig for Agent {
    fn from_config(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        Loader::new().agent(path)
    }

    fn from_config_str(text: &str) -> Result<Self, LoadError> {
        Loader::new().agent_str("<string>", text)
    }

    fn from_config_with(path: impl AsRef<Path>, loader: &Loader) -> Result<Self, LoadError> {
        loader.agent(path)
    }
}
