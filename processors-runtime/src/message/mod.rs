//! Messages: the unit of conversation, their parts, and the run's live [`MessageList`].

mod list;
mod text;

pub use list::{MessageList, MessageSource, ReconcileError};
pub use text::Text;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or program) talking to the agent.
    User,
    /// The model.
    Assistant,
    /// Instructions for the model.
    System,
    /// Tool results.
    Tool,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: Text,
    },
    /// Model reasoning, kept apart from the answer.
    Reasoning {
        /// The reasoning text.
        text: Text,
    },
    /// A call of a tool by the model.
    ToolCall(ToolCall),
    /// The result of a tool call.
    ToolResult(ToolResult),
    /// A file, inline (base64) or by URL.
    File {
        /// Its media type, such as `image/png`.
        mime_type: String,
        /// Base64 data or a URL.
        data: String,
    },
    /// A custom data part (what a persisted `data-*` chunk becomes).
    Data {
        /// The name after `data-`.
        name: String,
        /// The payload.
        data: Value,
    },
}

/// A call of a tool by the model: a message part, a `tool-call` chunk, and a step's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's id of the call.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments, as JSON.
    pub args: Value,
}

/// The result of a tool call: a message part, a `tool-result` chunk, and a step's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The result, as JSON (the error message when `is_error`).
    pub result: Value,
    /// Whether the tool failed (the result then holds the error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// What the model reads instead of `result`, when a `process_tool_result` processor set
    /// a copy for it ([`ToolResultAction::ForModel`](crate::processor::ToolResultAction)):
    /// the prompt carries this, the history and the step keep `result` whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_output: Option<Value>,
}

impl ToolResult {
    /// The result of the call `tool_call_id` of `tool_name`.
    ///
    /// ```
    /// use processors_runtime::ToolResult;
    /// let r = ToolResult::new("call-1", "weather", serde_json::json!({ "temp": 21 }));
    /// assert!(!r.is_error);
    /// assert_eq!(r.for_model(), &serde_json::json!({ "temp": 21 }));
    /// ```
    pub fn new(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        result: Value,
    ) -> Self {
        ToolResult {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            result,
            is_error: false,
            model_output: None,
        }
    }

    /// The failure of the call `tool_call_id` of `tool_name`, with the error's message.
    pub fn error(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::new(tool_call_id, tool_name, Value::String(message.into()))
        }
    }

    /// What the model reads: the copy set for it, or else the result.
    pub fn for_model(&self) -> &Value {
        self.model_output.as_ref().unwrap_or(&self.result)
    }
}

/// A message's content: its parts in order, in format version 2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// The format version (always 2).
    pub format: u8,
    /// The parts, in order.
    pub parts: Vec<Part>,
}

impl Default for Content {
    fn default() -> Self {
        Content {
            format: 2,
            parts: Vec::new(),
        }
    }
}

/// A message of the conversation.
///
/// ```
/// use processors_runtime::message::{Message, Role};
/// let m = Message::user("hello");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "hello");
/// let json = serde_json::to_string(&m).unwrap();
/// let back: Message = serde_json::from_str(&json).unwrap();
/// assert_eq!(back, m);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id; processors return messages by id and the list reconciles on it.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// The parts.
    pub content: Content,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// The memory thread it belongs to, once saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The resource (user, tenant) it belongs to, once saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A unique id with the given prefix (`msg-…`, `run-…`): a stamp of this process, then a
/// counter, both in base 62 (`0-9a-zA-Z`). Stored conversations outlive the process and may
/// be shared by several processes, on several machines: the stamp mixes the start time and
/// the process id with the process's random hashing seed, so two processes never hand out
/// the same ids.
pub fn new_id(prefix: &str) -> String {
    match head(prefix) {
        Some(head) => {
            let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
            let (digits, len) = base62_digits(n);
            let mut id = String::with_capacity(head.len() + len);
            id.push_str(head);
            // ASCII digits, pushed as characters: nothing to validate.
            id.extend(digits[..len].iter().map(|&d| char::from(d)));
            id
        }
        None => {
            let mut buf = IdBuf::new();
            String::from(buf.fill(prefix))
        }
    }
}

/// `prefix-stamp-` for the prefixes every run makes ids with (`msg`, `run`), written once:
/// an id of theirs is this head and the counter.
fn head(prefix: &str) -> Option<&'static str> {
    static MSG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    static RUN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let cell = match prefix {
        "msg" => &MSG,
        "run" => &RUN,
        _ => return None,
    };
    Some(cell.get_or_init(|| {
        let mut buf = IdBuf::new();
        buf.push_head(prefix);
        // The prefix's whole characters and ASCII digits.
        String::from(std::str::from_utf8(&buf.bytes[..buf.len]).unwrap_or_default())
    }))
}

/// Room for an id written without `format!` (which made ids a sixth of a `generate()`
/// call's work): a prefix of up to 16 bytes, the stamp (11 digits) and the counter (up to 11).
struct IdBuf {
    bytes: [u8; 16 + 1 + 11 + 1 + 11],
    len: usize,
}

impl IdBuf {
    fn new() -> Self {
        IdBuf {
            bytes: [0; 16 + 1 + 11 + 1 + 11],
            len: 0,
        }
    }

    /// Writes `prefix-stamp-counter` (a longer prefix is cut at 16 bytes, on a character
    /// boundary).
    fn fill(&mut self, prefix: &str) -> &str {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        match head(prefix) {
            Some(head) => self.push(head.as_bytes()),
            None => self.push_head(prefix),
        }
        self.push_base62(n);
        // Only the prefix's whole characters and ASCII digits were written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }

    /// Writes `prefix-stamp-`.
    fn push_head(&mut self, prefix: &str) {
        let mut cut = prefix.len().min(16);
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        self.push(&prefix.as_bytes()[..cut]);
        self.push(b"-");
        let (stamp, digits) = process_stamp_digits();
        self.push(&stamp[..*digits]);
        self.push(b"-");
    }

    fn push(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// `n` in base 62, most significant digit first, without leading zeros.
    fn push_base62(&mut self, n: u64) {
        let (digits, len) = base62_digits(n);
        self.push(&digits[..len]);
    }
}

/// `n` in base 62, most significant digit first, without leading zeros: the digits and how
/// many there are.
fn base62_digits(mut n: u64) -> ([u8; 11], usize) {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut digits = [0u8; 11];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = DIGITS[(n % 62) as usize];
        n /= 62;
        if n == 0 {
            break;
        }
    }
    digits.copy_within(i.., 0);
    (digits, digits.len() - i)
}

/// The process stamp in base 62, written once.
fn process_stamp_digits() -> &'static ([u8; 11], usize) {
    static DIGITS: std::sync::OnceLock<([u8; 11], usize)> = std::sync::OnceLock::new();
    DIGITS.get_or_init(|| base62_digits(process_stamp()))
}

fn process_stamp() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static STAMP: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *STAMP.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(now_millis());
        h.write_u32(std::process::id());
        h.finish()
    })
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Message {
    /// A message with the given role and parts, a fresh id and the current time.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Message {
            id: new_id("msg"),
            role,
            content: Content { format: 2, parts },
            created_at: now_millis(),
            thread_id: None,
            resource_id: None,
            metadata: None,
        }
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<Text>) -> Self {
        Self::new(Role::User, vec![Part::Text { text: text.into() }])
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<Text>) -> Self {
        Self::new(Role::Assistant, vec![Part::Text { text: text.into() }])
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<Text>) -> Self {
        Self::new(Role::System, vec![Part::Text { text: text.into() }])
    }

    /// The same message with another id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The text parts, concatenated.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content.parts {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// Replaces every text part by one part holding `text` (kept at the first text part's place).
    pub fn set_text(&mut self, text: impl Into<Text>) {
        let mut text = Some(text.into());
        let mut parts = Vec::with_capacity(self.content.parts.len());
        for part in self.content.parts.drain(..) {
            match part {
                Part::Text { .. } => {
                    if let Some(t) = text.take() {
                        parts.push(Part::Text { text: t });
                    }
                }
                other => parts.push(other),
            }
        }
        if let Some(t) = text {
            parts.push(Part::Text { text: t });
        }
        self.content.parts = parts;
    }

    /// The tool calls of this message.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// The text of `parts`, concatenated: the one text part's buffer itself when there is only
/// one, so the copies a run keeps of an answer share it.
pub(crate) fn concat_texts<'a>(parts: impl IntoIterator<Item = &'a Part>) -> Text {
    let mut texts = parts.into_iter().filter_map(|p| match p {
        Part::Text { text } => Some(text),
        _ => None,
    });
    let (first, second) = match (texts.next(), texts.next()) {
        (None, _) => return Text::new(),
        (Some(only), None) => return only.clone(),
        (Some(first), Some(second)) => (first, second),
    };
    let mut out = String::with_capacity(first.len() + second.len());
    out.push_str(first);
    out.push_str(second);
    texts.for_each(|t| out.push_str(t));
    Text::from(out)
}

impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Message::user(text)
    }
}

impl From<String> for Message {
    fn from(text: String) -> Self {
        Message::user(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base62(id: &str) -> u64 {
        id.bytes().fold(0u64, |n, b| {
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'z' => b - b'a' + 10,
                b'A'..=b'Z' => b - b'A' + 36,
                _ => panic!("not a base-62 digit: {b}"),
            };
            n * 62 + u64::from(d)
        })
    }

    #[test]
    fn numbers_are_written_in_base_62_without_leading_zeros() {
        for n in [
            0,
            1,
            9,
            10,
            61,
            62,
            3843,
            3844,
            0xdead_beef,
            u64::MAX >> 1,
            u64::MAX,
        ] {
            let mut buf = IdBuf::new();
            buf.push_base62(n);
            let s = std::str::from_utf8(&buf.bytes[..buf.len]).unwrap();
            assert_eq!(base62(s), n, "{s}");
            assert!(n == 0 || !s.starts_with('0'), "{s}");
        }
        let mut buf = IdBuf::new();
        buf.push_base62(u64::MAX);
        assert_eq!(buf.len, 11);
    }

    #[test]
    fn ids_are_the_prefix_the_process_stamp_and_a_counter() {
        let (a, b) = (new_id("msg"), new_id("msg"));
        assert_ne!(a, b);
        for id in [&a, &b] {
            let rest = id.strip_prefix("msg-").expect("prefix");
            let (stamp, n) = rest.split_once('-').expect("two dashes");
            assert_eq!(base62(stamp), process_stamp());
            assert!(base62(n) >= 1, "{id}");
        }
        // The counter is the process's: tests running beside this one take ids in between,
        // so the second id's counter is later, not necessarily the next.
        assert!(
            base62(b.rsplit('-').next().unwrap()) > base62(a.rsplit('-').next().unwrap()),
            "{a} then {b}"
        );
    }

    #[test]
    fn a_long_prefix_is_cut_on_a_character_boundary() {
        let id = new_id("ééééééééé-long-prefix");
        assert!(id.starts_with("éééééééé-"), "{id}");
    }

    #[test]
    fn run_ids_fit_inline() {
        // `run-`, the stamp's 11 characters and the counter's 1 to 6 fit a `RunId` without an
        // allocation.
        let id = crate::chunk::RunId::from(new_id("run").as_str());
        assert!(id.starts_with("run-") && id.len() <= 23, "{}", &*id);
        assert!(id.is_inline());
    }
}
