//! Built-in processors: guards, limits, transforms and context modifiers users reach for
//! first.
//!
//! Each is an ordinary processor (written with `#[processor]` where it fits), so it can be
//! listed in `agent!`, which checks its placement at compile time, or added to lists built at
//! run time.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod at_file;
pub mod cost_guard;
pub mod ensure_final_response;
pub mod environment;
pub mod history_window;
pub mod loop_detection;
pub mod system_prompt;
pub mod token_limiter;
pub mod tool_call_filter;
pub mod tool_search;

pub use at_file::{AtFileExpansion, OnRefusal};
pub use cost_guard::CostGuard;
pub use ensure_final_response::EnsureFinalResponse;
pub use environment::EnvironmentContext;
pub use history_window::HistoryWindow;
pub use loop_detection::LoopDetection;
pub use system_prompt::SystemPromptInjector;
pub use token_limiter::TokenLimiter;
pub use tool_call_filter::ToolCallFilter;
pub use tool_search::ToolSearch;
