use super::{AgentError, GenerateResult};
use crate::chunk::Chunk;
use futures::Stream;
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
pub(crate) struct Slot(Mutex<VecDeque<Chunk>>);

impl Slot {
    /// Queues several chunks under one lock; true when the consumer should catch up.
    pub(crate) fn push_all(&self, chunks: impl Iterator<Item = Chunk>) -> bool {
        let mut q = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        q.extend(chunks);
        q.len() >= AHEAD
    }

    /// Moves every queued chunk into `into`, which is empty.
    fn take_all(&self, into: &mut VecDeque<Chunk>) {
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
    slot: Arc<Slot>,
    ready: VecDeque<Chunk>,
    result: Option<Result<GenerateResult, AgentError>>,
}

impl AgentStream {
    pub(crate) fn new<F, Fut>(start: F) -> Self
    where
        F: FnOnce(Arc<Slot>) -> Fut,
        Fut: Future<Output = Result<GenerateResult, AgentError>> + Send + 'static,
    {
        let slot = Arc::new(Slot::default());
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
    Err(AgentError::InvalidResult {
        id: "agent".to_owned(),
        hook: crate::processor::Hook::OutputResult,
        reason: "the run's result was already taken".to_owned(),
    })
}

impl Stream for AgentStream {
    type Item = Chunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Chunk>> {
        let this = &mut *self;
        if let Some(chunk) = this.ready.pop_front() {
            return Poll::Ready(Some(chunk));
        }
        let Some(run) = this.run.as_mut() else {
            return Poll::Ready(None);
        };
        let finished = match run.as_mut().poll(cx) {
            Poll::Ready(result) => {
                this.run = None;
                this.result = Some(result);
                true
            }
            Poll::Pending => false,
        };
        this.slot.take_all(&mut this.ready);
        match this.ready.pop_front() {
            Some(chunk) => Poll::Ready(Some(chunk)),
            None if finished => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}
