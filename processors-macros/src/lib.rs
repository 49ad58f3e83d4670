//! Procedural macros of the processors framework.
