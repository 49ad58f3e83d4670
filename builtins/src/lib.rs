//! Built-in processors.

pub mod token_limiter;

pub use token_limiter::TokenLimiter;
