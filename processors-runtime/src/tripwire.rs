//! The [`TripWire`] a run reports when a processor aborted it (processors raise one with
//! [`Abort`](crate::processor::Abort)).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an abort produced: reported by `generate()`, carried by the `tripwire` chunk and by the
/// rejected step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TripWire {
    /// Why the processor aborted.
    pub reason: String,
    /// Whether the processor asked for the step to be retried (left out of the JSON when
    /// it did not, as the `tripwire` chunk of Mastra does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retry: bool,
    /// Structured details the processor attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The id of the processor that aborted.
    pub processor_id: String,
}
