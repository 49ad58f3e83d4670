//! Built-in processors: guards, transforms and context modifiers users reach for first.
//!
//! Each is an ordinary processor (written with `#[processor]` where it fits), so it can be
//! listed in `agent!`, which checks its placement at compile time, or added to lists built at
//! run time.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod at_file;
pub mod environment;
pub mod history_window;
pub mod system_prompt;

pub use at_file::{AtFileExpansion, OnRefusal};
pub use environment::EnvironmentContext;
pub use history_window::HistoryWindow;
pub use system_prompt::SystemPromptInjector;
