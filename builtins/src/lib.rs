//! Built-in processors.
