//! [`Anthropic`]: the messages API (`POST {base_url}/v1/messages`), streamed.

use crate::error;
use crate::json::{self, Obj, Raw, Str};
use crate::parts::{is_url, merge_provider_options, parse_tool_args, tool_result_text};
use crate::sse::SseEvent;
use crate::transport::{ConfigError, Decoder, HttpConfig, Transport, http_builder_methods};
use futures::FutureExt;
use futures::future::BoxFuture;
use processors_runtime::chunk::{ChunkKind, FinishReason, Usage};
use processors_runtime::message::{Message, Part, Role, ToolCall, ToolResult};
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelStream, ToolChoice};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// Anthropic's API address.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent when the request's settings have no output limit (the API
/// requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A model served by Anthropic's messages API.
///
/// System messages become the separate `system` prompt; tool results are sent as
/// `tool_result` blocks of a user turn; consecutive turns of one role are merged. Reasoning
/// parts of earlier answers are not sent back (the API requires their signatures).
///
/// ```
/// use processors_providers::Anthropic;
/// use processors_runtime::model::LanguageModel;
/// let model = Anthropic::builder("claude-sonnet-4-5")
///     .api_key("sk-ant-…")
///     .build()
///     .unwrap();
/// assert_eq!(model.provider(), "anthropic");
/// ```
#[derive(Debug, Clone)]
pub struct Anthropic {
    model: String,
    url: String,
    transport: Transport,
}

/// Builds an [`Anthropic`] model; see [`Anthropic::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct AnthropicBuilder {
    model: String,
    http: HttpConfig,
}

impl Anthropic {
    /// Starts building a model with this id (set its key with `.api_key(...)`).
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder {
            model: model.into(),
            http: HttpConfig::new(ANTHROPIC_BASE_URL),
        }
    }
}

impl AnthropicBuilder {
    http_builder_methods!();

    /// The model; fails without an API key.
    pub fn build(self) -> Result<Anthropic, ConfigError> {
        let Some(key) = self.http.api_key.as_ref() else {
            return Err(ConfigError::MissingApiKey {
                provider: "anthropic".to_owned(),
                env_var: "ANTHROPIC_API_KEY".to_owned(),
            });
        };
        let headers = [
            ("x-api-key".to_owned(), key.expose().to_owned()),
            ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ];
        let transport = Transport::new(&self.http, headers)?;
        Ok(Anthropic {
            url: self.http.url("v1/messages"),
            model: self.model,
            transport,
        })
    }
}

impl LanguageModel for Anthropic {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        async move {
            let body = request_body(&self.model, &request)?;
            self.transport
                .stream(&self.url, &body, MessagesDecoder::default())
                .await
        }
        .boxed()
    }
}

/// The messages request for `request`.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Result<Value, ApiError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let s = &request.settings;
    body.insert(
        "max_tokens".into(),
        json!(s.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    let system: Vec<String> = request
        .prompt
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .filter(|t| !t.is_empty())
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages(&request.prompt)));
    body.insert("stream".into(), json!(true));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
        body.insert(
            "tool_choice".into(),
            match &request.tool_choice {
                ToolChoice::Auto => json!({ "type": "auto" }),
                ToolChoice::None => json!({ "type": "none" }),
                ToolChoice::Required => json!({ "type": "any" }),
                ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
            },
        );
    }
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = s.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !s.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), json!(s.stop_sequences));
    }
    merge_provider_options(&mut body, &request.provider_options)?;
    Ok(Value::Object(body))
}

/// The non-system prompt as alternating user and assistant turns of content blocks.
fn messages(prompt: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in prompt {
        let role = match message.role {
            Role::System => continue,
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
        };
        let blocks: Vec<Value> = message.content.parts.iter().filter_map(block).collect();
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

fn block(part: &Part) -> Option<Value> {
    Some(match part {
        Part::Text { text } if text.is_empty() => return None,
        Part::Text { text } => json!({ "type": "text", "text": text }),
        Part::ToolCall(ToolCall {
            tool_call_id,
            tool_name,
            args,
        }) => json!({
            "type": "tool_use",
            "id": tool_call_id,
            "name": tool_name,
            "input": if args.is_object() { args.clone() } else { json!({}) },
        }),
        Part::ToolResult(ToolResult {
            tool_call_id,
            result,
            is_error,
            ..
        }) => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": tool_call_id,
                "content": tool_result_text(result),
            });
            if *is_error {
                block["is_error"] = json!(true);
            }
            block
        }
        Part::File { mime_type, data } => {
            let source = if is_url(data) && !data.starts_with("data:") {
                json!({ "type": "url", "url": data })
            } else {
                let data = data
                    .split_once(";base64,")
                    .map_or(data.as_str(), |(_, d)| d);
                json!({ "type": "base64", "media_type": mime_type, "data": data })
            };
            let kind = if mime_type.starts_with("image/") {
                "image"
            } else {
                "document"
            };
            json!({ "type": kind, "source": source })
        }
        Part::Reasoning { .. } | Part::Data { .. } => return None,
    })
}

/// What a content block streams.
#[derive(Debug)]
enum OpenBlock {
    Text(Arc<str>),
    Reasoning(Arc<str>),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Reads the messages API's stream events.
#[derive(Debug, Default)]
pub(crate) struct MessagesDecoder {
    blocks: HashMap<u64, OpenBlock>,
    /// The indices of the blocks started so far: each block has its own.
    started: HashSet<u64>,
    /// The ids of the tool calls so far: each call has its own.
    tool_ids: HashSet<String>,
    usage: Usage,
    finish_reason: Option<FinishReason>,
}

impl Decoder for MessagesDecoder {
    const ANSWER: &'static str = "a message";

    /// A `message`: its start, each content block's start, delta and stop, the stop reason
    /// with the usage, and the stop.
    fn answer_events(answer: &Value) -> Option<Vec<String>> {
        if answer
            .get("type")
            .is_some_and(|t| !t.is_null() && t != "message")
        {
            return None;
        }
        let content = answer.get("content")?.as_array()?;
        let usage = &answer["usage"];
        let mut events = vec![json!({ "type": "message_start", "message": { "usage": usage } })];
        for (index, block) in content.iter().enumerate() {
            let text = |key: &str| block[key].as_str().filter(|t| !t.is_empty());
            let (start, delta) = match block["type"].as_str() {
                Some("text") => (
                    json!({ "type": "text", "text": "" }),
                    text("text").map(|t| json!({ "type": "text_delta", "text": t })),
                ),
                Some("thinking") => (
                    json!({ "type": "thinking", "thinking": "" }),
                    text("thinking").map(|t| json!({ "type": "thinking_delta", "thinking": t })),
                ),
                Some("tool_use") => {
                    let input = &block["input"];
                    let empty = input.is_null() || input.as_object().is_some_and(Map::is_empty);
                    (
                        json!({
                            "type": "tool_use",
                            "id": block["id"],
                            "name": block["name"],
                            "input": {},
                        }),
                        (!empty).then(|| {
                            json!({ "type": "input_json_delta", "partial_json": input.to_string() })
                        }),
                    )
                }
                _ => (block.clone(), None),
            };
            events.push(
                json!({ "type": "content_block_start", "index": index, "content_block": start }),
            );
            events.extend(delta.map(
                |delta| json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ));
            events.push(json!({ "type": "content_block_stop", "index": index }));
        }
        events.push(json!({
            "type": "message_delta",
            "delta": { "stop_reason": answer["stop_reason"] },
            "usage": usage,
        }));
        events.push(json!({ "type": "message_stop" }));
        Some(events.iter().map(Value::to_string).collect())
    }

    fn event(&mut self, event: SseEvent, out: &mut VecDeque<ChunkKind>) -> Result<bool, ApiError> {
        let data = event.data.trim();
        if let Some(delta) = FastDelta::read(data) {
            let index = delta.index.unwrap_or(0);
            let delta = delta.delta.map(|Obj(d)| d).unwrap_or_default();
            self.delta(index, delta, data, out)?;
            return Ok(false);
        }
        self.event_lenient(data, event.event.as_deref(), out)
    }
}

/// The usual event, a `content_block_delta` read in one pass: an object whose fields have the
/// expected types. Anything else (another type, a key given twice, an error object, a `\u`
/// escape, not JSON) is left to [`MessagesDecoder::event_lenient`], which reads every shape.
#[derive(Deserialize)]
struct FastDelta<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Str<'a>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<Obj<DeltaRead<'a>>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default, borrow)]
    object: Option<Str<'a>>,
}

/// What a `content_block_delta` says: its type, and the text, thinking or JSON it adds.
#[derive(Deserialize, Default)]
struct DeltaRead<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Str<'a>>,
    #[serde(default, borrow)]
    text: Option<Str<'a>>,
    #[serde(default, borrow)]
    thinking: Option<Str<'a>>,
    #[serde(default, borrow)]
    partial_json: Option<Str<'a>>,
}

impl<'a> FastDelta<'a> {
    fn read(data: &'a str) -> Option<FastDelta<'a>> {
        // Left to the lenient reading, which decodes a document with `\u` escapes whole.
        if json::has_u_escape(data) {
            return None;
        }
        let Obj(fast) = serde_json::from_str::<Obj<FastDelta<'a>>>(data).ok()?;
        let delta = fast
            .kind
            .as_ref()
            .is_some_and(|k| k.0 == "content_block_delta");
        let usual = delta && !json::is_error_read(fast.error.is_some(), &fast.kind, &fast.object);
        usual.then_some(fast)
    }
}

impl MessagesDecoder {
    /// Reads any event, whatever its shape, as `serde_json::Value`'s accessors would: a field
    /// of another type reads as absent, and of a key given twice the last counts. An error
    /// object is an error. `name` is the SSE event's name, the type of an event whose data
    /// has none.
    fn event_lenient(
        &mut self,
        data: &str,
        name: Option<&str>,
        out: &mut VecDeque<ChunkKind>,
    ) -> Result<bool, ApiError> {
        let [
            kind,
            error,
            object,
            index,
            message,
            content_block,
            delta,
            usage,
        ] = Raw::document(
            data,
            [
                "type",
                "error",
                "object",
                "index",
                "message",
                "content_block",
                "delta",
                "usage",
            ],
        )
        .map_err(|e| error::protocol(format_args!("event data that is not JSON ({e})"), data))?;
        let is_error = json::is_error(error, kind, object);
        let kind = kind.str();
        let kind = kind.as_deref().or(name).unwrap_or("");
        // Proxies send errors in other shapes too: `{"error": …}` without a type or an event name.
        if kind == "error" || is_error {
            let value: Value = serde_json::from_str(data).unwrap_or_default();
            return Err(error::in_stream(&value, data));
        }
        let index = index.u64().unwrap_or(0);
        match kind {
            "message_start" => {
                let [usage] = message.fields(["usage"]);
                let [input, output] = usage.fields(["input_tokens", "output_tokens"]);
                self.usage.input_tokens = input.u64().unwrap_or(0);
                self.usage.output_tokens = output.u64().unwrap_or(0);
            }
            "content_block_start" => {
                if !self.started.insert(index) {
                    return Err(error::protocol(
                        format_args!("a second start of content block {index}"),
                        data,
                    ));
                }
                let block = content_block.value();
                let open = match block["type"].as_str() {
                    Some("text") => {
                        let id: Arc<str> = format!("text-{index}").into();
                        out.push_back(ChunkKind::TextStart { id: id.clone() });
                        if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            out.push_back(ChunkKind::TextDelta {
                                id: id.clone(),
                                text: text.to_owned(),
                            });
                        }
                        OpenBlock::Text(id)
                    }
                    Some("thinking") => {
                        let id: Arc<str> = format!("reasoning-{index}").into();
                        out.push_back(ChunkKind::ReasoningStart { id: id.clone() });
                        OpenBlock::Reasoning(id)
                    }
                    Some("tool_use") => {
                        let id = match block["id"].as_str().filter(|id| !id.is_empty()) {
                            Some(id) => id.to_owned(),
                            None => format!("call-{index}"),
                        };
                        if !self.tool_ids.insert(id.clone()) {
                            return Err(error::protocol(
                                format_args!("two tool calls with the id `{id}`"),
                                data,
                            ));
                        }
                        let input = &block["input"];
                        let has_input = input.as_object().is_some_and(|o| !o.is_empty());
                        OpenBlock::ToolUse {
                            id,
                            name: block["name"].as_str().unwrap_or_default().to_owned(),
                            json: if has_input {
                                input.to_string()
                            } else {
                                String::new()
                            },
                        }
                    }
                    _ => OpenBlock::Other,
                };
                self.blocks.insert(index, open);
            }
            "content_block_delta" => {
                let [kind, text, thinking, partial_json] =
                    delta.fields(["type", "text", "thinking", "partial_json"]);
                let delta = DeltaRead {
                    kind: kind.str().map(Str),
                    text: text.str().map(Str),
                    thinking: thinking.str().map(Str),
                    partial_json: partial_json.str().map(Str),
                };
                self.delta(index, delta, data, out)?;
            }
            "content_block_stop" => match self.blocks.remove(&index) {
                Some(OpenBlock::Text(id)) => out.push_back(ChunkKind::TextEnd { id }),
                Some(OpenBlock::Reasoning(id)) => out.push_back(ChunkKind::ReasoningEnd { id }),
                Some(OpenBlock::ToolUse { id, name, json }) => {
                    let args = parse_tool_args(&id, &name, &json)?;
                    out.push_back(ChunkKind::ToolCall(ToolCall {
                        tool_call_id: id,
                        tool_name: name,
                        args,
                    }));
                }
                Some(OpenBlock::Other) | None => {}
            },
            "message_delta" => {
                let [stop_reason] = delta.fields(["stop_reason"]);
                if let Some(reason) = stop_reason.str() {
                    self.finish_reason = Some(match &*reason {
                        "end_turn" | "stop_sequence" => FinishReason::Stop,
                        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
                        "tool_use" => FinishReason::ToolCalls,
                        "refusal" => FinishReason::ContentFilter,
                        _ => FinishReason::Other,
                    });
                }
                let [output, input] = usage.fields(["output_tokens", "input_tokens"]);
                if let Some(n) = output.u64() {
                    self.usage.output_tokens = n;
                }
                if let Some(n) = input.u64() {
                    self.usage.input_tokens = n;
                }
            }
            "message_stop" => {
                if !self.blocks.is_empty() {
                    return Err(error::protocol(
                        "message_stop while content blocks were still open",
                        data,
                    ));
                }
                // The provider's numbers: a bogus one must not overflow.
                self.usage = Usage::new(self.usage.input_tokens, self.usage.output_tokens);
                out.push_back(ChunkKind::Finish {
                    finish_reason: self.finish_reason.unwrap_or(FinishReason::Other),
                    usage: self.usage,
                });
                return Ok(true);
            }
            // `ping` and event types added to the API later.
            _ => {}
        }
        Ok(false)
    }

    /// A `content_block_delta` of block `index`.
    fn delta(
        &mut self,
        index: u64,
        delta: DeltaRead<'_>,
        data: &str,
        out: &mut VecDeque<ChunkKind>,
    ) -> Result<(), ApiError> {
        let owned = |field: Option<Str<'_>>| field.map(|s| s.0.into_owned()).unwrap_or_default();
        match (
            self.blocks.get_mut(&index),
            delta.kind.as_ref().map(|k| &*k.0),
        ) {
            (Some(OpenBlock::Text(id)), Some("text_delta")) => {
                out.push_back(ChunkKind::TextDelta {
                    id: id.clone(),
                    text: owned(delta.text),
                });
            }
            (Some(OpenBlock::Reasoning(id)), Some("thinking_delta")) => {
                out.push_back(ChunkKind::ReasoningDelta {
                    id: id.clone(),
                    text: owned(delta.thinking),
                });
            }
            (Some(OpenBlock::ToolUse { id, name, json }), Some("input_json_delta")) => {
                let piece = owned(delta.partial_json);
                json.push_str(&piece);
                out.push_back(ChunkKind::ToolCallDelta {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    args_text_delta: piece,
                });
            }
            (None, _) => {
                return Err(error::protocol(
                    format_args!("a delta for content block {index}, which was never started"),
                    data,
                ));
            }
            // Signatures and deltas of unknown kinds carry nothing to stream.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use processors_runtime::model::{ModelSettings, ToolSpec};

    /// A decoder with a text block (0), a thinking block (1) and a tool call (2) open.
    fn with_open_blocks() -> MessagesDecoder {
        let mut d = MessagesDecoder::default();
        let mut out = VecDeque::new();
        for start in [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
        ] {
            let event = SseEvent {
                data: start.to_owned(),
                ..SseEvent::default()
            };
            assert!(matches!(d.event(event, &mut out), Ok(false)), "{start}");
        }
        d
    }

    /// What one event did to a decoder: its result and the chunks it gave.
    fn outcome(d: &mut MessagesDecoder, event: &str, lenient: bool) -> String {
        let mut out = VecDeque::new();
        let result = match lenient {
            true => d.event_lenient(event.trim(), None, &mut out),
            false => d.event(
                SseEvent {
                    data: event.to_owned(),
                    ..SseEvent::default()
                },
                &mut out,
            ),
        };
        let mut blocks: Vec<String> = d
            .blocks
            .iter()
            .map(|(i, b)| format!("{i}: {b:?}"))
            .collect();
        blocks.sort();
        format!("{result:?} {out:?} {blocks:?}")
    }

    /// Builds events from parts of every type, missing, null or given twice.
    fn events() -> impl proptest::strategy::Strategy<Value = String> {
        use crate::json::shapes::{object, values};
        use proptest::prelude::*;
        let value = values(&[
            "0",
            "1",
            "2",
            r#""content_block_delta""#,
            r#""text_delta""#,
            r#""thinking_delta""#,
            r#""input_json_delta""#,
        ]);
        let delta = object(
            &["type", "text", "thinking", "partial_json"],
            value.clone(),
            6,
        );
        let top = prop_oneof![delta.prop_map(Some), value].boxed();
        let event = object(&["type", "index", "delta", "error", "object", "id"], top, 6);
        // Half of them typed as deltas, which the one-pass reading takes.
        (event, proptest::bool::ANY).prop_map(|(event, typed)| {
            match (typed, event.strip_prefix('{')) {
                (true, Some("}")) => r#"{"type": "content_block_delta"}"#.to_owned(),
                (true, Some(rest)) => format!(r#"{{"type": "content_block_delta", {rest}"#),
                _ => event,
            }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// The one-pass reading of a delta does what the lenient one does, on events of every
        /// shape (it declines the ones it does not read).
        #[test]
        fn the_fast_reading_agrees_with_the_lenient_one(event in events()) {
            if FastDelta::read(&event).is_some() {
                let fast = outcome(&mut with_open_blocks(), &event, false);
                let lenient = outcome(&mut with_open_blocks(), &event, true);
                proptest::prop_assert_eq!(fast, lenient, "{}", event);
            }
        }
    }

    #[test]
    fn the_usual_deltas_are_read_in_one_pass() {
        for event in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#,
        ] {
            assert!(FastDelta::read(event).is_some(), "{event}");
        }
        for declined in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\u00e9"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}"#,
            r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ] {
            assert!(FastDelta::read(declined).is_none(), "{declined}");
        }
    }

    #[test]
    fn system_is_separate_and_tool_results_join_the_next_user_turn() {
        let request = ModelRequest {
            prompt: vec![
                Message::system("one"),
                Message::system("two"),
                Message::user("weather?"),
                Message::new(
                    Role::Assistant,
                    vec![
                        Part::Reasoning {
                            text: "hidden".into(),
                        },
                        Part::Text {
                            text: "Checking.".into(),
                        },
                        Part::ToolCall(ToolCall {
                            tool_call_id: "t1".into(),
                            tool_name: "weather".into(),
                            args: json!({ "city": "Oslo" }),
                        }),
                    ],
                ),
                Message::new(
                    Role::Tool,
                    vec![Part::ToolResult(ToolResult {
                        tool_call_id: "t1".into(),
                        tool_name: "weather".into(),
                        result: json!("sunny"),
                        is_error: true,
                        model_output: None,
                    })],
                ),
                Message::user("and tomorrow?"),
            ],
            tools: vec![ToolSpec {
                name: "weather".into(),
                description: "d".into(),
                parameters: json!({ "type": "object" }),
            }],
            tool_choice: ToolChoice::Required,
            settings: ModelSettings {
                stop_sequences: vec!["X".into()],
                ..ModelSettings::default()
            },
            ..ModelRequest::default()
        };
        let body = request_body("claude", &request).unwrap();
        assert_eq!(body["system"], "one\n\ntwo");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["tool_choice"], json!({ "type": "any" }));
        assert_eq!(
            body["tools"][0]["input_schema"],
            json!({ "type": "object" })
        );
        assert_eq!(body["stop_sequences"], json!(["X"]));
        assert_eq!(
            body["messages"],
            json!([
                { "role": "user", "content": [{ "type": "text", "text": "weather?" }] },
                { "role": "assistant", "content": [
                    { "type": "text", "text": "Checking." },
                    { "type": "tool_use", "id": "t1", "name": "weather", "input": { "city": "Oslo" } },
                ] },
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "t1", "content": "sunny", "is_error": true },
                    { "type": "text", "text": "and tomorrow?" },
                ] },
            ])
        );
    }

    #[test]
    fn files_become_image_and_document_blocks() {
        let png = block(&Part::File {
            mime_type: "image/png".into(),
            data: "data:image/png;base64,AAAA".into(),
        });
        assert_eq!(
            png.unwrap()["source"],
            json!({ "type": "base64", "media_type": "image/png", "data": "AAAA" })
        );
        let pdf = block(&Part::File {
            mime_type: "application/pdf".into(),
            data: "https://example.com/a.pdf".into(),
        })
        .unwrap();
        assert_eq!(pdf["type"], "document");
        assert_eq!(pdf["source"]["type"], "url");
    }
}
