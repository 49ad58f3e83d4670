//! One call through a route, whatever the client's protocol: the model's stream read as the
//! events a client is told of, the opening read until the first content (so a refusal or an
//! error before it is an HTTP error), and the whole answer gathered for a call that does not
//! stream.

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use processors_runtime::RequestContext;
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::message::ToolCall;
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelStream};
use processors_runtime::tripwire::TripWire;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

/// What the client is told of, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Reasoning(String),
    /// A whole tool call.
    ToolCall(ToolCall),
    /// The answer's end.
    Finish(FinishReason, Usage),
    /// A processor refused: the answer ends here.
    Refused(TripWire),
    /// The upstream or the gateway failed: the answer ends here.
    Failed(ApiError),
}

impl Event {
    /// Whether the answer ends with this event.
    pub(crate) fn ends(&self) -> bool {
        matches!(
            self,
            Event::Finish(..) | Event::Refused(_) | Event::Failed(_)
        )
    }

    fn of(chunk: Result<ChunkKind, ApiError>) -> Option<Event> {
        Some(match chunk {
            Ok(ChunkKind::TextDelta { text, .. }) => Event::Text(text),
            Ok(ChunkKind::ReasoningDelta { text, .. }) => Event::Reasoning(text),
            Ok(ChunkKind::ToolCall(call)) => Event::ToolCall(call),
            Ok(ChunkKind::Finish {
                finish_reason,
                usage,
            }) => Event::Finish(finish_reason, usage),
            Ok(ChunkKind::Tripwire(tw)) => Event::Refused(tw),
            Ok(ChunkKind::Error { message }) => Event::Failed(ApiError::other(message, false)),
            Err(e) => Event::Failed(e),
            Ok(_) => return None,
        })
    }
}

/// When a call must end: the request's deadline (its limit, for the message), and the
/// gateway's shutdown once its grace is over.
pub(crate) struct Bounds {
    pub(crate) deadline: Instant,
    pub(crate) limit_ms: u64,
    pub(crate) cut: watch::Receiver<bool>,
}

/// The events of a call: the model's stream read as events, ending after the first event
/// that ends the answer, or with a failure when the stream stops without one, the request's
/// time is up or the gateway cuts open answers.
pub(crate) struct Events {
    stream: Option<ModelStream>,
    deadline: Pin<Box<Sleep>>,
    limit_ms: u64,
    cut: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl Events {
    fn new(stream: ModelStream, bounds: Bounds) -> Events {
        let mut cut = bounds.cut;
        Events {
            stream: Some(stream),
            deadline: Box::pin(tokio::time::sleep_until(bounds.deadline)),
            limit_ms: bounds.limit_ms,
            cut: Box::pin(async move {
                // A gateway dropped without cutting never cuts.
                if cut.wait_for(|cut| *cut).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }),
        }
    }
}

impl Stream for Events {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = &mut *self;
        let Some(stream) = this.stream.as_mut() else {
            return Poll::Ready(None);
        };
        loop {
            match stream.poll_next_unpin(cx) {
                Poll::Ready(Some(chunk)) => {
                    if let Some(event) = Event::of(chunk) {
                        if event.ends() {
                            this.stream = None;
                        }
                        return Poll::Ready(Some(event));
                    }
                }
                Poll::Ready(None) => {
                    this.stream = None;
                    return Poll::Ready(Some(Event::Failed(ApiError::other(
                        "the upstream's stream ended without finishing",
                        true,
                    ))));
                }
                Poll::Pending => {
                    // Dropping the stream cancels the upstream call.
                    if this.deadline.as_mut().poll(cx).is_ready() {
                        this.stream = None;
                        return Poll::Ready(Some(Event::Failed(timed_out(this.limit_ms))));
                    }
                    if this.cut.as_mut().poll(cx).is_ready() {
                        this.stream = None;
                        return Poll::Ready(Some(Event::Failed(ApiError::other(
                            "the gateway shut down before the answer ended",
                            true,
                        ))));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// The body of the failure of a request that took longer than the gateway's limit: the
/// gateway's own timeout, not an upstream's 504.
pub(crate) const GATEWAY_TIMEOUT: &str = "the gateway's time limit";

/// The failure of a request that took longer than `limit_ms`.
pub(crate) fn timed_out(limit_ms: u64) -> ApiError {
    ApiError::new(
        504,
        format!("the request took longer than the gateway's limit of {limit_ms} ms"),
    )
    .with_body(GATEWAY_TIMEOUT)
}

/// Whether `e` is the gateway's own timeout.
pub(crate) fn is_timeout(e: &ApiError) -> bool {
    e.body.as_deref() == Some(GATEWAY_TIMEOUT)
}

/// A call whose answer has begun: the events read before its first content, then the rest.
pub(crate) struct Opened {
    /// The events read so far; the last is content or the answer's end.
    pub(crate) head: Vec<Event>,
    /// The events after them.
    pub(crate) rest: Events,
}

impl Opened {
    /// All the events, from the first.
    pub(crate) fn events(self) -> BoxStream<'static, Event> {
        futures::stream::iter(self.head).chain(self.rest).boxed()
    }
}

/// Why a call ended before its first content.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// A processor refused.
    Tripwire(TripWire),
    /// The upstream failed, or the gateway's time ran out.
    Failed(ApiError),
}

/// Calls `model` on behalf of `context` (the tenant, the thread) and reads its answer up to the first content (text, reasoning or a tool
/// call) or its end. A refusal or failure before any content is returned as such.
pub(crate) async fn open(
    model: Arc<dyn LanguageModel>,
    request: ModelRequest,
    context: RequestContext,
    bounds: Bounds,
) -> Result<Opened, Refusal> {
    let call = model.stream_with_context(request, &context);
    let stream = match tokio::time::timeout_at(bounds.deadline, call).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return Err(Refusal::Failed(e)),
        Err(_) => return Err(Refusal::Failed(timed_out(bounds.limit_ms))),
    };
    let mut rest = Events::new(stream, bounds);
    // Events are only content or an end: the first one decides.
    let head = match rest.next().await {
        Some(Event::Refused(tw)) => return Err(Refusal::Tripwire(tw)),
        Some(Event::Failed(e)) => return Err(Refusal::Failed(e)),
        Some(event) => vec![event],
        None => Vec::new(),
    };
    Ok(Opened { head, rest })
}

/// A whole answer, for a call that does not stream.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) reasoning: String,
    pub(crate) tool_calls: Vec<ToolCall>,
    pub(crate) finish_reason: Option<FinishReason>,
    pub(crate) usage: Usage,
    /// The refusal that ended it after some content.
    pub(crate) refused: Option<TripWire>,
}

impl Answer {
    /// Gathers the events; a failure anywhere fails the answer.
    pub(crate) async fn gather(opened: Opened) -> Result<Answer, ApiError> {
        let mut answer = Answer::default();
        let mut events = opened.events();
        while let Some(event) = events.next().await {
            match event {
                Event::Text(t) => answer.text.push_str(&t),
                Event::Reasoning(t) => answer.reasoning.push_str(&t),
                Event::ToolCall(call) => answer.tool_calls.push(call),
                Event::Finish(reason, usage) => {
                    answer.finish_reason = Some(reason);
                    answer.usage = usage;
                }
                Event::Refused(tw) => answer.refused = Some(tw),
                Event::Failed(e) => return Err(e),
            }
        }
        Ok(answer)
    }
}

/// The message a refusal shows clients: `blocked by ID: REASON`.
pub(crate) fn refusal_message(tw: &TripWire) -> String {
    format!("blocked by {}: {}", tw.processor_id, tw.reason)
}

/// What a refusal says beside the protocol's finish or stop reason: the processor, its reason
/// and the message.
pub(crate) fn refusal_detail(tw: &TripWire) -> serde_json::Value {
    serde_json::json!({ "processor": tw.processor_id, "reason": tw.reason, "message": refusal_message(tw) })
}
