//! A running agent as a stream of chunks.

use super::{AgentError, GenerateResult};
use crate::chunk::Chunk;
use crate::runner::stream::outbox::{AHEAD, Handoff};
use futures::Stream;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

type RunFuture = Pin<Box<dyn Future<Output = Result<GenerateResult, AgentError>> + Send>>;

/// A running agent as a stream of [`Chunk`]s.
///
/// The run advances only as the stream is polled, in the caller's task; dropping the stream
/// stops the run (nothing partial is saved). [`finish`](AgentStream::finish) drains what is
/// left and returns the result.
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::StreamExt;
/// use processors_runtime::prelude::*;
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([Turn::deltas(["a", "b"])]))
///     .build()
///     .unwrap();
/// let mut stream = agent.stream("hi");
/// let mut text = String::new();
/// while let Some(chunk) = stream.next().await {
///     if let Some(t) = chunk.text_delta() {
///         text.push_str(t);
///     }
/// }
/// assert_eq!(text, "ab");
/// assert_eq!(stream.finish().await.unwrap().text, "ab");
/// # });
/// ```
pub struct AgentStream {
    run: Option<RunFuture>,
    slot: Arc<Handoff>,
    ready: VecDeque<Chunk>,
    result: Option<Result<GenerateResult, AgentError>>,
}

impl AgentStream {
    pub(crate) fn new<F, Fut>(start: F) -> Self
    where
        F: FnOnce(Arc<Handoff>) -> Fut,
        Fut: Future<Output = Result<GenerateResult, AgentError>> + Send + 'static,
    {
        let slot = Arc::new(Handoff::default());
        AgentStream {
            run: Some(Box::pin(start(slot.clone()))),
            slot,
            ready: VecDeque::with_capacity(AHEAD),
            result: None,
        }
    }

    /// Drains the remaining chunks and returns the run's result.
    pub async fn finish(mut self) -> Result<GenerateResult, AgentError> {
        use futures::StreamExt;
        while self.next().await.is_some() {}
        match self.result.take() {
            Some(r) => r,
            None => unreachable_result(),
        }
    }
}

fn unreachable_result() -> Result<GenerateResult, AgentError> {
    Err(AgentError::Api(crate::model::ApiError::other(
        "the run's result was already taken",
        false,
    )))
}

impl Stream for AgentStream {
    type Item = Chunk;

    #[inline]
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        // The usual poll takes a chunk the run has already queued.
        match self.ready.pop_front() {
            Some(chunk) => Poll::Ready(Some(chunk)),
            None => self.resume(cx),
        }
    }
}

impl AgentStream {
    /// Runs the run until it queues chunks, ends, or waits.
    #[inline(never)]
    fn resume(&mut self, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(None);
        };
        let finished = match run.as_mut().poll(cx) {
            Poll::Ready(result) => {
                self.run = None;
                self.result = Some(result);
                true
            }
            Poll::Pending => false,
        };
        self.slot.take_all(&mut self.ready);
        match self.ready.pop_front() {
            Some(chunk) => Poll::Ready(Some(chunk)),
            None if finished => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}
