//! The error type hooks and tools return when they fail.

/// A boxed error, as hooks and tools return it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
