//! What `agent!` reads of a processor type while the program type-checks: its hooks and
//! static id ([`Known`]), and whether it asks for a retry as written ([`Retries`]). The
//! processor types of the runtime implement them here; the macros reach them through
//! `__private`.

use super::Hooks;

/// A processor type whose hooks and static id `agent!` can read while the program
/// type-checks: every type `#[processor]` writes, the runtime's own processors, and pointers
/// and wrappers of such types. It repeats [`Processor::HOOKS`](super::Processor::HOOKS) and
/// [`Processor::STATIC_ID`](super::Processor::STATIC_ID)
/// in constants of its own, which never depend on where-clauses of the code `agent!` is in
/// (a function's `where Filter<T>: OutputProcessor` would hide the impl's `Processor`
/// constants from a check made while type-checking it). A type parameter is not known (its
/// bounds say nothing of its hooks), so an `agent!` inside a generic function checks its
/// processors when the function is instantiated (by `cargo build`, not `cargo check`),
/// through [`Probe`](crate::__private::Probe).
pub trait Known {
    /// [`Processor::HOOKS`](super::Processor::HOOKS), or for a workflow's steps the union of theirs.
    const HOOKS: Hooks;
    /// [`Processor::STATIC_ID`](super::Processor::STATIC_ID).
    const STATIC_ID: Option<&'static str>;
}

/// Whether a processor type asks for a retry as written: `#[processor]` implements it, with
/// [`AsksForRetry`], for a type with a step or tool-call hook that calls `.retry(true)`.
/// `agent!` warns when such a processor is in an agent with no `max_processor_retries`.
pub trait Retries {
    /// [`AsksForRetry`] or [`NoRetryAsked`].
    type Asks;
}

/// A processor that asks for a retry as written.
pub struct AsksForRetry;

/// A processor not known to ask for a retry.
pub struct NoRetryAsked;
