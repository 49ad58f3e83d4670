//! Built-in processors.

pub mod token_limiter;
pub mod tool_call_filter;

pub use token_limiter::TokenLimiter;
pub use tool_call_filter::ToolCallFilter;
