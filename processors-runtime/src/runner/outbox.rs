//! Where a run's chunks go: a queue the consumer (an [`AgentStream`](crate::agent::AgentStream))
//! takes from, filled in batches.

use crate::chunk::{Chunk, ChunkKind, RunId};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// How many chunks the run may get ahead of its consumer before it waits.
pub(crate) const AHEAD: usize = 32;

/// The chunks the run has produced and the consumer has not taken yet.
///
/// The run queues chunks without suspending; it lets the consumer catch up when `AHEAD`
/// chunks wait, and whenever it waits on something else (the model, a slow processor), the
/// consumer takes what is queued. So chunks reach the consumer as soon as they exist, and
/// the run suspends once per `AHEAD` chunks rather than once per chunk.
#[derive(Default)]
pub(crate) struct Handoff(Mutex<VecDeque<Chunk>>);

impl Handoff {
    /// Queues the chunks of `batch` under one lock, leaving it empty; true when the consumer
    /// should catch up. When nothing waits (the usual case: the consumer took everything
    /// before the run went on), the buffers are swapped and no chunk moves.
    pub(crate) fn push_all(&self, batch: &mut VecDeque<Chunk>) -> bool {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if q.is_empty() {
            std::mem::swap(&mut *q, batch);
        } else {
            q.append(batch);
        }
        q.len() >= AHEAD
    }

    /// Moves every queued chunk into `into`, which is empty.
    pub(crate) fn take_all(&self, into: &mut VecDeque<Chunk>) {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::swap(&mut *q, into);
    }
}

/// Suspends the run once, so that the consumer takes the queued chunks.
pub(crate) async fn catch_up() {
    YieldOnce(false).await
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            // No waker: `AgentStream::poll_next` finds the queued chunks and returns them;
            // the consumer's next poll resumes the run.
            self.0 = true;
            Poll::Pending
        }
    }
}

/// The run's side of the queue: chunks batched without suspending, handed over together.
pub(crate) struct Outbox {
    pub(crate) run_id: RunId,
    /// The consumer's queue; `None` for `generate()`, which keeps no chunk.
    slot: Option<Arc<Handoff>>,
    /// Chunks produced without waiting, handed over together (a queue, so that it can
    /// trade buffers with the consumer's).
    batch: VecDeque<Chunk>,
    /// Chunks kept from the consumer until [`release`](Outbox::release), when holding.
    held: Option<VecDeque<Chunk>>,
    /// Where `generate()`, which keeps no chunk, stages one.
    scratch: Option<Chunk>,
}

impl Outbox {
    pub(crate) fn new(run_id: RunId, slot: Option<Arc<Handoff>>) -> Self {
        // `generate()` batches nothing: no buffer.
        let batch = match slot {
            Some(_) => VecDeque::with_capacity(AHEAD),
            None => VecDeque::new(),
        };
        Outbox {
            run_id,
            slot,
            batch,
            held: None,
            scratch: None,
        }
    }

    /// Batches a chunk for the consumer (or holds it back, when holding).
    #[inline(always)]
    pub(crate) fn push(&mut self, chunk: Chunk) {
        if self.slot.is_some() {
            if self.held.is_none() {
                self.batch.push_back(chunk);
            } else {
                self.hold_back(chunk);
            }
        }
    }

    #[cold]
    fn hold_back(&mut self, chunk: Chunk) {
        if let Some(held) = &mut self.held {
            held.push_back(chunk);
        }
    }

    /// Places a chunk where [`push`](Self::push) would put it, for the stream chain to work
    /// on in place; [`commit`](Self::commit) or [`unstage`](Self::unstage) settles it.
    #[inline(always)]
    pub(crate) fn stage(&mut self, kind: ChunkKind) -> &mut Chunk {
        let chunk = Chunk::new(self.run_id.clone(), kind);
        let queue = match (&self.slot, &mut self.held) {
            (None, _) => return self.scratch.insert(chunk),
            (Some(_), Some(held)) => held,
            (Some(_), None) => &mut self.batch,
        };
        queue.push_back_mut(chunk)
    }

    /// Keeps the staged chunk for the consumer (`generate()`, which has none, drops it).
    #[inline(always)]
    pub(crate) fn commit(&mut self) {
        if self.slot.is_none() {
            self.scratch = None;
        }
    }

    /// Takes the staged chunk back: the chain dropped it, or halted on it.
    #[inline]
    pub(crate) fn unstage(&mut self) {
        match (&self.slot, &mut self.held) {
            (None, _) => self.scratch = None,
            (Some(_), Some(held)) => drop(held.pop_back()),
            (Some(_), None) => drop(self.batch.pop_back()),
        }
    }

    /// Holds back the chunks pushed from now on, so that the consumer sees them only once
    /// the run has done what must come first (the end of the run once memory is saved).
    pub(crate) fn hold(&mut self) {
        self.held.get_or_insert_with(VecDeque::new);
    }

    /// Stops holding; true when chunks were held back, which are batched now and must be
    /// handed over ([`hand_over`](Self::hand_over)). `generate()` holds nothing back: it
    /// keeps no chunk.
    #[must_use]
    pub(crate) fn release(&mut self) -> bool {
        match self.held.take() {
            Some(mut held) if !held.is_empty() => {
                self.batch.append(&mut held);
                true
            }
            _ => false,
        }
    }

    /// Forgets the chunks held back, and stops holding.
    pub(crate) fn discard_held(&mut self) {
        self.held = None;
    }

    /// How many chunks are batched.
    #[inline]
    pub(crate) fn batched(&self) -> usize {
        self.batch.len()
    }

    /// Hands a chunk to the consumer, after the ones batched before it.
    pub(crate) async fn deliver(&mut self, kind: ChunkKind) {
        let chunk = Chunk::new(self.run_id.clone(), kind);
        self.push(chunk);
        self.hand_over().await;
    }

    /// Hands the batched chunks to the consumer, and lets it catch up when enough wait.
    pub(crate) async fn hand_over(&mut self) {
        if self.flush() {
            catch_up().await;
        }
    }

    /// Hands the batched chunks to the consumer (before the run may wait); true when the
    /// consumer should catch up.
    pub(crate) fn flush(&mut self) -> bool {
        match &self.slot {
            Some(slot) if !self.batch.is_empty() => slot.push_all(&mut self.batch),
            _ => false,
        }
    }
}
