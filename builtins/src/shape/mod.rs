//! The shape of a streamed answer: text deltas merged into fewer, larger ones (`batch_parts`).

pub mod batch_parts;
