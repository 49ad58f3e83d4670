//! Built-in processors.

pub mod cost_guard;
pub mod ensure_final_response;
pub mod loop_detection;
pub mod token_limiter;
pub mod tool_call_filter;
pub mod tool_search;

pub use cost_guard::CostGuard;
pub use ensure_final_response::EnsureFinalResponse;
pub use loop_detection::LoopDetection;
pub use token_limiter::TokenLimiter;
pub use tool_call_filter::ToolCallFilter;
pub use tool_search::ToolSearch;
