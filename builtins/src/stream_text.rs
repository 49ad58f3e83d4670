//! Text a stream processor holds back across deltas: which block it belongs to, and when it
//! must go on.
//!
//! A guard that looks for something that may be split across deltas (`"sk-12"` + `"345…"`)
//! cannot let the end of a delta go before it knows what follows. The driver here feeds each
//! text or reasoning delta to a [`Scan`], which says what of it goes on now and keeps the rest;
//! anything that is not a delta of the same block (its `text-end`, a tool call, the
//! `step-finish`, a delta of another block) lets the held text go first, scanned as the end of
//! its block, so order is kept and nothing stays behind. `data-*` chunks do not reach these
//! processors (they do not opt in), so they may overtake held text.

use processors_runtime::ProcessorError;
use processors_runtime::chunk::{Chunk, ChunkKind};
use processors_runtime::processor::StreamAction;
use std::sync::Arc;

/// What a [`Scan`] made of a delta.
pub(crate) enum Fed {
    /// The delta goes on as it came, and nothing is held.
    Unchanged,
    /// What the scan wrote to its output goes on now (possibly nothing); the rest is held.
    Emit,
}

/// Scans the text of one block, delta by delta.
pub(crate) trait Scan {
    /// Scans `text`, which follows what is held, writing what goes on now to `out` (empty on
    /// entry) when it returns [`Fed::Emit`].
    fn feed(&mut self, text: &str, out: &mut String) -> Result<Fed, ProcessorError>;

    /// The block ended: writes everything held to `out` (empty on entry), scanned as the end
    /// of the text, and starts afresh.
    fn finish(&mut self, out: &mut String) -> Result<(), ProcessorError>;
}

/// The driver's side of a processor's state: the block being scanned and a reusable buffer.
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    /// The block whose text was fed last (its id, and whether it is reasoning).
    open: Option<(Arc<str>, bool)>,
    /// What goes on now, reused from chunk to chunk.
    out: String,
}

impl Blocks {
    /// Runs one chunk through `scan`. A delta that passes whole is passed as it is (no
    /// allocation); otherwise the chunks to send replace it.
    pub(crate) fn on_chunk(
        &mut self,
        scan: &mut impl Scan,
        chunk: &Chunk,
    ) -> Result<StreamAction, ProcessorError> {
        let (id, text, reasoning) = match &chunk.kind {
            ChunkKind::TextDelta { id, text } => (id, text, false),
            ChunkKind::ReasoningDelta { id, text } => (id, text, true),
            _ => {
                // Anything else ends the block: what is held goes first.
                let Some(block) = self.open.take() else {
                    return Ok(StreamAction::Pass);
                };
                return Ok(match self.end(scan, chunk, &block)? {
                    Some(held) => StreamAction::Many(vec![held, chunk.clone()]),
                    None => StreamAction::Pass,
                });
            }
        };
        let same = matches!(&self.open, Some((open, r)) if *r == reasoning && (Arc::ptr_eq(open, id) || open == id));
        let mut before = None;
        if !same {
            if let Some(block) = self.open.take() {
                before = self.end(scan, chunk, &block)?;
            }
            self.open = Some((id.clone(), reasoning));
        }
        self.out.clear();
        let now = match scan.feed(text, &mut self.out)? {
            Fed::Unchanged if before.is_none() => return Ok(StreamAction::Pass),
            Fed::Unchanged => Some(chunk.clone()),
            Fed::Emit => (!self.out.is_empty()).then(|| delta(chunk, id, reasoning, &self.out)),
        };
        Ok(match (before, now) {
            (None, None) => StreamAction::Drop,
            (Some(a), Some(b)) => StreamAction::Many(vec![a, b]),
            (Some(a), None) | (None, Some(a)) => StreamAction::Replace(a),
        })
    }

    /// Ends `block`: the chunk with its held text, if any.
    fn end(
        &mut self,
        scan: &mut impl Scan,
        at: &Chunk,
        block: &(Arc<str>, bool),
    ) -> Result<Option<Chunk>, ProcessorError> {
        self.out.clear();
        scan.finish(&mut self.out)?;
        Ok((!self.out.is_empty()).then(|| delta(at, &block.0, block.1, &self.out)))
    }
}

/// A delta of `block` carrying `text`, from the run of `at`.
fn delta(at: &Chunk, id: &Arc<str>, reasoning: bool, text: &str) -> Chunk {
    let (id, text) = (id.clone(), text.to_owned());
    let kind = match reasoning {
        true => ChunkKind::ReasoningDelta { id, text },
        false => ChunkKind::TextDelta { id, text },
    };
    Chunk {
        run_id: at.run_id.clone(),
        from: at.from,
        kind,
    }
}
