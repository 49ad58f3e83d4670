//! What a hook returns when it does not return its outcome: an abort (with the [`TripWire`]
//! it becomes), a warning, or a failure.

use crate::error::BoxError;
use crate::processor::Hook;
use crate::tripwire::TripWire;
use serde::Serialize;
use serde_json::Value;

/// An abort under construction; a hook returns it as `Err(abort.into())`.
///
/// ```
/// use processors_runtime::{Abort, ProcessorError};
/// let err: ProcessorError = Abort::new()
///     .reason("answer is too long")
///     .retry(true)
///     .metadata(serde_json::json!({ "limit": 200 }))
///     .into();
/// assert!(err.is_abort());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Abort {
    pub(crate) reason: Option<String>,
    pub(crate) retry: bool,
    pub(crate) metadata: Option<Value>,
    /// The processor that raised it, when it is not the one the runner called (a processor
    /// inside a workflow).
    pub(crate) raised_by: Option<String>,
}

impl Abort {
    /// An abort without reason; the run reports `Tripwire triggered by <processor id>`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the reason.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Asks for the step to be retried with the reason as feedback.
    pub fn retry(mut self, retry: bool) -> Self {
        self.retry = retry;
        self
    }

    /// Attaches metadata; a value that cannot be serialised is recorded as its error message.
    pub fn metadata(mut self, metadata: impl Serialize) -> Self {
        self.metadata = Some(
            serde_json::to_value(metadata)
                .unwrap_or_else(|e| serde_json::json!({ "metadataError": e.to_string() })),
        );
        self
    }

    /// Reports this as a warning instead: the data passes unchanged and `on_violation`
    /// callbacks see a [`ViolationKind::Warn`](crate::agent::ViolationKind::Warn).
    pub fn warn(self) -> ProcessorError {
        ProcessorError::Warning(self)
    }

    /// The trip wire this abort becomes when raised by `processor_id` (or by the processor
    /// inside it that raised it, for a workflow).
    pub fn into_tripwire(self, processor_id: &str) -> TripWire {
        let processor_id = self.raised_by.as_deref().unwrap_or(processor_id);
        TripWire {
            reason: self
                .reason
                .unwrap_or_else(|| format!("Tripwire triggered by {processor_id}")),
            retry: self.retry,
            metadata: self.metadata,
            processor_id: processor_id.to_owned(),
        }
    }
}

/// What a hook returns instead of a result: an abort, or an ordinary failure.
///
/// Any `std::error::Error` converts into a failure with `?`.
#[derive(Debug)]
pub enum ProcessorError {
    /// Stop the chain (and the run, unless a retry is granted).
    Abort(Abort),
    /// Let the data through unchanged, but report a violation (the "warn" strategy).
    Warning(Abort),
    /// The hook failed. In `process_output_stream` the original chunk passes on; elsewhere the
    /// run ends with an error naming the processor.
    Failed(BoxError),
}

impl ProcessorError {
    /// A failure with this message.
    pub fn msg(message: impl Into<String>) -> Self {
        ProcessorError::Failed(message.into().into())
    }

    /// An abort with this reason.
    pub fn abort(reason: impl Into<String>) -> Self {
        ProcessorError::Abort(Abort::new().reason(reason))
    }

    /// Whether this is an abort.
    pub fn is_abort(&self) -> bool {
        matches!(self, ProcessorError::Abort(_))
    }
}

impl From<Abort> for ProcessorError {
    fn from(a: Abort) -> Self {
        ProcessorError::Abort(a)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ProcessorError {
    fn from(e: E) -> Self {
        ProcessorError::Failed(Box::new(e))
    }
}

impl From<TripWire> for Abort {
    /// The abort that reports `tw` again, from a processor that ran the one that raised it.
    fn from(tw: TripWire) -> Self {
        Abort {
            reason: Some(tw.reason),
            retry: tw.retry,
            metadata: tw.metadata,
            raised_by: Some(tw.processor_id),
        }
    }
}

/// Why a hook call failed (an abort is not a failure: it is a [`TripWire`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// A hook returned an error.
    #[error("processor `{id}` failed in {hook}: {source}")]
    Failed {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// A hook panicked; the run stopped and saved nothing.
    #[error(
        "processor `{id}` panicked in {hook}: {message}; the run was stopped and nothing was saved"
    )]
    Panicked {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// The panic message.
        message: String,
    },
    /// A hook returned a result the run cannot use.
    #[error("processor `{id}` returned an invalid result from {hook}: {reason}")]
    InvalidResult {
        /// The processor's id.
        id: String,
        /// The hook.
        hook: Hook,
        /// What is wrong.
        reason: String,
    },
    /// Two processors share an id (and so their state) but not a state type.
    #[error(
        "processors share the id `{id}` but not a state type (`{first}` and `{second}`); give one of them another id"
    )]
    StateConflict {
        /// The shared id.
        id: String,
        /// The first state type.
        first: &'static str,
        /// The second.
        second: &'static str,
    },
}

impl HookError {
    pub(crate) fn invalid(id: &str, hook: Hook, reason: impl ToString) -> Self {
        HookError::InvalidResult {
            id: id.to_owned(),
            hook,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn panicked(id: &str, hook: Hook, payload: &(dyn std::any::Any + Send)) -> Self {
        HookError::Panicked {
            id: id.to_owned(),
            hook,
            message: panic_message(payload),
        }
    }
}

/// The error of a hook that `SYNC_HOOKS` says never waits, whose future waited.
pub(crate) fn waited(id: &str, hook: super::Hook) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{id}` lists `{}` in `SYNC_HOOKS`, as a hook that never waits, but its future waited; remove it from `SYNC_HOOKS` or make the hook return a ready future",
        hook.name()
    ))
}

/// The text of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}
