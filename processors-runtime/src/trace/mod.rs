//! A run you can look at: a [`Recorder`] keeps what a run reports to `tracing` (its steps,
//! model calls, each processor's hook calls, each chunk's way through each stream processor,
//! tool calls, retries and trip wires) as a [`Timeline`], written as JSON or as a
//! self-contained HTML page.
//!
//! ```
//! use processors_runtime::prelude::*;
//! use processors_runtime::trace::Recorder;
//! use tracing::instrument::WithSubscriber;
//!
//! # futures::executor::block_on(async {
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::text("hello")]))
//!     .build()
//!     .unwrap();
//! let recorder = Recorder::new();
//! let result = agent.generate("hi").with_subscriber(recorder.clone()).await.unwrap();
//! let timeline = recorder.timeline();
//! assert_eq!(timeline.steps().count(), 1);
//! let page = timeline.to_html();
//! assert!(page.contains(&result.run_id));
//! # });
//! ```
//!
//! The recorder is a `tracing` subscriber: attach it to the run's future
//! (`WithSubscriber::with_subscriber`), which follows the run across threads, or install it
//! for a thread. It keeps the framework's spans and events at every level (the per-chunk
//! events, at `TRACE`, only exist while a subscriber asks for them) and other crates' at
//! `INFO` and above.

mod html;

use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Whether an entry is a span (it lasts) or an event (it happens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A span: a run, a step, a model call, a hook call, a tool call.
    Span,
    /// An event: a retry, a trip wire, a stream summary, a chunk through a processor.
    Event,
}

/// A span or an event of a recorded run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Its position in the timeline.
    pub index: usize,
    /// Span or event.
    pub kind: EntryKind,
    /// The span's name (`agent.run`, `agent.step`, `chat`, `processor`, `tool`), or the
    /// event's message.
    pub name: String,
    /// Its `tracing` target.
    pub target: String,
    /// Its level.
    pub level: String,
    /// The span it is in (by index).
    pub parent: Option<usize>,
    /// When it started, in microseconds from the first entry.
    pub start_us: u64,
    /// When a span was last left, in microseconds from the first entry.
    pub end_us: Option<u64>,
    /// Its fields.
    pub fields: BTreeMap<String, Value>,
}

impl Entry {
    /// A field as text (a string field's value, or the JSON of another).
    pub fn field(&self, name: &str) -> Option<String> {
        self.fields.get(name).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// How long a span lasted, in microseconds.
    pub fn duration_us(&self) -> Option<u64> {
        self.end_us.map(|end| end.saturating_sub(self.start_us))
    }
}

/// What a recorder kept, in the order it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// Every span and event.
    pub entries: Vec<Entry>,
    /// How many spans and events came past the recorder's limit and were not kept
    /// ([`Recorder::with_limit`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Timeline {
    /// The entries directly inside `parent` (the top-level ones with `None`).
    pub fn children(&self, parent: Option<usize>) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(move |e| e.parent == parent)
    }

    /// Every entry inside `ancestor`, at any depth, in order.
    pub fn within(&self, ancestor: usize) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(move |e| self.is_within(e.index, ancestor))
    }

    fn is_within(&self, mut index: usize, ancestor: usize) -> bool {
        // Parents come before their children, so the walk ends.
        while let Some(parent) = self.entries.get(index).and_then(|e| e.parent) {
            if parent == ancestor {
                return true;
            }
            index = parent;
        }
        false
    }

    /// The runs (`agent.run` spans).
    pub fn runs(&self) -> impl Iterator<Item = &Entry> {
        self.spans("agent.run")
    }

    /// The steps (`agent.step` spans), of every run.
    pub fn steps(&self) -> impl Iterator<Item = &Entry> {
        self.spans("agent.step")
    }

    /// The spans with this name.
    pub fn spans<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Entry> {
        self.entries
            .iter()
            .filter(move |e| e.kind == EntryKind::Span && e.name == name)
    }

    /// The timeline as JSON: `{"entries": [...]}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The timeline as a self-contained HTML page (no script, no outside resource): the run,
    /// then per step its model call, hook calls, each chunk's way through the stream
    /// processors, tools, retries and trip wires. Each step of the run's result has a card,
    /// numbered as the result numbers it: a model call the provider refused and that was
    /// tried again too. The JSON is embedded too.
    pub fn to_html(&self) -> String {
        html::page(self)
    }
}

/// A `tracing` subscriber that keeps a [`Timeline`]. Clones share it.
#[derive(Clone, Default)]
pub struct Recorder {
    book: Arc<Mutex<Book>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.with(|b| b.timeline.entries.len());
        f.debug_struct("Recorder")
            .field("entries", &entries)
            .finish()
    }
}

#[derive(Default)]
struct Book {
    /// The most entries kept, when limited.
    limit: Option<usize>,
    origin: Option<Instant>,
    timeline: Timeline,
    /// The spans each thread is in, innermost last.
    stacks: HashMap<ThreadId, Vec<usize>>,
    /// How many times the recorder was cleared: a span's id carries it, so that a span opened
    /// before a `clear` names no entry kept after it.
    generation: u32,
}

impl Book {
    fn now_us(&mut self) -> u64 {
        let origin = *self.origin.get_or_insert_with(Instant::now);
        u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn current(&self) -> Option<usize> {
        self.stacks
            .get(&std::thread::current().id())
            .and_then(|s| s.last().copied())
    }

    /// The id of the span kept at `index`: the generation in the high half, the index from 1
    /// in the low half.
    fn id_of(&self, index: usize) -> Id {
        let low =
            u64::try_from(index).map_or(u64::from(u32::MAX), |i| (i + 1).min(u64::from(u32::MAX)));
        Id::from_u64((u64::from(self.generation) << 32) | low)
    }

    /// The timeline index a span id stands for, when it was given since the last `clear`.
    fn index_of(&self, id: &Id) -> Option<usize> {
        let id = id.into_u64();
        if id >> 32 != u64::from(self.generation) {
            return None;
        }
        usize::try_from(id & u64::from(u32::MAX))
            .ok()?
            .checked_sub(1)
    }

    /// Keeps `entry`, unless the limit is reached: then it is counted as dropped.
    fn push(&mut self, mut entry: Entry) -> Option<usize> {
        let index = self.timeline.entries.len();
        if self.limit.is_some_and(|limit| index >= limit) {
            self.timeline.dropped += 1;
            return None;
        }
        entry.index = index;
        entry.start_us = self.now_us();
        self.timeline.entries.push(entry);
        Some(index)
    }
}

impl Recorder {
    /// An empty recorder, with no limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty recorder that keeps at most `max_entries` spans and events: past them it
    /// only counts what it did not keep ([`Timeline::dropped`]), so a long stream recorded
    /// costs bounded memory.
    ///
    /// ```
    /// use processors_runtime::trace::Recorder;
    ///
    /// let recorder = Recorder::with_limit(2);
    /// tracing::subscriber::with_default(recorder.clone(), || {
    ///     for i in 0..5 {
    ///         tracing::info!(target: "processors", i, "chunk");
    ///     }
    /// });
    /// let timeline = recorder.timeline();
    /// assert_eq!((timeline.entries.len(), timeline.dropped), (2, 3));
    /// ```
    pub fn with_limit(max_entries: usize) -> Self {
        let recorder = Self::default();
        recorder.with(|b| b.limit = Some(max_entries));
        recorder
    }

    /// What it kept so far.
    pub fn timeline(&self) -> Timeline {
        self.with(|b| b.timeline.clone())
    }

    /// Forgets what it kept (its limit stays). A span opened before and still open records
    /// nothing after.
    pub fn clear(&self) {
        self.with(|b| {
            *b = Book {
                limit: b.limit,
                generation: b.generation.wrapping_add(1),
                ..Book::default()
            }
        });
    }

    fn with<T>(&self, f: impl FnOnce(&mut Book) -> T) -> T {
        f(&mut self.book.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn parent_of(b: &Book, explicit: Option<&Id>, contextual: bool) -> Option<usize> {
        match explicit {
            Some(id) => b.index_of(id),
            None if contextual => b.current(),
            None => None,
        }
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().to_owned(), Value::String(value.to_owned()));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::Bool(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
}

/// Whether the recorder keeps what `metadata` describes: the framework's at every level,
/// the rest at `INFO` and above.
fn kept(metadata: &Metadata<'_>) -> bool {
    metadata.target().starts_with("processors") || *metadata.level() <= Level::INFO
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        kept(metadata)
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        self.with(|b| {
            let mut fields = BTreeMap::new();
            attrs.record(&mut Fields(&mut fields));
            let meta = attrs.metadata();
            let entry = Entry {
                index: 0,
                kind: EntryKind::Span,
                name: meta.name().to_owned(),
                target: meta.target().to_owned(),
                level: meta.level().to_string(),
                parent: Self::parent_of(b, attrs.parent(), attrs.is_contextual()),
                start_us: 0,
                end_us: None,
                fields,
            };
            // A span past the limit gets an id that names no entry: what it records, and
            // what happens inside it, is not kept.
            b.push(entry)
                .map_or(Id::from_u64(u64::MAX), |index| b.id_of(index))
        })
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        self.with(|b| {
            if let Some(e) = b.index_of(span).and_then(|i| b.timeline.entries.get_mut(i)) {
                values.record(&mut Fields(&mut e.fields));
            }
        });
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        self.with(|b| {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            let name = match fields.remove("message") {
                Some(Value::String(m)) => m,
                _ => event.metadata().name().to_owned(),
            };
            let meta = event.metadata();
            let entry = Entry {
                index: 0,
                kind: EntryKind::Event,
                name,
                target: meta.target().to_owned(),
                level: meta.level().to_string(),
                parent: Self::parent_of(b, event.parent(), event.is_contextual()),
                start_us: 0,
                end_us: None,
                fields,
            };
            b.push(entry);
        });
    }

    fn enter(&self, span: &Id) {
        self.with(|b| {
            if let Some(i) = b.index_of(span) {
                b.stacks
                    .entry(std::thread::current().id())
                    .or_default()
                    .push(i);
            }
        });
    }

    fn exit(&self, span: &Id) {
        self.with(|b| {
            let now = b.now_us();
            if let Some(i) = b.index_of(span) {
                if let Some(stack) = b.stacks.get_mut(&std::thread::current().id())
                    && let Some(at) = stack.iter().rposition(|&s| s == i)
                {
                    stack.remove(at);
                }
                if let Some(e) = b.timeline.entries.get_mut(i) {
                    e.end_us = Some(now);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_open_across_a_clear_names_nothing_kept_after_it() {
        let recorder = Recorder::new();
        tracing::subscriber::with_default(recorder.clone(), || {
            let before =
                tracing::info_span!(target: "processors", "before", x = tracing::field::Empty);
            let entered = before.enter();
            recorder.clear();
            tracing::info!(target: "processors", "after");
            before.record("x", 1);
            drop(entered);
        });
        let t = recorder.timeline();
        assert_eq!(t.entries.len(), 1);
        let after = &t.entries[0];
        assert_eq!((after.name.as_str(), after.parent), ("after", None));
        assert!(!after.fields.contains_key("x"), "{after:?}");
        assert_eq!(after.end_us, None);
    }
}
