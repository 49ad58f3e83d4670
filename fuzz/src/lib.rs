//! What the fuzz targets share: generators of plausible provider data, and the checks every
//! decoded stream must pass.

use arbitrary::Arbitrary;
use processors_providers::__fuzz::{Protocol, Stream};
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::ApiError;
use serde_json::{Map, Value, json};
use std::collections::{HashSet, VecDeque};

/// A piece of text: usually one a provider would send, sometimes anything.
#[derive(Arbitrary, Debug, Clone)]
pub enum Text {
    Known(u8),
    Any(String),
}

const KNOWN_TEXT: &[&str] = &[
    "",
    "Hi",
    " there",
    "é€😀",
    "{",
    "}",
    "{\"city\":",
    "\"Oslo\"}",
    "{\"x\":1}",
    "[DONE]",
    "call_1",
    "toolu_1",
    "call-0",
    "weather",
    "\u{fffd}",
    "\n",
    "null",
];

impl Text {
    pub fn get(&self) -> String {
        match self {
            Text::Known(i) => KNOWN_TEXT[usize::from(*i) % KNOWN_TEXT.len()].to_owned(),
            Text::Any(s) => s.clone(),
        }
    }
}

/// A number where a provider sends one: small, huge, negative, fractional, or not a number.
#[derive(Arbitrary, Debug, Clone)]
pub enum Number {
    Small(u8),
    Huge(u64),
    Negative(i8),
    Fraction(u8),
    Text(Text),
    Null,
}

impl Number {
    pub fn value(&self) -> Value {
        match self {
            Number::Small(n) => json!(n % 4),
            Number::Huge(n) => json!(u64::MAX - n % 4),
            Number::Negative(n) => json!(-i64::from(n.unsigned_abs()) - 1),
            Number::Fraction(n) => json!(f64::from(*n) / 2.0),
            Number::Text(t) => json!(t.get()),
            Number::Null => Value::Null,
        }
    }
}

/// Any JSON value, for garbage in places that expect a shape.
#[derive(Arbitrary, Debug, Clone)]
pub enum AnyJson {
    Null,
    Bool(bool),
    Number(Number),
    String(Text),
    Array(Vec<AnyJson>),
    Object(Vec<(Text, AnyJson)>),
}

impl AnyJson {
    pub fn value(&self) -> Value {
        match self {
            AnyJson::Null => Value::Null,
            AnyJson::Bool(b) => json!(b),
            AnyJson::Number(n) => n.value(),
            AnyJson::String(t) => json!(t.get()),
            AnyJson::Array(items) => items.iter().map(AnyJson::value).collect(),
            AnyJson::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.get(), v.value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// A field that is usually well formed, sometimes missing, sometimes of the wrong kind.
#[derive(Arbitrary, Debug, Clone)]
pub enum Field<T> {
    Good(T),
    Missing,
    Garbage(AnyJson),
}

impl<T> Field<T> {
    /// Puts the field into `object` under `key`.
    pub fn put(&self, object: &mut Map<String, Value>, key: &str, good: impl FnOnce(&T) -> Value) {
        match self {
            Field::Good(v) => {
                object.insert(key.to_owned(), good(v));
            }
            Field::Missing => {}
            Field::Garbage(g) => {
                object.insert(key.to_owned(), g.value());
            }
        }
    }
}

/// One event of the stream as it goes over the wire.
#[derive(Arbitrary, Debug, Clone)]
pub enum Wire<E> {
    /// A well-formed-ish event of the protocol.
    Event {
        event: E,
        /// The `event:` line, when there is one (Anthropic names every event).
        name: Option<Text>,
    },
    /// Arbitrary bytes as the data (not JSON, not UTF-8).
    Raw(Vec<u8>),
    /// Any JSON document as the data.
    Json(AnyJson),
    /// A comment line, as keep-alives are.
    Comment,
}

/// One protocol event.
pub trait ProtocolEvent {
    /// Its data (JSON, except for markers such as `[DONE]`).
    fn data(&self) -> String;
}

/// The event stream's bytes.
pub fn wire_bytes<E: ProtocolEvent>(events: &[Wire<E>], crlf: bool) -> Vec<u8> {
    let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let mut out = Vec::new();
    for wire in events {
        match wire {
            Wire::Event { event, name } => {
                if let Some(name) = name {
                    out.extend_from_slice(b"event: ");
                    out.extend_from_slice(name.get().replace(['\r', '\n'], "").as_bytes());
                    out.extend_from_slice(eol);
                }
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(event.data().as_bytes());
            }
            Wire::Raw(bytes) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(bytes);
            }
            Wire::Json(json) => {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(json.value().to_string().as_bytes());
            }
            Wire::Comment => out.extend_from_slice(b": keep-alive"),
        }
        out.extend_from_slice(eol);
        out.extend_from_slice(eol);
    }
    out
}

/// What a provider's stream gave: its chunks, then the error that ended it, if one did.
pub type Items = (Vec<ChunkKind>, Option<ApiError>);

/// Feeds `bytes` cut at `cuts` to a decoder of `protocol` as the provider's driver does:
/// until the provider finishes, fails, or the body ends.
pub fn decode_stream(protocol: Protocol, bytes: &[u8], cuts: &[u16]) -> Items {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| usize::from(c) % (bytes.len() + 1))
        .chain([0, bytes.len()])
        .collect();
    cuts.sort_unstable();
    let mut stream = Stream::new(protocol);
    let mut out = VecDeque::new();
    for window in cuts.windows(2) {
        match stream.feed(&bytes[window[0]..window[1]], &mut out) {
            Ok(false) => {}
            Ok(true) => return (out.into(), None),
            Err(e) => return (out.into(), Some(e)),
        }
    }
    let end = stream.end(&mut out).err();
    (out.into(), end)
}

/// The items of a whole answer as the provider replays it.
pub fn answer_items(protocol: Protocol, answer: &Value) -> Option<Items> {
    let mut chunks = Vec::new();
    for item in processors_providers::__fuzz::answer(protocol, answer)? {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(e) => return Some((chunks, Some(e))),
        }
    }
    Some((chunks, None))
}

/// The checks every decoded stream passes: blocks start, stream and end in order under
/// unique ids; tool calls have unique ids, and their deltas name them; one finish ends a
/// stream that did not fail, and nothing follows it.
pub fn check(items: &Items) {
    let (chunks, error) = items;
    let mut open: HashSet<&str> = HashSet::new();
    let mut started: HashSet<&str> = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    let mut delta_ids: Vec<&str> = Vec::new();
    let mut finishes = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(finishes, 0, "chunk {i} after the finish: {chunks:#?}");
        match chunk {
            ChunkKind::TextStart { id } | ChunkKind::ReasoningStart { id } => {
                assert!(started.insert(id), "block {id} started twice: {chunks:#?}");
                open.insert(id);
            }
            ChunkKind::TextDelta { id, .. } | ChunkKind::ReasoningDelta { id, .. } => {
                assert!(
                    open.contains(&**id),
                    "delta of block {id}, not open: {chunks:#?}"
                );
            }
            ChunkKind::TextEnd { id } | ChunkKind::ReasoningEnd { id } => {
                assert!(
                    open.remove(&**id),
                    "end of block {id}, not open: {chunks:#?}"
                );
            }
            ChunkKind::ToolCallDelta { tool_call_id, .. } => {
                assert!(
                    !calls.contains(tool_call_id.as_str()),
                    "delta of call {tool_call_id} after the call: {chunks:#?}"
                );
                delta_ids.push(tool_call_id);
            }
            ChunkKind::ToolCall(call) => {
                assert!(
                    calls.insert(&call.tool_call_id),
                    "two tool calls with id {}: {chunks:#?}",
                    call.tool_call_id
                );
            }
            ChunkKind::Finish { .. } => {
                finishes += 1;
                assert!(
                    open.is_empty(),
                    "finish with open blocks {open:?}: {chunks:#?}"
                );
            }
            other => panic!("a provider emitted {other:?}"),
        }
    }
    match error {
        None => {
            assert_eq!(finishes, 1, "a stream that did not fail ends with a finish");
            for id in delta_ids {
                assert!(
                    calls.contains(id),
                    "deltas of call {id}, never called: {chunks:#?}"
                );
            }
        }
        Some(e) => {
            assert_eq!(finishes, 0, "a finished stream failed: {e:?}");
            assert!(!e.message.is_empty(), "an error without a message");
        }
    }
}
