//! The harness's stream: chunks through the runtime's stream driver and chain, into an outbox
//! whose consumer is the report.

use super::{Harness, Report, Streamed};
use crate::chunk::{Chunk, ChunkKind, FinishReason, RunId, Usage};
use crate::processor::Hook;
use crate::runner::stream::outbox::{Handoff, Outbox};
use crate::runner::stream::{StepAcc, StreamDriver, StreamList};
use crate::runner::{Halt, HookError, Scope};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

/// What a stream call sends through the chain.
struct Feed {
    /// The run's `start` first (the harness's first framed stream).
    start: bool,
    /// The step the chunks are the model's answer in, framed as an agent frames them (its
    /// `step-start`, then its `step-finish` and the run's `finish`); `None`: the chunks alone.
    step: Option<u32>,
    chunks: Vec<ChunkKind>,
}

impl<P: ?Sized> Harness<P> {
    /// Streams `deltas` as a model's answer, through `process_output_stream`, and ends the
    /// step and the run as an agent does: `step-start`, `text-start`, the deltas, `text-end`,
    /// `step-finish` and `finish` (after the run's `start`, on the harness's first stream).
    /// The report's outcome is every chunk that came out, so text the processor held back
    /// and let go at the end is there too ([`Streamed::released`]).
    ///
    /// An abort stops the stream where it happened: the report has the chunks that came out
    /// before it, and the trip wire (an agent then sends its `tripwire` chunk). A stream
    /// hook that fails with an ordinary error passes the chunk on as it received it, as in
    /// an agent (the stream's rules, in this repository's `docs/semantics.md`, "Streaming"); one
    /// that panics is the call's error.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::prelude::*;
    /// use processors_runtime::testing::Harness;
    ///
    /// let upper = output_stream_fn("upper", |a: &mut OutputStreamArgs<'_, ()>| {
    ///     a.chunk.clone().map_text(|t| t.to_uppercase())
    /// });
    /// let report = Harness::new(upper).output_stream(["hel", "lo"]).await.unwrap();
    /// assert_eq!(report.deltas(), ["HEL", "LO"]);
    /// let types = report.outcome.types();
    /// assert_eq!(types.first().map(String::as_str), Some("start"));
    /// assert_eq!(types.last().map(String::as_str), Some("finish"));
    /// # });
    /// ```
    pub async fn output_stream<S: Into<String>>(
        &mut self,
        deltas: impl IntoIterator<Item = S>,
    ) -> Result<Report<Streamed>, HookError> {
        let id: Arc<str> = Arc::from("text-0");
        let deltas = deltas.into_iter().map(|d| ChunkKind::TextDelta {
            id: id.clone(),
            text: d.into(),
        });
        let chunks = std::iter::once(ChunkKind::TextStart { id: id.clone() })
            .chain(deltas)
            .chain([ChunkKind::TextEnd { id: id.clone() }]);
        self.output_stream_chunks(chunks).await
    }

    /// Streams `chunks` as a model's answer (text and reasoning blocks, tool calls, data,
    /// and, last, the model's `finish`), framed as [`output_stream`](Harness::output_stream)
    /// frames its deltas. The model's `finish`, which an agent keeps for the step's end,
    /// gives the `step-finish` and the `finish` their reason and usage (`stop` without one);
    /// a step that finished with `tool-calls` is continued, and its `finish` passes the
    /// chain by, as an agent's does.
    pub async fn output_stream_chunks(
        &mut self,
        chunks: impl IntoIterator<Item = ChunkKind>,
    ) -> Result<Report<Streamed>, HookError> {
        let feed = Feed {
            start: !std::mem::replace(&mut self.started, true),
            step: Some(self.step_number()),
            chunks: chunks.into_iter().collect(),
        };
        self.stream(feed).await
    }

    /// Sends exactly `chunks` through `process_output_stream`, nothing before or after them:
    /// a step of a test's own making (a `step-finish` with reason `retry`, several steps, a
    /// `finish` alone).
    pub async fn output_stream_raw(
        &mut self,
        chunks: impl IntoIterator<Item = ChunkKind>,
    ) -> Result<Report<Streamed>, HookError> {
        let feed = Feed {
            start: false,
            step: None,
            chunks: chunks.into_iter().collect(),
        };
        self.stream(feed).await
    }

    /// Runs `feed` through the stream driver, as the run's stream: the processor's state and
    /// stream history carry over from the harness's earlier calls.
    async fn stream(&mut self, feed: Feed) -> Result<Report<Streamed>, HookError> {
        let handoff = Arc::new(Handoff::default());
        let mut out = Outbox::new(RunId::from(self.run_id.as_str()), Some(handoff.clone()));
        let active = self.one.entry().has(Hook::OutputStream);
        let list = StreamList::<()>::Dynamic(&self.one.pipeline);
        let mut driver = StreamDriver::new(list, Cow::Borrowed(&self.one.slots[..]), active);
        driver.histories = std::mem::take(&mut self.histories);
        let mut chunks = Vec::new();
        let work = run(&mut driver, &mut self.scope, &mut out, feed);
        let ran = drained(work, &handoff, &mut chunks).await;
        out.flush();
        take(&handoff, &mut chunks);
        self.histories = std::mem::take(&mut driver.histories);
        drop(driver);
        let (released, tripwire) = self.settle(ran)?;
        let outcome = Streamed {
            chunks,
            released: released.unwrap_or_default(),
        };
        Ok(self.report(outcome, tripwire))
    }
}

/// Sends `feed` through `driver`'s chain into `out`, as a run's step does: the model's
/// chunks, then (framed) the step's `step-finish` and the run's `finish`, each through the
/// chain. Returns the text that came out only on those two.
async fn run(
    driver: &mut StreamDriver<'_, ()>,
    s: &mut Scope,
    out: &mut Outbox,
    feed: Feed,
) -> Result<String, Halt> {
    if feed.start {
        driver.emit(s, out, ChunkKind::Start, true).await?;
    }
    let Some(step_number) = feed.step else {
        for kind in feed.chunks {
            driver.emit(s, out, kind, true).await?;
        }
        s.report.flush();
        return Ok(String::new());
    };
    driver.acc = StepAcc::default();
    let start = ChunkKind::StepStart { step_number };
    driver.emit(s, out, start, true).await?;
    let mut finish = (FinishReason::Stop, Usage::default());
    for kind in feed.chunks {
        match kind {
            // The model's own finish ends its answer; the step's end says it.
            ChunkKind::Finish {
                finish_reason,
                usage,
            } => finish = (finish_reason, usage),
            kind => driver.emit(s, out, kind, true).await?,
        }
    }
    let (reason, usage) = finish;
    // What comes out from here on was let through only at the end.
    driver.acc = StepAcc::default();
    let step_finish = ChunkKind::StepFinish {
        finish_reason: reason,
        usage,
        is_continued: reason == FinishReason::ToolCalls,
        retry: None,
    };
    driver.emit(s, out, step_finish, true).await?;
    let mut released = std::mem::take(&mut driver.acc.text);
    driver.acc = StepAcc::default();
    let finish = ChunkKind::Finish {
        finish_reason: reason,
        usage,
    };
    // A finish with reason tool-calls (the step limit ended a tool loop) does not go through
    // stream processors.
    let through = reason != FinishReason::ToolCalls;
    driver.emit(s, out, finish, through).await?;
    released.push_str(&driver.acc.text);
    // Warnings the stream hooks reported through the request context, as at a step's end.
    s.report.flush();
    Ok(released)
}

/// Awaits `work`, moving the chunks it hands over into `into` whenever it stops: a run that
/// waits for its consumer to catch up goes on at once, and one that waits for anything else
/// waits.
async fn drained<F: Future>(work: F, handoff: &Handoff, into: &mut Vec<Chunk>) -> F::Output {
    let mut work = pin!(work);
    std::future::poll_fn(|cx| {
        loop {
            let polled = work.as_mut().poll(cx);
            let taken = take(handoff, into);
            match polled {
                Poll::Ready(output) => return Poll::Ready(output),
                // Suspended for the consumer (`catch_up`, which no waker resumes).
                Poll::Pending if taken => continue,
                Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

/// Moves the chunks handed over into `into`; whether there were any.
fn take(handoff: &Handoff, into: &mut Vec<Chunk>) -> bool {
    let mut queue = VecDeque::new();
    handoff.take_all(&mut queue);
    let taken = !queue.is_empty();
    into.extend(queue);
    taken
}
