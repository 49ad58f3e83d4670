use super::{AgentError, GenerateResult};
use crate::chunk::Chunk;
use futures::Stream;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

/// Where the run puts the chunk it yields; the stream takes it out.
#[derive(Default)]
pub(crate) struct Slot(Mutex<Option<Chunk>>);

impl Slot {
    fn put(&self, c: Chunk) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(c);
    }
    fn take(&self) -> Option<Chunk> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// Hands a chunk to the stream and suspends the run until the consumer asks for the next one.
pub(crate) async fn yield_chunk(slot: &Slot, chunk: Chunk) {
    slot.put(chunk);
    YieldOnce(false).await
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            // No waker: `AgentStream::poll_next` sees the filled slot and returns the chunk;
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
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(None);
        };
        match run.as_mut().poll(cx) {
            Poll::Ready(result) => {
                self.run = None;
                self.result = Some(result);
                Poll::Ready(self.slot.take())
            }
            Poll::Pending => match self.slot.take() {
                Some(chunk) => Poll::Ready(Some(chunk)),
                None => Poll::Pending,
            },
        }
    }
}
