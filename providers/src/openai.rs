//! [`OpenAiCompatible`]: the chat completions API of OpenAI and of the servers that copy it
//! (Ollama, vLLM, llama.cpp's server, LM Studio).

use crate::error;
use crate::json::{self, Obj, Raw, Str, first};
use crate::parts::{file_url, merge_provider_options, parse_tool_args, tool_result_text};
use crate::sse::SseEvent;
use crate::transport::{ConfigError, Decoder, HttpConfig, Transport, http_builder_methods};
use futures::FutureExt;
use futures::future::BoxFuture;
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::message::{Message, Part, Role, ToolCall, ToolResult};
use processors_runtime::model::{
    ApiError, LanguageModel, ModelRequest, ModelStream, ToolChoice, ToolSpec,
};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// OpenAI's API address.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A model served by an OpenAI-compatible chat completions API
/// (`POST {base_url}/chat/completions` with `stream: true`).
///
/// The base URL selects the server: OpenAI (the default), Ollama
/// (`http://localhost:11434/v1`), vLLM (`http://localhost:8000/v1`), llama.cpp's server
/// (`http://localhost:8080/v1`) or LM Studio (`http://localhost:1234/v1`). The API key, when
/// set, is sent as a bearer token.
///
/// ```
/// use processors_providers::OpenAiCompatible;
/// use processors_runtime::model::LanguageModel;
/// let model = OpenAiCompatible::builder("llama3.2")
///     .base_url("http://localhost:11434/v1")
///     .provider_name("ollama")
///     .max_retries(1)
///     .build()
///     .unwrap();
/// assert_eq!(model.provider(), "ollama");
/// assert_eq!(model.model_id(), "llama3.2");
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    provider: String,
    model: String,
    url: String,
    transport: Transport,
}

/// Builds an [`OpenAiCompatible`] model; see [`OpenAiCompatible::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct OpenAiCompatibleBuilder {
    provider: String,
    model: String,
    http: HttpConfig,
}

impl OpenAiCompatible {
    /// Starts building a model with this id, for OpenAI's API and without a key.
    pub fn builder(model: impl Into<String>) -> OpenAiCompatibleBuilder {
        OpenAiCompatibleBuilder {
            provider: "openai".to_owned(),
            model: model.into(),
            http: HttpConfig::new(OPENAI_BASE_URL),
        }
    }
}

impl OpenAiCompatibleBuilder {
    http_builder_methods!();

    /// The provider's name as [`LanguageModel::provider`] reports it (default `openai`).
    pub fn provider_name(mut self, name: impl Into<String>) -> Self {
        self.provider = name.into();
        self
    }

    /// The model.
    pub fn build(self) -> Result<OpenAiCompatible, ConfigError> {
        let auth = self.http.api_key.as_ref().map(|key| {
            (
                "authorization".to_owned(),
                format!("Bearer {}", key.expose()),
            )
        });
        let transport = Transport::new(&self.http, auth)?;
        Ok(OpenAiCompatible {
            url: self.http.url("chat/completions"),
            provider: self.provider,
            model: self.model,
            transport,
        })
    }
}

impl LanguageModel for OpenAiCompatible {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        async move {
            let body = request_body(&self.model, &request)?;
            self.transport
                .stream(&self.url, &body, ChatDecoder::default())
                .await
        }
        .boxed()
    }
}

/// The chat completions request for `request`.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Result<Value, ApiError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages(&request.prompt)));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if !request.tools.is_empty() {
        body.insert(
            "tools".into(),
            request.tools.iter().map(tool).collect::<Vec<_>>().into(),
        );
        body.insert("tool_choice".into(), tool_choice(&request.tool_choice));
    }
    let s = &request.settings;
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = s.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if let Some(m) = s.max_output_tokens {
        body.insert("max_tokens".into(), json!(m));
    }
    if !s.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(s.stop_sequences));
    }
    if let Some(seed) = s.seed {
        body.insert("seed".into(), json!(seed));
    }
    merge_provider_options(&mut body, &request.provider_options)?;
    Ok(Value::Object(body))
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        }
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

/// The prompt as chat messages. Reasoning and data parts are not sent; tool results become
/// `tool` messages.
fn messages(prompt: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(prompt.len());
    for message in prompt {
        let mut content = Vec::new();
        let mut tool_calls = Vec::new();
        let mut tool_results = Vec::new();
        for part in &message.content.parts {
            match part {
                Part::Text { text } => content.push(json!({ "type": "text", "text": text })),
                Part::File { mime_type, data } => content.push(file(mime_type, data)),
                Part::ToolCall(ToolCall {
                    tool_call_id,
                    tool_name,
                    args,
                }) => tool_calls.push(json!({
                    "id": tool_call_id,
                    "type": "function",
                    "function": { "name": tool_name, "arguments": args.to_string() },
                })),
                Part::ToolResult(ToolResult {
                    tool_call_id,
                    result,
                    ..
                }) => tool_results.push(json!({
                    "role": "tool",
                    "tool_call_id": tool_call_id,
                    "content": tool_result_text(result),
                })),
                Part::Reasoning { .. } | Part::Data { .. } => {}
            }
        }
        let role = match message.role {
            Role::System => "system",
            Role::Assistant => "assistant",
            // A tool message's parts other than results (rare) are the user's context.
            Role::User | Role::Tool => "user",
        };
        if message.role == Role::Assistant && !tool_calls.is_empty() {
            let text = plain_text(&content);
            out.push(json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": tool_calls,
            }));
        } else if !content.is_empty() {
            // Only user messages may carry images and files; the others are plain text.
            let all_text = content.iter().all(|c| c["type"] == "text");
            let content = if all_text || role != "user" {
                json!(plain_text(&content))
            } else {
                Value::Array(content)
            };
            out.push(json!({ "role": role, "content": content }));
        }
        out.extend(tool_results);
    }
    out
}

fn plain_text(content: &[Value]) -> String {
    content
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

fn file(mime_type: &str, data: &str) -> Value {
    let url = file_url(mime_type, data);
    if mime_type.starts_with("image/") {
        json!({ "type": "image_url", "image_url": { "url": url } })
    } else {
        json!({ "type": "file", "file": { "file_data": url } })
    }
}

/// The kind of the block of text being streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Reasoning,
}

#[derive(Debug, Default)]
struct ToolCallAcc {
    id: String,
    name: String,
    args: String,
}

/// Reads `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    open: Option<(Block, Arc<str>)>,
    blocks: usize,
    tool_calls: BTreeMap<u64, ToolCallAcc>,
    finish_reason: Option<FinishReason>,
    usage: Usage,
}

impl Decoder for ChatDecoder {
    const ANSWER: &'static str = "a chat completion";

    /// A `chat.completion`: one chunk whose delta is the first choice's message, with its
    /// finish reason and the usage, then `[DONE]`.
    fn answer_events(answer: &Value) -> Option<Vec<String>> {
        let choice = answer.get("choices")?.as_array()?.first()?;
        let message = choice.get("message").filter(|m| m.is_object())?;
        let chunk = json!({
            "choices": [{ "index": 0, "delta": message, "finish_reason": choice["finish_reason"] }],
            "usage": answer["usage"],
        });
        Some(vec![chunk.to_string(), "[DONE]".to_owned()])
    }

    fn event(&mut self, event: SseEvent, out: &mut VecDeque<ChunkKind>) -> Result<bool, ApiError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out)?;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let read = match Fast::read(data) {
            Some(read) => read,
            None => Read::lenient(data)?,
        };
        if let Some([input, output, total]) = read.usage {
            // The provider's numbers: a bogus one must not overflow.
            let sum = Usage::new(input.unwrap_or(0), output.unwrap_or(0));
            self.usage = Usage {
                total_tokens: total.unwrap_or(sum.total_tokens),
                ..sum
            };
        }
        let Some(choice) = read.choice else {
            return Ok(false);
        };
        for text in choice.reasoning.into_iter().flatten() {
            if !text.is_empty() {
                let id = self.enter(Block::Reasoning, out);
                out.push_back(ChunkKind::ReasoningDelta {
                    id,
                    text: text.into_owned(),
                });
            }
        }
        if let Some(text) = choice.content.filter(|t| !t.is_empty()) {
            let id = self.enter(Block::Text, out);
            out.push_back(ChunkKind::TextDelta {
                id,
                text: text.into_owned(),
            });
        }
        for (position, call) in choice.tool_calls.into_iter().enumerate() {
            self.tool_call_piece(position, call, out)?;
        }
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(match &*reason {
                "stop" => FinishReason::Stop,
                "length" => FinishReason::Length,
                "tool_calls" | "function_call" => FinishReason::ToolCalls,
                "content_filter" => FinishReason::ContentFilter,
                _ => FinishReason::Other,
            });
        }
        Ok(false)
    }
}

/// What the decoder reads of a `chat.completion.chunk` event.
#[derive(Default)]
struct Read<'a> {
    /// `prompt_tokens`, `completion_tokens` and `total_tokens`, when the event has a usage.
    usage: Option<[Option<u64>; 3]>,
    /// The first choice, when there is one.
    choice: Option<ChoiceRead<'a>>,
}

#[derive(Default)]
struct ChoiceRead<'a> {
    /// `reasoning_content` and `reasoning`.
    reasoning: [Option<Cow<'a, str>>; 2],
    content: Option<Cow<'a, str>>,
    tool_calls: Vec<Raw<'a>>,
    finish_reason: Option<Cow<'a, str>>,
}

impl<'a> Read<'a> {
    /// Reads any event, whatever its shape, as `serde_json::Value`'s accessors would: a field
    /// of another type reads as absent, and of a key given twice the last counts. An error
    /// object is an error.
    fn lenient(data: &'a str) -> Result<Self, ApiError> {
        // Checks the whole document as JSON, a string that does not decode included.
        let [error, kind, object, usage, choices] =
            Raw::document(data, ["error", "type", "object", "usage", "choices"]).map_err(|e| {
                error::protocol(format_args!("event data that is not JSON ({e})"), data)
            })?;
        if json::is_error(error, kind, object) {
            let value: Value = serde_json::from_str(data).unwrap_or_default();
            return Err(error::in_stream(&value, data));
        }
        let usage = usage.is_object().then(|| {
            usage
                .fields(["prompt_tokens", "completion_tokens", "total_tokens"])
                .map(Raw::u64)
        });
        let choice = choices.first().map(|choice| {
            let [delta, finish_reason] = choice.fields(["delta", "finish_reason"]);
            let [reasoning_content, reasoning, content, tool_calls] =
                delta.fields(["reasoning_content", "reasoning", "content", "tool_calls"]);
            ChoiceRead {
                reasoning: [reasoning_content.str(), reasoning.str()],
                content: content.str(),
                tool_calls: tool_calls.elements().unwrap_or_default(),
                finish_reason: finish_reason.str(),
            }
        });
        Ok(Read { usage, choice })
    }
}

/// The usual event, read in one pass: an object whose fields have the expected types, without
/// tool calls or an error. Anything else (another type, a key given twice, tool calls, an
/// error object, not JSON) is left to [`Read::lenient`], which reads every shape.
#[derive(Deserialize)]
struct Fast<'a> {
    #[serde(default, borrow, deserialize_with = "first")]
    choices: Option<Obj<FastChoice<'a>>>,
    #[serde(default)]
    usage: Option<Obj<FastUsage>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    object: Option<Str<'a>>,
}

#[derive(Deserialize)]
struct FastChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Obj<FastDelta<'a>>>,
    #[serde(default, borrow)]
    finish_reason: Option<Str<'a>>,
}

#[derive(Deserialize, Default)]
struct FastDelta<'a> {
    #[serde(default, borrow)]
    reasoning_content: Option<Str<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<Str<'a>>,
    #[serde(default, borrow)]
    content: Option<Str<'a>>,
    #[serde(default)]
    tool_calls: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct FastUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl<'a> Fast<'a> {
    fn read(data: &'a str) -> Option<Read<'a>> {
        // Left to the lenient reading, which decodes a document with `\u` escapes whole.
        if json::has_u_escape(data) {
            return None;
        }
        let Obj(fast) = serde_json::from_str::<Obj<Fast<'a>>>(data).ok()?;
        let error = json::is_error_read(fast.error.is_some(), &fast.kind, &fast.object);
        let calls = fast
            .choices
            .as_ref()
            .and_then(|c| c.0.delta.as_ref())
            .is_some_and(|d| d.0.tool_calls.is_some());
        if error || calls {
            return None;
        }
        Some(Read {
            usage: fast
                .usage
                .map(|Obj(u)| [u.prompt_tokens, u.completion_tokens, u.total_tokens]),
            choice: fast.choices.map(|Obj(c)| {
                let delta = c.delta.map(|Obj(d)| d).unwrap_or_default();
                ChoiceRead {
                    reasoning: [delta.reasoning_content, delta.reasoning].map(|s| s.map(|s| s.0)),
                    content: delta.content.map(|s| s.0),
                    tool_calls: Vec::new(),
                    finish_reason: c.finish_reason.map(|s| s.0),
                }
            }),
        })
    }
}

impl ChatDecoder {
    /// Makes `kind` the open block (closing another one) and returns its id.
    fn enter(&mut self, kind: Block, out: &mut VecDeque<ChunkKind>) -> Arc<str> {
        if let Some((open, id)) = &self.open
            && *open == kind
        {
            return id.clone();
        }
        self.close(out);
        let id: Arc<str> = match kind {
            Block::Text => format!("text-{}", self.blocks),
            Block::Reasoning => format!("reasoning-{}", self.blocks),
        }
        .into();
        self.blocks += 1;
        out.push_back(match kind {
            Block::Text => ChunkKind::TextStart { id: id.clone() },
            Block::Reasoning => ChunkKind::ReasoningStart { id: id.clone() },
        });
        self.open = Some((kind, id.clone()));
        id
    }

    fn close(&mut self, out: &mut VecDeque<ChunkKind>) {
        match self.open.take() {
            Some((Block::Text, id)) => out.push_back(ChunkKind::TextEnd { id }),
            Some((Block::Reasoning, id)) => out.push_back(ChunkKind::ReasoningEnd { id }),
            None => {}
        }
    }

    /// One piece of a tool call: the first names it, the others add to its arguments.
    /// The call's id is the provider's, or `call-<index>` without one; it may change until
    /// a delta has named the call, and then stays. Two calls never share one.
    fn tool_call_piece(
        &mut self,
        position: usize,
        call: Raw<'_>,
        out: &mut VecDeque<ChunkKind>,
    ) -> Result<(), ApiError> {
        let [index, id, function] = call.fields(["index", "id", "function"]);
        let index = index.u64().unwrap_or(position as u64);
        let current = self.tool_calls.get(&index);
        let named = current.is_some_and(|c| !c.args.is_empty());
        let id = match id.str().filter(|id| !id.is_empty()) {
            Some(id) if !named => Some(id.into_owned()),
            _ if current.is_none() => Some(format!("call-{index}")),
            _ => None,
        };
        if let Some(id) = &id
            && self
                .tool_calls
                .iter()
                .any(|(i, c)| *i != index && c.id == *id)
        {
            return Err(error::protocol(
                format_args!("two tool calls with the id `{id}`"),
                &call.value().to_string(),
            ));
        }
        let acc = self.tool_calls.entry(index).or_default();
        if let Some(id) = id {
            acc.id = id;
        }
        let [name, arguments] = function.fields(["name", "arguments"]);
        if let Some(name) = name.str().filter(|n| !n.is_empty()) {
            acc.name.push_str(&name);
        }
        let piece = match arguments.str() {
            Some(s) => s.into_owned(),
            None => match arguments.value() {
                Value::Null => String::new(),
                // Some servers send the arguments as an object rather than a JSON string.
                other => other.to_string(),
            },
        };
        if !piece.is_empty() {
            acc.args.push_str(&piece);
            out.push_back(ChunkKind::ToolCallDelta {
                tool_call_id: acc.id.clone(),
                tool_name: acc.name.clone(),
                args_text_delta: piece,
            });
        }
        Ok(())
    }

    /// At `[DONE]`: closes the open block, emits the complete tool calls and the finish.
    fn finish(&mut self, out: &mut VecDeque<ChunkKind>) -> Result<(), ApiError> {
        self.close(out);
        let calls = std::mem::take(&mut self.tool_calls);
        let has_calls = !calls.is_empty();
        for call in calls.into_values() {
            let args = parse_tool_args(&call.id, &call.name, &call.args)?;
            out.push_back(ChunkKind::ToolCall(ToolCall {
                tool_call_id: call.id,
                tool_name: call.name,
                args,
            }));
        }
        let finish_reason = match self.finish_reason {
            // Some servers say `stop` even when the answer is tool calls.
            Some(FinishReason::Stop) | None if has_calls => FinishReason::ToolCalls,
            Some(reason) => reason,
            None => FinishReason::Other,
        };
        out.push_back(ChunkKind::Finish {
            finish_reason,
            usage: self.usage,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use processors_runtime::model::ModelSettings;

    /// What a reading found, comparable.
    fn summary(read: &Read<'_>) -> String {
        let choice = read.choice.as_ref().map(|c| {
            (
                c.reasoning.clone(),
                c.content.clone(),
                c.tool_calls.iter().map(|t| t.value()).collect::<Vec<_>>(),
                c.finish_reason.clone(),
            )
        });
        format!("{:?} {:?}", read.usage, choice)
    }

    /// Builds events from parts of every type, missing, null or given twice.
    fn events() -> impl proptest::strategy::Strategy<Value = String> {
        use crate::json::shapes::{object, values};
        use proptest::prelude::*;
        let value = values(&[r#""stop""#]);
        let delta_names: &'static [&'static str] = &[
            "content",
            "reasoning",
            "reasoning_content",
            "role",
            "tool_calls",
        ];
        let delta = object(delta_names, value.clone(), 5);
        let delta_value = prop_oneof![delta.prop_map(Some), value.clone()].boxed();
        let choice = object(&["delta", "finish_reason", "index"], delta_value, 5);
        let choices = proptest::collection::vec(choice, 0..3)
            .prop_map(|c| Some(format!("[{}]", c.join(", "))));
        let usage = object(
            &["prompt_tokens", "completion_tokens", "total_tokens"],
            value.clone(),
            5,
        )
        .prop_map(Some);
        let top = prop_oneof![choices, usage, value].boxed();
        object(
            &["choices", "usage", "error", "type", "object", "id"],
            top,
            5,
        )
    }

    proptest::proptest! {
        /// The one-pass reading of the usual event finds what the lenient one finds, on
        /// events of every shape (it declines the ones it does not read).
        #[test]
        fn the_fast_reading_agrees_with_the_lenient_one(event in events()) {
            if let Some(fast) = Fast::read(&event) {
                let lenient = Read::lenient(&event);
                proptest::prop_assert!(lenient.is_ok(), "{event}");
                if let Ok(lenient) = lenient {
                    proptest::prop_assert_eq!(summary(&fast), summary(&lenient), "{}", event);
                }
            }
        }
    }

    #[test]
    fn a_string_that_does_not_decode_fails_the_event() {
        // A lone surrogate: valid JSON syntax, not a string.
        let items = decode(&[r#"{"choices":[{"delta":{"content":"\ud83d"}}]}"#]);
        assert!(
            items
                .iter()
                .any(|i| matches!(i, Err(e) if e.message.contains("not JSON"))),
            "{items:?}"
        );
    }

    #[test]
    fn the_usual_events_are_read_in_one_pass() {
        for event in [
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
        ] {
            assert!(Fast::read(event).is_some(), "{event}");
        }
        for event in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"error":{"message":"x"}}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"usage":{"prompt_tokens":1.5}}"#,
        ] {
            assert!(Fast::read(event).is_none(), "{event}");
        }
    }

    fn decode(events: &[&str]) -> Vec<Result<ChunkKind, ApiError>> {
        let mut d = ChatDecoder::default();
        let mut out = VecDeque::new();
        let mut items = Vec::new();
        for e in events {
            let r = d.event(
                SseEvent {
                    data: (*e).to_owned(),
                    ..SseEvent::default()
                },
                &mut out,
            );
            items.extend(out.drain(..).map(Ok));
            match r {
                Err(e) => {
                    items.push(Err(e));
                    break;
                }
                Ok(true) => break,
                Ok(false) => {}
            }
        }
        items
    }

    #[test]
    fn prompt_with_tool_round_trip_becomes_chat_messages() {
        let prompt = vec![
            Message::system("be brief"),
            Message::user("weather?"),
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall(ToolCall {
                    tool_call_id: "c1".into(),
                    tool_name: "weather".into(),
                    args: json!({ "city": "Oslo" }),
                })],
            ),
            Message::new(
                Role::Tool,
                vec![Part::ToolResult(ToolResult {
                    tool_call_id: "c1".into(),
                    tool_name: "weather".into(),
                    result: json!({ "celsius": 3 }),
                    is_error: false,
                    model_output: None,
                })],
            ),
        ];
        let got = messages(&prompt);
        assert_eq!(
            Value::Array(got),
            json!([
                { "role": "system", "content": "be brief" },
                { "role": "user", "content": "weather?" },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "c1", "type": "function",
                      "function": { "name": "weather", "arguments": "{\"city\":\"Oslo\"}" } }
                ] },
                { "role": "tool", "tool_call_id": "c1", "content": "{\"celsius\":3}" },
            ])
        );
    }

    #[test]
    fn images_are_sent_as_content_parts() {
        let m = Message::new(
            Role::User,
            vec![
                Part::Text {
                    text: "what is this?".into(),
                },
                Part::File {
                    mime_type: "image/png".into(),
                    data: "AAAA".into(),
                },
            ],
        );
        assert_eq!(
            messages(&[m])[0]["content"][1],
            json!({ "type": "image_url", "image_url": { "url": "data:image/png;base64,AAAA" } })
        );
    }

    #[test]
    fn settings_tools_choice_and_provider_options_shape_the_body() {
        let request = ModelRequest {
            prompt: vec![Message::user("hi")],
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                parameters: json!({ "type": "object" }),
            }],
            tool_choice: ToolChoice::Tool("t".into()),
            provider_options: json!({ "user": "u1", "temperature": 0.5 }),
            settings: ModelSettings {
                temperature: Some(1.0),
                top_p: Some(0.5),
                max_output_tokens: Some(7),
                stop_sequences: vec!["END".into()],
                seed: Some(3),
            },
        };
        let body = request_body("m", &request).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["tools"][0]["function"]["name"], "t");
        assert_eq!(body["tool_choice"]["function"]["name"], "t");
        assert_eq!(body["temperature"], 0.5, "provider options win");
        assert_eq!(body["top_p"], 0.5);
        assert_eq!(body["max_tokens"], 7);
        assert_eq!(body["stop"], json!(["END"]));
        assert_eq!(body["seed"], 3);
        assert_eq!(body["user"], "u1");
    }

    #[test]
    fn tool_choice_is_omitted_without_tools_and_non_object_options_are_rejected() {
        let mut request = ModelRequest {
            tool_choice: ToolChoice::Required,
            ..ModelRequest::default()
        };
        let body = request_body("m", &request).unwrap();
        assert!(body.get("tool_choice").is_none());
        request.provider_options = json!([1]);
        let e = request_body("m", &request).unwrap_err();
        assert!(e.message.contains("provider_options"), "{}", e.message);
        assert!(!e.retryable);
    }

    #[test]
    fn reasoning_then_text_are_separate_blocks() {
        let items = decode(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        let kinds: Vec<_> = items
            .iter()
            .map(|i| i.as_ref().unwrap().type_name().into_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "reasoning-start",
                "reasoning-delta",
                "reasoning-end",
                "text-start",
                "text-delta",
                "text-end",
                "finish"
            ]
        );
        assert!(matches!(
            items.last(),
            Some(Ok(ChunkKind::Finish {
                finish_reason: FinishReason::Length,
                ..
            }))
        ));
    }

    #[test]
    fn stop_with_tool_calls_finishes_as_tool_calls() {
        let items = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert!(matches!(
            &items[1],
            Ok(ChunkKind::ToolCall(ToolCall { args, .. })) if *args == json!({ "x": 1 })
        ));
        assert!(matches!(
            items.last(),
            Some(Ok(ChunkKind::Finish {
                finish_reason: FinishReason::ToolCalls,
                ..
            }))
        ));
    }

    #[test]
    fn error_object_in_stream_is_an_api_error() {
        let items = decode(&[r#"{"error":{"message":"overloaded","type":"server_error"}}"#]);
        let e = items[0].as_ref().unwrap_err();
        assert!(e.message.contains("overloaded"), "{}", e.message);
        assert!(e.retryable);
    }
}
