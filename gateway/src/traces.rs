//! Run pages on demand: a request with `x-processors-trace: 1` is recorded (its wrapped
//! models' calls, every hook, each chunk's way through each stream processor), and its page
//! is served to the key that asked, at `GET /v1/traces/{id}`, while it is among the last ones
//! kept.

use crate::keys::KeyHash;
use futures::Stream;
use processors_runtime::trace::{Recorder, Timeline};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use tracing::Dispatch;

/// The header that asks for a request's trace.
pub(crate) const TRACE_HEADER: &str = "x-processors-trace";
/// The header of the answer that names it.
pub(crate) const TRACE_ID_HEADER: &str = "x-processors-trace-id";

/// One request being recorded.
pub(crate) struct Trace {
    pub(crate) id: String,
    key: KeyHash,
    recorder: Recorder,
}

impl Trace {
    /// A trace for the key `key`, of at most `max_entries` spans and events.
    pub(crate) fn new(key: KeyHash, max_entries: usize) -> Trace {
        Trace {
            id: processors_runtime::message::new_id("trace"),
            key,
            recorder: Recorder::with_limit(max_entries),
        }
    }

    /// The dispatcher the request's work runs under.
    pub(crate) fn dispatch(&self) -> Dispatch {
        Dispatch::new(self.recorder.clone())
    }
}

/// The last traces, by id.
pub(crate) struct Traces {
    keep: usize,
    /// The most spans and events one trace keeps.
    pub(crate) max_entries: usize,
    kept: Mutex<VecDeque<(String, KeyHash, Timeline)>>,
}

impl Traces {
    pub(crate) fn new(keep: usize, max_entries: usize) -> Traces {
        Traces {
            keep,
            max_entries,
            kept: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether traces are kept at all.
    pub(crate) fn on(&self) -> bool {
        self.keep > 0
    }

    /// Keeps a finished trace, forgetting the oldest past the limit.
    pub(crate) fn keep(&self, trace: Trace) {
        let timeline = trace.recorder.timeline();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.push_back((trace.id, trace.key, timeline));
        while kept.len() > self.keep {
            kept.pop_front();
        }
    }

    /// The trace `id`, if the key `key` asked for it.
    pub(crate) fn get(&self, id: &str, key: &KeyHash) -> Option<Timeline> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter()
            .find(|(i, k, _)| i == id && k == key)
            .map(|(_, _, t)| t.clone())
    }
}

/// A stream polled under a dispatcher: the spans its polls open are recorded there.
pub(crate) struct Dispatched<S> {
    inner: S,
    dispatch: Dispatch,
}

impl<S> Dispatched<S> {
    pub(crate) fn new(inner: S, dispatch: Dispatch) -> Dispatched<S> {
        Dispatched { inner, dispatch }
    }
}

impl<S: Stream + Unpin> Stream for Dispatched<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        tracing::dispatcher::with_default(&this.dispatch, || {
            Pin::new(&mut this.inner).poll_next(cx)
        })
    }
}
