use super::*;
use crate::chunk::{FinishReason, Usage};
use futures::FutureExt;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// One scripted answer of a [`ScriptedModel`].
///
/// ```
/// use processors_runtime::model::Turn;
/// let t = Turn::text("Hello world")
///     .tool_call("call-1", "weather", serde_json::json!({ "city": "Oslo" }))
///     .usage(12, 3);
/// assert_eq!(t.text_len(), 11);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Turn {
    deltas: Vec<String>,
    repeat: Option<(String, usize)>,
    reasoning: Option<String>,
    tool_calls: Vec<(String, String, Value)>,
    usage: Usage,
    finish: Option<FinishReason>,
    data: Vec<ChunkKind>,
    reject: Option<ApiError>,
    fail_mid_stream: Option<ApiError>,
    pace: Option<std::time::Duration>,
}

impl Turn {
    /// Answers with one text delta.
    pub fn text(text: impl Into<String>) -> Self {
        Self::deltas([text])
    }

    /// Answers with these text deltas.
    pub fn deltas<I: IntoIterator<Item = S>, S: Into<String>>(deltas: I) -> Self {
        Turn {
            deltas: deltas.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Answers with `count` deltas of `delta` (kept once, however large `count` is).
    pub fn repeated(delta: impl Into<String>, count: usize) -> Self {
        Turn {
            repeat: Some((delta.into(), count)),
            ..Self::default()
        }
    }

    /// An answer without text (add tool calls to it).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The provider rejects the request with this error.
    pub fn error(error: ApiError) -> Self {
        Turn {
            reject: Some(error),
            ..Self::default()
        }
    }

    /// Adds reasoning before the text.
    pub fn reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// Adds a tool call after the text; the finish reason becomes `tool-calls`.
    pub fn tool_call(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
    ) -> Self {
        self.tool_calls.push((id.into(), name.into(), args));
        self
    }

    /// Adds a raw chunk (such as a `data-*` chunk) before the text.
    pub fn chunk(mut self, chunk: ChunkKind) -> Self {
        self.data.push(chunk);
        self
    }

    /// Sets the usage reported by the `finish` chunk.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Usage {
            input_tokens,
            output_tokens,
            total_tokens: input_tokens + output_tokens,
        };
        self
    }

    /// Sets the finish reason.
    pub fn finish(mut self, reason: FinishReason) -> Self {
        self.finish = Some(reason);
        self
    }

    /// The stream fails with this error after the text, before `finish`.
    pub fn fail_mid_stream(mut self, error: ApiError) -> Self {
        self.fail_mid_stream = Some(error);
        self
    }

    /// Waits `per_delta` before each text and reasoning delta and before the `finish`, as a
    /// model that generates them would: a streamed answer then reaches its reader as it
    /// comes, rather than at once. The wait needs no particular executor (a helper thread wakes the stream), so it
    /// works under Tokio and `futures::executor::block_on` alike; it is meant for examples
    /// and demonstrations, not for measurements.
    ///
    /// ```
    /// # futures::executor::block_on(async {
    /// use processors_runtime::prelude::*;
    /// use std::time::{Duration, Instant};
    ///
    /// let model = ScriptedModel::new([Turn::deltas(["a", "b", "c"]).pace(Duration::from_millis(5))]);
    /// let agent = Agent::builder().model(model).build().unwrap();
    /// let started = Instant::now();
    /// assert_eq!(agent.generate("hi").await.unwrap().text, "abc");
    /// assert!(started.elapsed() >= Duration::from_millis(20)); // three deltas and the finish
    /// # });
    /// ```
    pub fn pace(mut self, per_delta: std::time::Duration) -> Self {
        self.pace = Some(per_delta);
        self
    }

    /// Number of characters of text this turn streams.
    pub fn text_len(&self) -> usize {
        let listed: usize = self.deltas.iter().map(|d| d.chars().count()).sum();
        let repeated = self
            .repeat
            .as_ref()
            .map_or(0, |(d, n)| d.chars().count() * n);
        listed + repeated
    }

    fn into_stream(self) -> ModelStream {
        let turn = Arc::new(self);
        let text_id: Arc<str> = Arc::from("text-0");
        let mut head: Vec<ChunkKind> = turn.data.clone();
        if let Some(r) = &turn.reasoning {
            let id: Arc<str> = Arc::from("reasoning-0");
            head.push(ChunkKind::ReasoningStart { id: id.clone() });
            head.push(ChunkKind::ReasoningDelta {
                id: id.clone(),
                text: r.clone(),
            });
            head.push(ChunkKind::ReasoningEnd { id });
        }
        let has_text = !turn.deltas.is_empty() || turn.repeat.as_ref().is_some_and(|r| r.1 > 0);
        if has_text {
            head.push(ChunkKind::TextStart {
                id: text_id.clone(),
            });
        }
        let listed = {
            let turn = turn.clone();
            let id = text_id.clone();
            (0..turn.deltas.len()).map(move |i| {
                Ok(ChunkKind::TextDelta {
                    id: id.clone(),
                    text: turn.deltas[i].clone(),
                })
            })
        };
        let repeated = {
            let count = turn.repeat.as_ref().map_or(0, |r| r.1);
            let turn = turn.clone();
            let id = text_id.clone();
            (0..count).map(move |_| {
                Ok(ChunkKind::TextDelta {
                    id: id.clone(),
                    text: turn
                        .repeat
                        .as_ref()
                        .map(|r| r.0.clone())
                        .unwrap_or_default(),
                })
            })
        };
        let mut tail: Vec<Result<ChunkKind, ApiError>> = Vec::new();
        if has_text {
            tail.push(Ok(ChunkKind::TextEnd { id: text_id }));
        }
        for (id, name, args) in &turn.tool_calls {
            tail.push(Ok(ChunkKind::ToolCall(crate::message::ToolCall {
                tool_call_id: id.clone(),
                tool_name: name.clone(),
                args: args.clone(),
            })));
        }
        match &turn.fail_mid_stream {
            Some(e) => tail.push(Err(e.clone())),
            None => {
                let reason = turn.finish.unwrap_or(if turn.tool_calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                });
                tail.push(Ok(ChunkKind::Finish {
                    finish_reason: reason,
                    usage: turn.usage,
                }));
            }
        }
        let iter = head
            .into_iter()
            .map(Ok)
            .chain(listed)
            .chain(repeated)
            .chain(tail);
        let stream = futures::stream::iter(iter);
        match turn.pace {
            None => Box::pin(stream),
            Some(pace) => paced(stream, pace),
        }
    }
}

/// `stream` with a wait of `pace` before each text and reasoning delta and before the
/// `finish` ([`Turn::pace`]).
fn paced(
    stream: impl futures::Stream<Item = Result<ChunkKind, ApiError>> + Send + 'static,
    pace: std::time::Duration,
) -> ModelStream {
    Box::pin(futures::StreamExt::then(stream, move |item| async move {
        if let Ok(
            ChunkKind::TextDelta { .. }
            | ChunkKind::ReasoningDelta { .. }
            | ChunkKind::Finish { .. },
        ) = &item
        {
            Delay::new(pace).await;
        }
        item
    }))
}

/// Whether a [`Delay`] is over, and the task to wake then.
type Wake = Arc<Mutex<(bool, Option<std::task::Waker>)>>;

/// A wait of a set length on any executor: a helper thread sleeps it, then wakes the task.
struct Delay {
    until: std::time::Instant,
    /// Whether the wait is over, and the task to wake then; shared with the helper thread
    /// once it runs.
    shared: Option<Wake>,
}

impl Delay {
    fn new(length: std::time::Duration) -> Self {
        Delay {
            until: std::time::Instant::now() + length,
            shared: None,
        }
    }
}

impl std::future::Future for Delay {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let until = self.until;
        if std::time::Instant::now() >= until {
            return std::task::Poll::Ready(());
        }
        if let Some(shared) = &self.shared {
            let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
            if s.0 {
                return std::task::Poll::Ready(());
            }
            s.1 = Some(cx.waker().clone());
            return std::task::Poll::Pending;
        }
        let shared: Wake = Arc::new(Mutex::new((false, Some(cx.waker().clone()))));
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("scripted-model-pace".into())
            .spawn(move || {
                let now = std::time::Instant::now();
                if until > now {
                    std::thread::sleep(until - now);
                }
                let mut s = theirs.lock().unwrap_or_else(PoisonError::into_inner);
                s.0 = true;
                if let Some(waker) = s.1.take() {
                    waker.wake();
                }
            });
        match spawned {
            Ok(_) => {
                self.shared = Some(shared);
                std::task::Poll::Pending
            }
            // No thread to wait on: the delta comes at once rather than never.
            Err(_) => std::task::Poll::Ready(()),
        }
    }
}

type Responder = dyn Fn(&ModelRequest, usize) -> Turn + Send + Sync;

/// The script and the records, shared by every handle of a model.
struct Inner {
    turns: Mutex<VecDeque<Turn>>,
    cycle: bool,
    responder: Option<Box<Responder>>,
    requests: Mutex<Vec<ModelRequest>>,
    calls: Mutex<usize>,
}

/// A model that plays scripted turns and records every request; the offline default for
/// examples and tests. Clones share the script and the records; [`named`](ScriptedModel::named)
/// and [`without_recording`](ScriptedModel::without_recording) change only their handle.
///
/// ```
/// # tokio_test_shim::run(async {
/// use processors_runtime::model::{LanguageModel, ScriptedModel, Turn, ModelRequest};
/// use futures::StreamExt;
/// let model = ScriptedModel::new([Turn::deltas(["Hel", "lo"])]);
/// let stream = model.stream(ModelRequest::default()).await.unwrap();
/// let chunks: Vec<_> = stream.collect().await;
/// assert_eq!(chunks.len(), 5); // text-start, 2 deltas, text-end, finish
/// assert_eq!(model.requests().len(), 1);
/// # });
/// # mod tokio_test_shim { pub fn run<F: std::future::Future>(f: F) -> F::Output { futures::executor::block_on(f) } }
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    id: Arc<str>,
    record: bool,
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("id", &self.id)
            .field("calls", &self.calls())
            .finish()
    }
}

impl ScriptedModel {
    fn build(turns: VecDeque<Turn>, cycle: bool, responder: Option<Box<Responder>>) -> Self {
        ScriptedModel {
            id: Arc::from("scripted"),
            record: true,
            inner: Arc::new(Inner {
                turns: Mutex::new(turns),
                cycle,
                responder,
                requests: Mutex::new(Vec::new()),
                calls: Mutex::new(0),
            }),
        }
    }

    /// Plays these turns in order; a call after the last gets an error.
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::build(turns.into_iter().collect(), false, None)
    }

    /// Plays these turns in order, then again from the first, forever.
    pub fn cycle(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::build(turns.into_iter().collect(), true, None)
    }

    /// Answers each call with `f(request, call_index)`.
    pub fn responder(f: impl Fn(&ModelRequest, usize) -> Turn + Send + Sync + 'static) -> Self {
        Self::build(VecDeque::new(), false, Some(Box::new(f)))
    }

    /// This handle stops recording requests (for long benchmark runs); calls still count.
    pub fn without_recording(mut self) -> Self {
        self.record = false;
        self
    }

    /// This handle's `model_id`, sharing the script and the records with the others.
    ///
    /// ```
    /// use processors_runtime::model::{LanguageModel, ScriptedModel};
    /// let model = ScriptedModel::new([]);
    /// let small = model.clone().named("small");
    /// assert_eq!(small.model_id(), "small");
    /// assert_eq!(model.model_id(), "scripted");
    /// ```
    pub fn named(mut self, id: impl Into<String>) -> Self {
        self.id = Arc::from(id.into());
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.inner
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Number of calls so far.
    pub fn calls(&self) -> usize {
        *self
            .inner
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn next_turn(&self, request: &ModelRequest) -> Option<Turn> {
        let index = {
            let mut calls = self
                .inner
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *calls += 1;
            *calls - 1
        };
        if let Some(f) = &self.inner.responder {
            return Some(f(request, index));
        }
        let mut turns = self
            .inner
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let turn = turns.pop_front()?;
        if self.inner.cycle {
            turns.push_back(turn.clone());
        }
        Some(turn)
    }
}

impl LanguageModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model_id(&self) -> &str {
        &self.id
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let turn = self.next_turn(&request);
        if self.record {
            self.inner
                .requests
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(request);
        }
        let result = match turn {
            None => Err(ApiError::other(
                "the scripted model has no turn left for this call",
                false,
            )),
            Some(Turn {
                reject: Some(e), ..
            }) => Err(e),
            Some(turn) => Ok(turn.into_stream()),
        };
        futures::future::ready(result).boxed()
    }
}
