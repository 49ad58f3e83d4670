//! [`BatchParts`]: merges streamed text deltas into fewer, larger ones, for clients that pay
//! per message (a websocket frame, a server-sent event, a UI update).
//!
//! ```
//! # futures::executor::block_on(async {
//! use futures::StreamExt;
//! use processors::builtins::BatchParts;
//! use processors::prelude::*;
//!
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::deltas(["H", "e", "l", "l", "o", ",", " ", "w", "o", "rld"])]))
//!     .output(BatchParts::builder().batch_size(4).build()?)
//!     .build()?;
//! let mut stream = agent.stream("hi");
//! let mut deltas = Vec::new();
//! while let Some(chunk) = stream.next().await {
//!     deltas.extend(chunk.text_delta().map(str::to_owned));
//! }
//! assert_eq!(deltas, ["Hell", "o, w", "orld"]);
//! assert_eq!(stream.finish().await?.text, "Hello, world");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # When a batch goes
//!
//! A batch of text deltas of one text block goes on as one delta when it holds
//! [`batch_size`](BatchPartsBuilder::batch_size) deltas (5 by default), when its text reaches
//! [`max_chars`](BatchPartsBuilder::max_chars) characters, when its first delta has waited
//! [`max_wait`](BatchPartsBuilder::max_wait), and, before it, when any other chunk comes: the
//! block's `text-end`, a delta of another block, reasoning, a tool call, a `data-*` chunk
//! (the batcher opts in to them, so that none overtakes the text), the `step-finish`. So
//! the client sees every chunk in the order the model produced it, and nothing is left
//! behind. With [`emit_on_non_text(false)`](BatchPartsBuilder::emit_on_non_text), reasoning
//! and `data-*` chunks join the batch instead, in their place, and count as a part each (as
//! the reference's batcher counts parts); the other chunks still send it first.
//! [`BatchParts::flush`] sends it at once, from a processor of your own that wraps the
//! batcher ([`BatchParts::batch`]).
//!
//! # Waiting
//!
//! A processor runs when a chunk arrives; there is no timer. `max_wait` is checked when the
//! next chunk arrives: if the model pauses, the batch waits with it, until its next delta
//! (which then goes with the batch) or the chunk that ends the block. Use it to bound how
//! long a fast model's deltas are held, not to flush during a pause.
//!
//! # Cost
//!
//! A delta that joins a batch is copied into a buffer the batcher reuses; each batch costs
//! one allocation, for its text. A delta that would fill a batch alone (with `batch_size` 1,
//! or as long as `max_chars`) passes as it came, when no batch is waiting.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::chunk::{Chunk, ChunkKind};
use processors_runtime::processor::StreamAction;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The default for [`BatchPartsBuilder::batch_size`].
pub const DEFAULT_BATCH_SIZE: usize = 5;

/// Configures a [`BatchParts`]; [`build`](BatchPartsBuilder::build) checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct BatchPartsBuilder {
    config: BatchParts,
}

impl BatchPartsBuilder {
    /// How many deltas make a batch (default [`DEFAULT_BATCH_SIZE`]).
    pub fn batch_size(mut self, deltas: usize) -> Self {
        self.config.batch_size = deltas;
        self
    }

    /// Sends a batch once its text has this many characters (default: no limit).
    pub fn max_chars(mut self, chars: usize) -> Self {
        self.config.max_chars = Some(chars);
        self
    }

    /// Sends a batch with the first delta that arrives once its first delta has waited this
    /// long (default: no limit). Checked when a chunk arrives; see [Waiting](self#waiting).
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.config.max_wait = Some(wait);
        self
    }

    /// Whether any other chunk sends the batch before it (default: yes). With `false`,
    /// reasoning and `data-*` chunks join the batch in their place (a part each, counted
    /// with the deltas) and go with it, in order, when it is full; the chunks that open or
    /// close a text block, a step or the run, and tool calls, still send it first. See
    /// [When a batch goes](self#when-a-batch-goes).
    pub fn emit_on_non_text(mut self, yes: bool) -> Self {
        self.config.emit_on_non_text = yes;
        self
    }

    /// Checks the configuration.
    ///
    /// ```
    /// use processors::builtins::BatchParts;
    /// use std::time::Duration;
    /// let batcher = BatchParts::builder()
    ///     .batch_size(20)
    ///     .max_chars(400)
    ///     .max_wait(Duration::from_millis(50))
    ///     .build()
    ///     .unwrap();
    /// assert!(BatchParts::builder().batch_size(0).build().is_err());
    /// ```
    pub fn build(self) -> Result<BatchParts, ConfigError> {
        let c = self.config;
        if c.batch_size == 0 {
            return Err(ConfigError::Zero {
                option: "batch_size",
                why: "give at least 1 (1 passes every delta as it comes)",
            });
        }
        if c.max_chars == Some(0) {
            return Err(ConfigError::Zero {
                option: "max_chars",
                why: "give at least 1 character",
            });
        }
        if c.max_wait == Some(Duration::ZERO) {
            return Err(ConfigError::Zero {
                option: "max_wait",
                why: "to send every delta at once, use `batch_size(1)`",
            });
        }
        Ok(c)
    }
}

/// Merges text deltas into batches. See [the module](self).
///
/// ```
/// use processors::builtins::BatchParts;
/// assert_eq!(BatchParts::ID, "batch-parts");
/// let batcher = BatchParts::new(); // batches of 5 deltas
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchParts {
    batch_size: usize,
    max_chars: Option<usize>,
    max_wait: Option<Duration>,
    emit_on_non_text: bool,
}

impl Default for BatchParts {
    fn default() -> Self {
        BatchParts {
            batch_size: DEFAULT_BATCH_SIZE,
            max_chars: None,
            max_wait: None,
            emit_on_non_text: true,
        }
    }
}

impl BatchParts {
    /// Batches of [`DEFAULT_BATCH_SIZE`] deltas, with no character or time limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from the defaults.
    pub fn builder() -> BatchPartsBuilder {
        BatchPartsBuilder {
            config: Self::default(),
        }
    }

    /// Everything the batch holds, in order, as it would go (the text merged into one delta),
    /// from the run of `at`; the state starts a new batch. The stream sends it by itself
    /// when the batch is full or a chunk comes that sends it; call this to send it earlier,
    /// from a processor of your own that wraps the batcher.
    ///
    /// ```
    /// use processors::builtins::batch_parts::{BatchParts, BatchPartsState};
    /// use processors::chunk::{Chunk, ChunkFrom, ChunkKind, RunId};
    /// use processors::processor::StreamAction;
    ///
    /// let batcher = BatchParts::new();
    /// let mut state = BatchPartsState::default();
    /// let delta = |text: &str| Chunk {
    ///     run_id: RunId::from("run-1"),
    ///     from: ChunkFrom::Agent,
    ///     kind: ChunkKind::TextDelta { id: "t".into(), text: text.into() },
    /// };
    /// assert!(matches!(batcher.batch(&delta("Hel"), &mut state), StreamAction::Drop));
    /// assert!(matches!(batcher.batch(&delta("lo"), &mut state), StreamAction::Drop));
    /// let flushed = batcher.flush(&mut state, &delta(""));
    /// assert_eq!(flushed.len(), 1);
    /// assert_eq!(flushed[0].text_delta(), Some("Hello"));
    /// assert!(batcher.flush(&mut state, &delta("")).is_empty());
    /// ```
    pub fn flush(&self, state: &mut BatchPartsState, at: &Chunk) -> Vec<Chunk> {
        let mut out = std::mem::take(&mut state.held);
        state.held_parts = 0;
        out.extend(state.take(at));
        (state.chars, state.since) = (0, None);
        out
    }

    /// What the stream does with `chunk`: the batching of `process_output_stream`, callable
    /// from a processor of your own that wraps the batcher.
    pub fn batch(&self, chunk: &Chunk, state: &mut BatchPartsState) -> StreamAction {
        let ChunkKind::TextDelta { id, text } = &chunk.kind else {
            return self.other(chunk, state);
        };
        // A delta of another block: the batch of the last one goes first (without
        // `emit_on_non_text`, it stays in the batch as a delta of its own).
        let other_block = state.id.as_ref().is_some_and(|open| open != id);
        let before = match other_block {
            true if self.emit_on_non_text => state.take(chunk),
            true => {
                state.park(chunk);
                None
            }
            false => None,
        };
        // A delta that would fill a batch alone goes as it came.
        let alone = self.batch_size == 1
            || self
                .max_chars
                .is_some_and(|max| text.chars().count() >= max);
        if state.deltas == 0 && state.held.is_empty() && alone {
            return match before {
                Some(batch) => StreamAction::Many(vec![batch, chunk.clone()]),
                None => StreamAction::Pass,
            };
        }
        state.add(id, text, self.max_chars.is_some(), self.max_wait.is_some());
        if !self.full(state) {
            return match before {
                Some(batch) => StreamAction::Replace(batch),
                None => StreamAction::Drop,
            };
        }
        if !state.held.is_empty() {
            let mut out: Vec<Chunk> = before.into_iter().collect();
            out.extend(self.flush(state, chunk));
            return StreamAction::Many(out);
        }
        match (before, state.take(chunk)) {
            (None, None) => StreamAction::Drop,
            (Some(a), Some(b)) => StreamAction::Many(vec![a, b]),
            (Some(a), None) | (None, Some(a)) => StreamAction::Replace(a),
        }
    }

    /// Any chunk but a text delta: sends the batch first, or, without
    /// [`emit_on_non_text`](BatchPartsBuilder::emit_on_non_text), joins it.
    fn other(&self, chunk: &Chunk, state: &mut BatchPartsState) -> StreamAction {
        // Reasoning and `data-*` chunks may wait in a batch; the chunks that open or close a
        // text block, a step or the run, and tool calls, never do.
        let joins = matches!(
            chunk.kind,
            ChunkKind::ReasoningStart { .. }
                | ChunkKind::ReasoningDelta { .. }
                | ChunkKind::ReasoningEnd { .. }
                | ChunkKind::Data { .. }
        );
        if self.emit_on_non_text || !joins {
            if state.held.is_empty() {
                return match state.take(chunk) {
                    Some(batch) => StreamAction::Many(vec![batch, chunk.clone()]),
                    None => StreamAction::Pass,
                };
            }
            let mut out = self.flush(state, chunk);
            out.push(chunk.clone());
            return StreamAction::Many(out);
        }
        state.park(chunk);
        state.held.push(chunk.clone());
        state.held_parts += 1;
        if self.max_wait.is_some() && state.since.is_none() {
            state.since = Some(Instant::now());
        }
        match self.full(state) {
            true => StreamAction::Many(self.flush(state, chunk)),
            false => StreamAction::Drop,
        }
    }

    /// Whether `state`'s batch is to go now: its deltas and the chunks held with it.
    fn full(&self, state: &BatchPartsState) -> bool {
        state.deltas + state.held_parts >= self.batch_size
            || self.max_chars.is_some_and(|max| state.chars >= max)
            || self
                .max_wait
                .zip(state.since)
                .is_some_and(|(wait, since)| since.elapsed() >= wait)
    }
}

#[processor(crate = processors_runtime, id = "batch-parts", process_data_parts)]
impl BatchParts {
    /// Adds text deltas to the batch and sends it when full; any other chunk sends it first
    /// (or joins it, without `emit_on_non_text`).
    fn process_output_stream(&self, chunk: &Chunk, state: &mut BatchPartsState) -> StreamAction {
        self.batch(chunk, state)
    }
}

/// The per-request state of a [`BatchParts`]: the batch being filled.
#[derive(Debug, Default)]
pub struct BatchPartsState {
    /// The block of the text being merged.
    id: Option<Arc<str>>,
    /// Its text, in a buffer reused from batch to batch.
    text: String,
    /// How many deltas it holds, and how many characters the batch's text has.
    deltas: usize,
    chars: usize,
    /// When the batch's first part came (when a wait limit is set).
    since: Option<Instant>,
    /// Without `emit_on_non_text`: what the batch holds before that text, in order (merged
    /// text of earlier blocks, other chunks), and how many parts that counts for.
    held: Vec<Chunk>,
    held_parts: usize,
}

impl BatchPartsState {
    fn add(&mut self, id: &Arc<str>, text: &str, count_chars: bool, timed: bool) {
        if self.deltas == 0 {
            self.id = Some(id.clone());
            if timed && self.since.is_none() {
                self.since = Some(Instant::now());
            }
        }
        self.text.push_str(text);
        self.deltas += 1;
        if count_chars {
            self.chars += text.chars().count();
        }
    }

    /// Moves the text being merged into `held` as one delta, keeping the batch's counts.
    fn park(&mut self, at: &Chunk) {
        let Some(id) = self.id.take() else {
            return;
        };
        let text = std::mem::take(&mut self.text);
        self.held_parts += std::mem::take(&mut self.deltas);
        self.held.push(Chunk {
            run_id: at.run_id.clone(),
            from: at.from,
            kind: ChunkKind::TextDelta { id, text },
        });
    }

    /// The batch's text as one delta, from the run of `at`; the state starts a new batch.
    fn take(&mut self, at: &Chunk) -> Option<Chunk> {
        let id = self.id.take()?;
        let text = self.text.clone();
        self.text.clear();
        (self.deltas, self.chars, self.since) = (0, 0, None);
        Some(Chunk {
            run_id: at.run_id.clone(),
            from: at.from,
            kind: ChunkKind::TextDelta { id, text },
        })
    }
}
