//! Where processors' aborts and warnings are reported: the `on_violation` callback and the
//! log.

use crate::context::RunReports;
use crate::tripwire::TripWire;
use serde_json::Value;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// Whether a violation stopped the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// An abort: the chain stopped.
    Block,
    /// A warning: the processor let the data through.
    Warn,
    /// A processor in [`Shadow`](crate::processor::Shadow) decided something that was
    /// recorded instead of applied; [`Violation::reason`] says what it would have done and
    /// [`Violation::metadata`] carries the [`ShadowDecision`](crate::processor::ShadowDecision)
    /// as JSON.
    Shadow,
}

/// An abort or warning a processor raised, as `on_violation` callbacks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// The processor's id.
    pub processor_id: String,
    /// Block or warn.
    pub kind: ViolationKind,
    /// Why.
    pub reason: String,
    /// Whether a retry was asked for.
    pub retry: bool,
    /// The processor's metadata.
    pub metadata: Option<Value>,
}

pub(crate) type ViolationHandler = Arc<dyn Fn(&Violation) + Send + Sync>;

/// Reports violations of one run: logs warnings and calls the agent's `on_violation`.
#[derive(Clone, Default)]
pub(crate) struct Reporter {
    on_violation: Option<ViolationHandler>,
    /// Warnings processors reported through the request context.
    run: Option<Arc<crate::context::RunReports>>,
}

impl Reporter {
    /// Reports to `on_violation`, when set, and hands it the warnings of `run`.
    pub(crate) fn new(
        on_violation: Option<ViolationHandler>,
        run: Option<Arc<crate::context::RunReports>>,
    ) -> Self {
        Reporter { on_violation, run }
    }

    /// Reports the warnings processors gave through the request context since the last time.
    #[inline]
    pub(crate) fn flush(&self) {
        if let Some(run) = &self.run
            && run.has_warnings()
        {
            self.report_warnings(run);
        }
    }

    /// [`flush`](Self::flush) when there are warnings.
    #[cold]
    #[inline(never)]
    fn report_warnings(&self, run: &RunReports) {
        for tw in run.take_warnings() {
            self.violation(&tw, ViolationKind::Warn);
        }
        for decision in run.take_new_shadowed() {
            log_shadow(&decision);
            self.notify(Violation {
                processor_id: decision.processor_id.clone(),
                kind: ViolationKind::Shadow,
                reason: decision.reason.clone(),
                retry: decision.action == crate::processor::ShadowAction::Retry,
                metadata: serde_json::to_value(&decision).ok(),
            });
        }
    }

    /// Reports an abort or a warning; a panicking callback is caught and logged.
    pub(crate) fn violation(&self, tw: &TripWire, kind: ViolationKind) {
        if kind == ViolationKind::Warn {
            tracing::warn!(processor = %tw.processor_id, reason = %tw.reason, "processor warning");
        }
        if self.on_violation.is_none() {
            return;
        }
        self.notify(Violation {
            processor_id: tw.processor_id.clone(),
            kind,
            reason: tw.reason.clone(),
            retry: tw.retry,
            metadata: tw.metadata.clone(),
        });
    }

    /// Hands `v` to `on_violation`, when set; a panicking callback is caught and logged.
    fn notify(&self, v: Violation) {
        let Some(f) = &self.on_violation else { return };
        if std::panic::catch_unwind(AssertUnwindSafe(|| f(&v))).is_err() {
            tracing::error!(processor = %v.processor_id, "an on_violation callback panicked; the run goes on");
        }
    }
}

/// Logs a shadow decision (the run page lists it with the run's events).
pub(crate) fn log_shadow(d: &crate::processor::ShadowDecision) {
    tracing::info!(
        target: "processors::shadow",
        processor = %d.processor_id,
        hook = d.hook.name(),
        action = d.action.as_str(),
        reason = %d.reason,
        "shadow decision"
    );
}
