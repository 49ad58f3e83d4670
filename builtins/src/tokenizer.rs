//! [`Tokenizer`]: counts tokens as a provider would, for the built-ins that budget a prompt
//! or an answer ([`TokenLimiter`](crate::TokenLimiter),
//! [`ContextLengthHandler`](crate::ContextLengthHandler)).
//!
//! [`Tokenizer::ByModel`] (the default) counts with the encoding of the model a hook sees:
//! `o200k_base` for GPT-4o, GPT-4.1, GPT-5 and the o-series, `cl100k_base` for GPT-4 and
//! GPT-3.5, and `o200k_base` for any other model or where a hook sees none.
//! [`Tokenizer::Estimate`] loads no tokenizer and counts one token per four bytes of UTF-8.
//! The encodings are compiled into the binary: counting never touches the network.
//!
//! The encodings come with the feature `tiktoken` (on by default). Without it the crate
//! builds no byte-pair encoder, `Tokenizer::O200k` and `Tokenizer::Cl100k` do not exist, and
//! `ByModel` counts as `Estimate` does.
//!
//! A message costs its text, its tool calls (name and JSON arguments) and tool results (the
//! JSON result, with media in it counted as a file), 85 tokens per file, and 3 tokens of
//! framing; a prompt costs 3 more, and the tools it offers their names, descriptions and
//! schemas. Reasoning and `data` parts are not sent to providers and cost nothing.

use processors_runtime::message::{Message, Part};
use processors_runtime::model::ToolSpec;
use serde_json::Value;

/// The byte-pair encoder.
#[cfg(feature = "tiktoken")]
type Bpe = tiktoken_rs::CoreBPE;

/// No byte-pair encoder without the feature `tiktoken`: a type with no value, so that the
/// code that counts with one is written once and never runs.
#[cfg(not(feature = "tiktoken"))]
enum Bpe {}

#[cfg(not(feature = "tiktoken"))]
impl Bpe {
    fn encode_ordinary(&self, _: &str) -> Vec<u32> {
        match *self {}
    }

    fn decode_bytes(&self, _: &[u32]) -> Result<Vec<u8>, std::convert::Infallible> {
        match *self {}
    }
}

/// Tokens of framing per message (role and separators), as OpenAI's chat format counts them.
pub(crate) const TOKENS_PER_MESSAGE: usize = 3;
/// Tokens that prime the reply, once per prompt.
pub(crate) const TOKENS_PER_PROMPT: usize = 3;
/// What a file part is counted as: a low-detail image's cost.
pub(crate) const TOKENS_PER_FILE: usize = 85;
/// Texts are encoded in pieces of at most this many bytes, cut at word boundaries where there
/// is one, which bounds the tokenizer's work on one piece (and its stack on long runs of
/// whitespace).
pub(crate) const MAX_PIECE: usize = 8 * 1024;

/// Which tokenizer counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Tokenizer {
    /// The encoding of the model a hook sees; `o200k_base` where a hook sees none. Without
    /// the feature `tiktoken`, the estimate.
    #[default]
    ByModel,
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-5, the o-series (feature `tiktoken`).
    #[cfg(feature = "tiktoken")]
    O200k,
    /// `cl100k_base`: GPT-4, GPT-3.5 (feature `tiktoken`).
    #[cfg(feature = "tiktoken")]
    Cl100k,
    /// No tokenizer: one token per four bytes of UTF-8, rounded up.
    Estimate,
    /// A counter of your own ([`Counter`]), for a model whose tokenizer is not one of these.
    Custom(Counter),
}

/// A token counter of your own, named for reports: `Tokenizer::Custom(Counter::new(…))`.
///
/// The counter must count a text cut where a word begins as the sum of its two parts (as
/// tokenizers that split text into words first do), and no more tokens than the text has
/// bytes: the answer is counted as it streams, a delta at a time. A prefix is found by asking
/// it for the counts of prefixes.
///
/// ```
/// use processors::builtins::tokenizer::{Counter, Tokenizer};
/// let words = Tokenizer::Custom(Counter::new("words", |text| text.split_whitespace().count()));
/// assert_eq!(words.count("one two three"), 3);
/// assert_eq!(words.prefix("one two three", 2), "one two ");
/// ```
#[derive(Clone, Copy)]
pub struct Counter {
    name: &'static str,
    count: fn(&str) -> usize,
}

impl Counter {
    /// A counter called `name` (in reports and trip wires' metadata) that counts with `count`.
    pub const fn new(name: &'static str, count: fn(&str) -> usize) -> Counter {
        Counter { name, count }
    }

    /// Its name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// Counters are told apart by their names.
impl PartialEq for Counter {
    fn eq(&self, other: &Counter) -> bool {
        self.name == other.name
    }
}

impl Eq for Counter {}

impl std::hash::Hash for Counter {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Counter").field(&self.name).finish()
    }
}

impl Tokenizer {
    /// The encoding of a model, by its id (a `provider/` prefix and an `ft:` fine-tune prefix
    /// are ignored): `cl100k_base` for GPT-4 and GPT-3.5 (and OpenAI's embedding models),
    /// Without the feature `tiktoken` there is no encoding: the estimate, for every model.
    #[cfg(not(feature = "tiktoken"))]
    pub fn for_model(_model_id: &str) -> Tokenizer {
        Tokenizer::Estimate
    }

    /// The encoding of a model, by its id (a `provider/` prefix and an `ft:` fine-tune prefix
    /// are ignored): `cl100k_base` for GPT-4 and GPT-3.5 (and OpenAI's embedding models),
    /// `o200k_base` for every other model.
    ///
    /// ```
    /// use processors::builtins::tokenizer::Tokenizer;
    /// assert_eq!(Tokenizer::for_model("gpt-4o-mini"), Tokenizer::O200k);
    /// assert_eq!(Tokenizer::for_model("openai/gpt-4-turbo"), Tokenizer::Cl100k);
    /// assert_eq!(Tokenizer::for_model("ft:gpt-3.5-turbo:acme::1"), Tokenizer::Cl100k);
    /// assert_eq!(Tokenizer::for_model("o3"), Tokenizer::O200k);
    /// assert_eq!(Tokenizer::for_model("claude-sonnet-4"), Tokenizer::O200k);
    /// ```
    #[cfg(feature = "tiktoken")]
    pub fn for_model(model_id: &str) -> Tokenizer {
        let id = model_id.rsplit('/').next().unwrap_or(model_id);
        let id = match id.strip_prefix("ft:") {
            Some(rest) => rest.split(':').next().unwrap_or(rest),
            None => id,
        };
        let o200k = ["gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o"];
        let cl100k = [
            "gpt-4",
            "gpt-3.5",
            "gpt-35",
            "text-embedding-",
            "davinci-002",
            "babbage-002",
        ];
        if o200k.iter().any(|p| id.starts_with(p)) {
            Tokenizer::O200k
        } else if cl100k.iter().any(|p| id.starts_with(p)) {
            Tokenizer::Cl100k
        } else {
            Tokenizer::O200k
        }
    }

    /// The encoding to count with when the hook sees `model` (or no model).
    pub(crate) fn resolve(self, model: Option<&str>) -> Tokenizer {
        match (self, model) {
            (Tokenizer::ByModel, Some(id)) => Tokenizer::for_model(id),
            (Tokenizer::ByModel, None) => Tokenizer::for_model(""),
            (t, _) => t,
        }
    }

    /// The encoding's name, as reports give it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "tiktoken")]
            Tokenizer::ByModel | Tokenizer::O200k => "o200k_base",
            #[cfg(feature = "tiktoken")]
            Tokenizer::Cl100k => "cl100k_base",
            #[cfg(not(feature = "tiktoken"))]
            Tokenizer::ByModel => "estimate",
            Tokenizer::Estimate => "estimate",
            Tokenizer::Custom(c) => c.name,
        }
    }

    /// The byte-pair encoder, loaded on first use (`None` for the estimate).
    fn bpe(self) -> Option<&'static Bpe> {
        match self {
            #[cfg(feature = "tiktoken")]
            Tokenizer::ByModel | Tokenizer::O200k => Some(tiktoken_rs::o200k_base_singleton()),
            #[cfg(feature = "tiktoken")]
            Tokenizer::Cl100k => Some(tiktoken_rs::cl100k_base_singleton()),
            #[cfg(not(feature = "tiktoken"))]
            Tokenizer::ByModel => None,
            Tokenizer::Estimate | Tokenizer::Custom(_) => None,
        }
    }

    /// Loads the encoder now (`o200k_base` for `ByModel`), so that no hook pays for it.
    pub(crate) fn load(self) {
        let _ = self.bpe();
    }

    /// The number of tokens of `text`.
    ///
    /// ```
    /// use processors::builtins::tokenizer::Tokenizer;
    /// assert_eq!(Tokenizer::O200k.count("Hello, world!"), 4);
    /// assert_eq!(Tokenizer::Estimate.count("Hello, world!"), 4); // 13 bytes / 4, rounded up
    /// ```
    pub fn count(self, text: &str) -> usize {
        if let Tokenizer::Custom(c) = self {
            return (c.count)(text);
        }
        match self.bpe() {
            Some(bpe) => pieces(text).map(|p| bpe.encode_ordinary(p).len()).sum(),
            None => text.len().div_ceil(4),
        }
    }

    /// The tokens of a message as a provider receives it: its text, tool calls (name and JSON
    /// arguments) and tool results, 85 per file and 3 of framing; reasoning and `data` parts
    /// cost nothing. [`Tokenizer::ByModel`] counts with `o200k_base` here.
    ///
    /// ```
    /// use processors::builtins::tokenizer::Tokenizer;
    /// use processors::message::Message;
    /// assert_eq!(Tokenizer::O200k.count_message(&Message::user("Hello, world!")), 3 + 4);
    /// ```
    pub fn count_message(self, message: &Message) -> usize {
        message_tokens(self, message)
    }

    /// The longest prefix of `text` of at most `tokens` tokens, cut at a character boundary.
    ///
    /// ```
    /// use processors::builtins::tokenizer::Tokenizer;
    /// assert_eq!(Tokenizer::O200k.prefix("one two three", 2), "one two");
    /// assert_eq!(Tokenizer::Estimate.prefix("abcdefgh", 1), "abcd");
    /// ```
    pub fn prefix(self, text: &str, tokens: usize) -> &str {
        if let Tokenizer::Custom(c) = self {
            return custom_prefix(c, text, tokens);
        }
        let Some(bpe) = self.bpe() else {
            return &text[..floor_boundary(text, tokens.saturating_mul(4))];
        };
        let (mut start, mut left) = (0, tokens);
        for piece in pieces(text) {
            let encoded = bpe.encode_ordinary(piece);
            if encoded.len() <= left {
                left -= encoded.len();
                start += piece.len();
                continue;
            }
            // The tokens of a piece decode to its bytes, in order: the first `left` of them
            // are its first bytes.
            let len = bpe.decode_bytes(&encoded[..left]).map_or(0, |b| b.len());
            return &text[..floor_boundary(text, start + len)];
        }
        text
    }
}

/// The longest prefix of `text` that `counter` counts at most `tokens` in: a binary search
/// over the character boundaries (a longer prefix never counts fewer).
fn custom_prefix(counter: Counter, text: &str, tokens: usize) -> &str {
    if (counter.count)(text) <= tokens {
        return text;
    }
    let (mut fits, mut over) = (0, text.len());
    while over - fits > 1 {
        let mid = floor_boundary(text, fits + (over - fits) / 2);
        let mid = if mid <= fits {
            // The next boundary after `fits`.
            fits + text[fits..].chars().next().map_or(1, char::len_utf8)
        } else {
            mid
        };
        if mid >= over {
            break;
        }
        match (counter.count)(&text[..mid]) <= tokens {
            true => fits = mid,
            false => over = mid,
        }
    }
    &text[..fits]
}

/// The largest character boundary of `text` at or below `at`.
pub(crate) fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The last place in `text` where a word begins after a space: the tokenizers' pre-splitting
/// always cuts there, so counting both sides apart gives the count of the whole.
pub(crate) fn last_word_start(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (1..bytes.len()).rev().find(|&i| {
        bytes[i] == b' '
            && !bytes[i - 1].is_ascii_whitespace()
            && text[i + 1..]
                .chars()
                .next()
                .is_some_and(char::is_alphabetic)
    })
}

/// `text` in pieces of at most [`MAX_PIECE`] bytes, each cut where a word begins when it can.
pub(crate) fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = if rest.len() <= MAX_PIECE {
            rest.len()
        } else {
            let window = floor_boundary(rest, MAX_PIECE);
            match last_word_start(&rest[..window]) {
                Some(i) => i,
                // One character is at most four bytes: a window is never empty.
                None => window.max(rest.chars().next().map_or(1, char::len_utf8)),
            }
        };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// The tokens of a message as a provider receives it.
pub(crate) fn message_tokens(t: Tokenizer, m: &Message) -> usize {
    let parts: usize = m
        .content
        .parts
        .iter()
        .map(|part| match part {
            Part::Text { text } => t.count(text),
            Part::ToolCall(call) => t.count(&call.tool_name) + t.count(&call.args.to_string()),
            // What the prompt carries: the copy for the model, when a processor set one.
            Part::ToolResult(result) => result_tokens(t, result.for_model()),
            Part::File { .. } => TOKENS_PER_FILE,
            _ => 0,
        })
        .sum();
    TOKENS_PER_MESSAGE + parts
}

/// The tokens of a tool's result: its text, but a media object in it (`{data, mediaType}`,
/// base64, as a tool returns a screenshot or a file) counts as a file part does, not as
/// the text of its data.
fn result_tokens(t: Tokenizer, result: &Value) -> usize {
    if let Value::String(s) = result {
        return t.count(s);
    }
    if !has_media(result) {
        return t.count(&result.to_string());
    }
    let mut files = 0;
    let rest = without_media(result, &mut files);
    t.count(&rest.to_string()) + files * TOKENS_PER_FILE
}

/// Whether `v` is a media object: base64 `data` with its media type (`mediaType`, as tools
/// return it, or `mimeType`).
fn is_media(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    o.get("data").is_some_and(Value::is_string)
        && ["mediaType", "mimeType", "media_type", "mime_type"]
            .iter()
            .any(|k| o.get(*k).is_some_and(Value::is_string))
}

/// Whether `v` holds a media object, at any depth.
fn has_media(v: &Value) -> bool {
    is_media(v)
        || match v {
            Value::Array(items) => items.iter().any(has_media),
            Value::Object(o) => o.values().any(has_media),
            _ => false,
        }
}

/// `v` with each media object in it replaced by `null`, counted in `files`.
fn without_media(v: &Value, files: &mut usize) -> Value {
    if is_media(v) {
        *files += 1;
        return Value::Null;
    }
    match v {
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| without_media(i, files)).collect())
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), without_media(v, files)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The tokens of the tools a prompt offers.
pub(crate) fn tools_tokens<'a>(t: Tokenizer, tools: impl Iterator<Item = &'a ToolSpec>) -> usize {
    tools
        .map(|s| t.count(&s.name) + t.count(&s.description) + t.count(&s.parameters.to_string()))
        .sum()
}

#[cfg(all(test, feature = "tiktoken"))]
pub(crate) mod tests {
    use super::*;
    use processors_runtime::message::{Role, ToolCall, ToolResult};
    use serde_json::json;

    /// Text with every kind of character a tokenizer treats apart.
    pub(crate) const TEXT: &str = "The quick brown fox jumps over the lazy dog. Überraschung: naïve café, \
        漢字かな交じり文, emoji 👍🏽 and numbers 1234567 — done.\n\nA second  paragraph,   with spaces.";

    pub(crate) fn msg(role: Role, text: &str) -> Message {
        Message::new(role, vec![Part::Text { text: text.into() }])
    }

    pub(crate) fn call(id: &str) -> Message {
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall {
                tool_call_id: id.into(),
                tool_name: "search".into(),
                args: json!({ "q": "x" }),
            })],
        )
    }

    #[test]
    fn pathological_inputs_are_counted_without_panicking() {
        for t in [Tokenizer::O200k, Tokenizer::Cl100k] {
            for text in [
                " ".repeat(300_000),
                "\n".repeat(300_000),
                "a".repeat(100_000),
                " \t\n".repeat(100_000),
            ] {
                let n = t.count(&text);
                assert!(n > 0 && n <= text.len(), "{t:?}: {n} tokens");
            }
        }
    }

    #[test]
    fn pieces_cut_only_where_a_word_begins_when_they_can() {
        let text = "word ".repeat(5_000);
        let pieces: Vec<&str> = pieces(&text).collect();
        assert!(pieces.len() > 2);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| p.len() <= MAX_PIECE));
        assert!(pieces[1..].iter().all(|p| p.starts_with(" word")));
        assert_eq!(
            Tokenizer::O200k.count(&text),
            5_001,
            "5000 words and the final space"
        );
        let cjk = "漢".repeat(10_000);
        assert_eq!(super::pieces(&cjk).collect::<String>(), cjk);
    }

    #[test]
    fn a_prefix_fits_and_ends_at_a_character_boundary() {
        for t in [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Estimate] {
            let total = t.count(TEXT);
            for k in 0..=total + 1 {
                let p = t.prefix(TEXT, k);
                assert!(TEXT.starts_with(p));
                assert!(t.count(p) <= k, "{t:?}: prefix of {k} has {}", t.count(p));
            }
            assert_eq!(t.prefix(TEXT, total), TEXT);
        }
    }

    #[test]
    fn what_a_message_costs() {
        let t = Tokenizer::O200k;
        assert_eq!(message_tokens(t, &msg(Role::User, "")), TOKENS_PER_MESSAGE);
        let file = Message::new(
            Role::User,
            vec![Part::File {
                mime_type: "image/png".into(),
                data: "x".repeat(10_000),
            }],
        );
        assert_eq!(
            message_tokens(t, &file),
            TOKENS_PER_MESSAGE + TOKENS_PER_FILE
        );
        let hidden = Message::new(
            Role::Assistant,
            vec![
                Part::Reasoning {
                    text: "long thoughts ".repeat(100).into(),
                },
                Part::Data {
                    name: "x".into(),
                    data: json!({ "big": "y".repeat(1000) }),
                },
            ],
        );
        assert_eq!(
            message_tokens(t, &hidden),
            TOKENS_PER_MESSAGE,
            "not sent, not counted"
        );
        assert!(message_tokens(t, &call("c")) > TOKENS_PER_MESSAGE);
    }

    /// A tool's result with a base64 image or file in it (`{data, mediaType}`) counts the
    /// media as a file part, not as 40 KB of text.
    #[test]
    fn media_in_a_tool_result_costs_what_a_file_does() {
        let t = Tokenizer::O200k;
        let screenshot = json!({ "data": "iVBORw0KGgo".repeat(4_000), "mediaType": "image/png" });
        let result = |value: Value| {
            let result = ToolResult {
                tool_call_id: "c".into(),
                tool_name: "screenshot".into(),
                result: value,
                is_error: false,
                model_output: None,
            };
            Message::new(Role::Tool, vec![Part::ToolResult(result)])
        };
        let alone = message_tokens(t, &result(screenshot.clone()));
        assert_eq!(
            alone,
            TOKENS_PER_MESSAGE + TOKENS_PER_FILE + t.count("null")
        );
        let nested = json!({
            "url": "https://example.com",
            "shots": [screenshot.clone(), { "data": "JVBERi0x", "mimeType": "application/pdf" }],
        });
        let cost = message_tokens(t, &result(nested));
        assert!(cost >= TOKENS_PER_MESSAGE + 2 * TOKENS_PER_FILE, "{cost}");
        assert!(
            cost < TOKENS_PER_MESSAGE + 2 * TOKENS_PER_FILE + 40,
            "{cost}"
        );
        // Data without a media type is text, and counted as text.
        let text = json!({ "data": "word ".repeat(100) });
        assert!(message_tokens(t, &result(text)) > 100);
    }

    #[test]
    fn a_tool_result_costs_the_copy_the_model_reads() {
        let t = Tokenizer::Estimate;
        let mut result = ToolResult::new("c", "fetch", json!("x".repeat(4_000)));
        result.model_output = Some(json!("[left out]"));
        let message = Message::new(Role::Tool, vec![Part::ToolResult(result)]);
        assert_eq!(message_tokens(t, &message), TOKENS_PER_MESSAGE + 3);
    }
}

#[cfg(all(test, not(feature = "tiktoken")))]
mod without_tiktoken {
    use super::*;

    #[test]
    fn every_tokenizer_estimates() {
        assert_eq!(Tokenizer::ByModel.count("Hello, world!"), 4);
        assert_eq!(Tokenizer::for_model("gpt-4o"), Tokenizer::Estimate);
        assert_eq!(Tokenizer::ByModel.resolve(Some("gpt-4")).name(), "estimate");
        assert_eq!(Tokenizer::ByModel.resolve(None), Tokenizer::Estimate);
        assert_eq!(Tokenizer::ByModel.prefix("abcdefgh", 1), "abcd");
    }
}

#[cfg(test)]
mod custom {
    use super::*;

    #[test]
    fn a_custom_prefix_fits_and_ends_at_a_character_boundary() {
        let chars = Tokenizer::Custom(Counter::new("chars", |t| t.chars().count()));
        let text = "né 漢字 👍🏽 done";
        for k in 0..=chars.count(text) + 1 {
            let p = chars.prefix(text, k);
            assert!(text.starts_with(p));
            assert_eq!(p.chars().count(), k.min(text.chars().count()), "{k}: {p:?}");
        }
        assert_eq!(chars.count(""), 0);
        assert_eq!(chars.prefix("", 3), "");
    }
}
