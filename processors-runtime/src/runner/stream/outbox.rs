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
    /// before the run went on), the buffers are traded and no chunk moves.
    pub(crate) fn push_all(&self, batch: &mut Vec<Chunk>) -> bool {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if q.is_empty() {
            // Both conversions keep their buffer: a `Vec` becomes a queue in place, and an
            // empty queue a `Vec`.
            let full = VecDeque::from(std::mem::take(batch));
            *batch = Vec::from(std::mem::replace(&mut *q, full));
        } else {
            q.extend(batch.drain(..));
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
    /// Chunks produced without waiting, handed over together (trading buffers with the
    /// consumer's queue). A `Vec`, so that a chunk can be made in its free room ([`stage`]).
    ///
    /// [`stage`]: Outbox::stage
    batch: Vec<Chunk>,
    /// Chunks kept from the consumer until [`release`](Outbox::release), when holding.
    held: Option<VecDeque<Chunk>>,
    /// Where `generate()`, which keeps no chunk, stages one.
    scratch: Option<Chunk>,
}

impl Outbox {
    pub(crate) fn new(run_id: RunId, slot: Option<Arc<Handoff>>) -> Self {
        // `generate()` batches nothing: no buffer.
        let batch = match slot {
            Some(_) => Vec::with_capacity(AHEAD),
            None => Vec::new(),
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
                self.batch.push(chunk);
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

    /// Makes a chunk where [`push`](Self::push) would put it, for the stream chain to work
    /// on in place; [`commit`](Self::commit) or [`unstage`](Self::unstage) settles it.
    ///
    /// In the batch, the chunk is written into the batch's free room, not pushed: a push
    /// checks for room after its value is built (growing may move everything), so the
    /// compiler builds the chunk aside and then moves it, and the move reads back, sixteen
    /// bytes at a time, what was just written in smaller pieces; each such read waits for the
    /// writes before it to complete. Together with the run id's copy in whole words
    /// ([`RunId`]), this took about 5 ns off a chunk's 50 without processors and 1 to 4 ns
    /// with five (BENCHMARKS.md, "Round 9"). The one unsafe call of this crate outside
    /// `FutureSlot` says the written slot is now part of the batch.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn stage(&mut self, kind: ChunkKind) -> &mut Chunk {
        match (&self.slot, &mut self.held) {
            (None, _) => self.scratch.insert(Chunk::new(self.run_id.clone(), kind)),
            (Some(_), Some(held)) => held.push_back_mut(Chunk::new(self.run_id.clone(), kind)),
            (Some(_), None) => {
                let len = self.batch.len();
                if len == self.batch.capacity() {
                    self.batch.reserve(AHEAD);
                }
                match self.batch.spare_capacity_mut().first_mut() {
                    Some(slot) => {
                        slot.write(Chunk::new(self.run_id.clone(), kind));
                        // SAFETY: the element at `len`, the first of the spare capacity, was
                        // just written, and is the only one the new length adds.
                        unsafe { self.batch.set_len(len + 1) };
                    }
                    // Not reached: room was made above.
                    None => self.batch.push(Chunk::new(self.run_id.clone(), kind)),
                }
                let last = self.batch.len() - 1;
                &mut self.batch[last]
            }
        }
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
            (Some(_), None) => drop(self.batch.pop()),
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
                self.batch.extend(held.drain(..));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(text: &str) -> ChunkKind {
        ChunkKind::TextDelta {
            id: "t".into(),
            text: text.into(),
        }
    }

    /// An outbox for a stream consumer, and the consumer's side of it.
    fn outbox(run_id: &str) -> (Arc<Handoff>, Outbox) {
        let handoff = Arc::new(Handoff::default());
        let out = Outbox::new(RunId::from(run_id), Some(handoff.clone()));
        (handoff, out)
    }

    /// What the consumer would take: every chunk handed over, as text.
    fn taken(handoff: &Handoff) -> Vec<String> {
        let mut queue = VecDeque::new();
        handoff.take_all(&mut queue);
        queue
            .into_iter()
            .map(|c| c.text_delta().unwrap_or("-").to_owned())
            .collect()
    }

    #[test]
    fn staged_chunks_are_made_in_order_with_the_run_id_past_the_batch_capacity() {
        let (handoff, mut out) = outbox("run-1");
        let n = 3 * AHEAD + 1;
        for i in 0..n {
            let chunk = out.stage(delta(&i.to_string()));
            assert_eq!(chunk.text_delta(), Some(i.to_string().as_str()));
            assert_eq!(chunk.run_id, RunId::from("run-1"));
            out.commit();
        }
        assert_eq!(out.batched(), n);
        assert!(out.flush(), "more than AHEAD chunks wait");
        assert_eq!(out.batched(), 0);
        let expected: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        assert_eq!(taken(&handoff), expected);
    }

    #[test]
    fn a_staged_chunk_is_worked_on_in_place_and_taken_back_by_unstage() {
        let (handoff, mut out) = outbox("a-run-id-longer-than-inline");
        out.stage(delta("a"));
        out.commit();
        out.stage(delta("b")).kind = delta("c");
        out.commit();
        out.stage(delta("dropped"));
        out.unstage();
        out.push(Chunk::new(out.run_id.clone(), delta("d")));
        assert!(!out.flush());
        assert_eq!(taken(&handoff), ["a", "c", "d"]);
    }

    #[test]
    fn a_batch_trades_buffers_with_an_empty_queue_and_joins_one_that_waits() {
        let (handoff, mut out) = outbox("run-2");
        out.stage(delta("a"));
        out.flush();
        // Traded, not copied: the queue now has the batch's buffer, room for AHEAD chunks.
        let capacity = handoff.0.lock().map(|q| q.capacity()).unwrap_or_default();
        assert!(capacity >= AHEAD, "{capacity}");
        // The consumer has not taken "a" yet: the next batch joins it.
        out.stage(delta("b"));
        out.stage(delta("c"));
        out.flush();
        assert_eq!(taken(&handoff), ["a", "b", "c"]);
        // The queue is empty again, and the batch still takes chunks after the trades.
        out.stage(delta("d"));
        out.flush();
        assert_eq!(taken(&handoff), ["d"]);
    }

    #[test]
    fn chunks_held_back_come_after_the_batch_on_release() {
        let (handoff, mut out) = outbox("run-3");
        out.stage(delta("a"));
        out.hold();
        out.stage(delta("b"));
        out.push(Chunk::new(out.run_id.clone(), delta("c")));
        assert_eq!(out.batched(), 1, "held chunks are not batched");
        assert!(out.release());
        out.flush();
        assert_eq!(taken(&handoff), ["a", "b", "c"]);
    }

    #[test]
    fn a_chunk_staged_while_holding_is_taken_back_from_the_held_ones() {
        let (handoff, mut out) = outbox("run-6");
        out.hold();
        out.stage(delta("a"));
        out.commit();
        out.stage(delta("dropped"));
        out.unstage();
        assert!(out.release());
        out.flush();
        assert_eq!(taken(&handoff), ["a"]);
        // Chunks held back and discarded never reach the consumer.
        out.hold();
        out.stage(delta("b"));
        out.discard_held();
        out.stage(delta("c"));
        assert!(!out.release());
        out.flush();
        assert_eq!(taken(&handoff), ["c"]);
    }

    #[test]
    fn without_a_consumer_a_staged_chunk_is_kept_until_committed() {
        let mut out = Outbox::new(RunId::from("run-4"), None);
        assert_eq!(out.stage(delta("a")).text_delta(), Some("a"));
        out.commit();
        assert_eq!(out.batched(), 0);
        assert!(!out.flush());
    }

    #[test]
    fn dropping_an_outbox_drops_its_batched_chunks() {
        let id = Arc::<str>::from("shared");
        let (_, mut out) = outbox("run-5");
        for _ in 0..5 {
            out.stage(ChunkKind::TextStart { id: id.clone() });
        }
        assert_eq!(Arc::strong_count(&id), 6);
        drop(out);
        assert_eq!(Arc::strong_count(&id), 1);
    }
}
