//! Anthropic's messages API, as the gateway serves it: the request read into a
//! [`ModelRequest`], the answer written as a `message` or as its stream of events, refusals
//! and errors in Anthropic's error shape.

use crate::call::{Answer, Event, refusal_detail};
use crate::wire::{self, ClientError, Sse};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use processors_runtime::chunk::{FinishReason, Usage};
use processors_runtime::message::{Message, Part, Role, ToolCall, ToolResult};
use processors_runtime::model::{ModelRequest, ModelSettings, ToolChoice, ToolSpec};
use processors_runtime::tripwire::TripWire;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// A messages request: the fields the gateway reads, the others kept in `rest`.
#[derive(Debug, Deserialize)]
pub(crate) struct MessagesRequest {
    pub(crate) model: String,
    max_tokens: u32,
    messages: Vec<AnthropicMessage>,
    #[serde(default)]
    system: Option<System>,
    #[serde(default)]
    pub(crate) stream: bool,
    #[serde(default)]
    tools: Vec<AnthropicTool>,
    #[serde(default)]
    tool_choice: Option<AnthropicToolChoice>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    stop_sequences: Vec<String>,
    /// Fields the gateway does not read: passed to an upstream of the same protocol.
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum System {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Deserialize)]
struct AnthropicTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AnthropicToolChoice {
    Auto {},
    Any {},
    None {},
    Tool { name: String },
}

#[derive(Debug, Deserialize)]
struct AnthropicMessage {
    role: String,
    content: MessageContent,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum MessageContent {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Image {
        source: Source,
    },
    Document {
        source: Source,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        #[serde(default)]
        content: Option<ToolResultContent>,
        #[serde(default)]
        is_error: bool,
    },
    Thinking {
        thinking: String,
    },
    RedactedThinking {},
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source {
    Base64 { media_type: String, data: String },
    Url { url: String },
    Text { data: String },
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolResultContent {
    Text(String),
    Blocks(Vec<Block>),
}

/// The fields of a request the gateway does not read but passes on to an Anthropic upstream:
/// settings that carry no conversation text.
const PASSED_ON: &[&str] = &["metadata", "service_tier", "thinking", "top_k"];

impl Source {
    /// The part of an image's or a document's source (`kind`: the media type of a URL).
    fn part(self, kind: &str) -> Part {
        match self {
            Source::Base64 { media_type, data } => Part::File {
                mime_type: media_type,
                data,
            },
            Source::Url { url } => wire::file_part(&url, kind),
            Source::Text { data } => Part::Text { text: data.into() },
        }
    }
}

impl MessagesRequest {
    /// The request as the model reads it; `pass_on` keeps the fields the gateway does not
    /// read, for an upstream that speaks this protocol.
    pub(crate) fn into_model_request(self, pass_on: bool) -> Result<ModelRequest, ClientError> {
        let mut prompt = Vec::with_capacity(self.messages.len() + 1);
        match self.system {
            None => {}
            Some(System::Text(text)) => prompt.push(Message::system(text)),
            Some(System::Blocks(blocks)) => {
                let text: String = blocks
                    .into_iter()
                    .filter_map(|b| match b {
                        Block::Text { text } => Some(text),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                prompt.push(Message::system(text));
            }
        }
        let mut names = HashMap::new();
        for (i, m) in self.messages.into_iter().enumerate() {
            messages(m, i, &mut names, &mut prompt)?;
        }
        let tools = self
            .tools
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name,
                description: t.description.unwrap_or_default(),
                parameters: t
                    .input_schema
                    .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
            })
            .collect();
        let tool_choice = match self.tool_choice {
            None | Some(AnthropicToolChoice::Auto {}) => ToolChoice::Auto,
            Some(AnthropicToolChoice::Any {}) => ToolChoice::Required,
            Some(AnthropicToolChoice::None {}) => ToolChoice::None,
            Some(AnthropicToolChoice::Tool { name }) => ToolChoice::Tool(name),
        };
        let settings = ModelSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: Some(self.max_tokens),
            stop_sequences: self.stop_sequences,
            seed: None,
        };
        let rest = wire::passed_on(self.rest, PASSED_ON, pass_on, "Anthropic's")?;
        let provider_options = match rest.is_empty() {
            true => Value::Null,
            false => Value::Object(rest),
        };
        Ok(ModelRequest {
            prompt,
            tools,
            tool_choice,
            provider_options,
            settings,
        })
    }
}

/// One message of the request as messages: a user message's tool results become a `tool`
/// message before the rest of it.
fn messages(
    m: AnthropicMessage,
    i: usize,
    names: &mut HashMap<String, String>,
    out: &mut Vec<Message>,
) -> Result<(), ClientError> {
    let role = match m.role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => {
            return Err(ClientError::invalid(
                format!("messages.{i}.role"),
                format!("a message's role is `user` or `assistant`, not `{other}`"),
            ));
        }
    };
    let blocks = match m.content {
        MessageContent::Text(text) => vec![Block::Text { text }],
        MessageContent::Blocks(blocks) => blocks,
    };
    let mut parts = Vec::new();
    let mut results = Vec::new();
    for block in blocks {
        match block {
            Block::Text { text } => parts.push(Part::Text { text: text.into() }),
            Block::Image { source } => parts.push(source.part("image/*")),
            Block::Document { source } => parts.push(source.part("application/pdf")),
            Block::ToolUse { id, name, input } => {
                names.insert(id.clone(), name.clone());
                parts.push(Part::ToolCall(ToolCall {
                    tool_call_id: id,
                    tool_name: name,
                    args: input,
                }));
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text = match content {
                    None => String::new(),
                    Some(ToolResultContent::Text(t)) => t,
                    Some(ToolResultContent::Blocks(b)) => b
                        .into_iter()
                        .filter_map(|b| match b {
                            Block::Text { text } => Some(text),
                            _ => None,
                        })
                        .collect(),
                };
                let name = names.get(&tool_use_id).cloned().unwrap_or_default();
                let mut result = ToolResult::new(tool_use_id, name, Value::String(text));
                result.is_error = is_error;
                results.push(Part::ToolResult(result));
            }
            Block::Thinking { thinking } => parts.push(Part::Reasoning {
                text: thinking.into(),
            }),
            Block::RedactedThinking {} => {}
        }
    }
    if !results.is_empty() {
        out.push(Message::new(Role::Tool, results));
    }
    if !parts.is_empty() {
        out.push(Message::new(role, parts));
    }
    Ok(())
}

/// The stop reason as Anthropic names it.
fn stop_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "max_tokens",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::ContentFilter | FinishReason::Tripwire => "refusal",
        _ => "end_turn",
    }
}

fn usage(u: &Usage) -> Value {
    json!({ "input_tokens": u.input_tokens, "output_tokens": u.output_tokens })
}

/// The answer of a call that does not stream.
pub(crate) fn message(id: &str, model: &str, answer: &Answer) -> Value {
    let mut content = Vec::new();
    if !answer.reasoning.is_empty() {
        content.push(json!({ "type": "thinking", "thinking": answer.reasoning, "signature": "" }));
    }
    if !answer.text.is_empty() {
        content.push(json!({ "type": "text", "text": answer.text }));
    }
    for call in &answer.tool_calls {
        content.push(json!({
            "type": "tool_use",
            "id": call.tool_call_id,
            "name": call.tool_name,
            "input": call.args,
        }));
    }
    let reason = match &answer.refused {
        Some(_) => "refusal",
        None => stop_reason(answer.finish_reason.unwrap_or(FinishReason::Stop)),
    };
    let mut body = json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": null,
        "usage": usage(&answer.usage),
    });
    if let Some(tw) = &answer.refused {
        body["refusal"] = refusal_detail(tw);
    }
    body
}

/// The answer as Anthropic's stream of events: `message_start`, a content block per text
/// run or tool call, `message_delta` with the stop reason, `message_stop`.
pub(crate) fn events(
    id: String,
    model: String,
    events: BoxStream<'static, Event>,
) -> BoxStream<'static, Bytes> {
    let mut writer = EventWriter {
        id,
        model,
        open: None,
        index: 0,
        started: false,
    };
    events.map(move |event| writer.write(event)).boxed()
}

/// The kind of the content block that is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

struct EventWriter {
    id: String,
    model: String,
    open: Option<Open>,
    index: usize,
    started: bool,
}

impl EventWriter {
    fn close(&mut self, out: &mut Sse) {
        if self.open.take().is_some() {
            out.named(
                "content_block_stop",
                &json!({ "type": "content_block_stop", "index": self.index }),
            );
            self.index += 1;
        }
    }

    fn open(&mut self, kind: Open, out: &mut Sse) {
        if self.open == Some(kind) {
            return;
        }
        self.close(out);
        let block = match kind {
            Open::Text => json!({ "type": "text", "text": "" }),
            Open::Thinking => json!({ "type": "thinking", "thinking": "", "signature": "" }),
        };
        out.named(
            "content_block_start",
            &json!({ "type": "content_block_start", "index": self.index, "content_block": block }),
        );
        self.open = Some(kind);
    }

    fn delta(&self, delta: Value, out: &mut Sse) {
        out.named(
            "content_block_delta",
            &json!({ "type": "content_block_delta", "index": self.index, "delta": delta }),
        );
    }

    fn stop(&mut self, reason: &str, u: &Usage, refusal: Option<&TripWire>, out: &mut Sse) {
        self.close(out);
        let mut delta = json!({
            "type": "message_delta",
            "delta": { "stop_reason": reason, "stop_sequence": null },
            "usage": { "input_tokens": u.input_tokens, "output_tokens": u.output_tokens },
        });
        if let Some(tw) = refusal {
            delta["delta"]["refusal"] = refusal_detail(tw);
        }
        out.named("message_delta", &delta);
        out.named("message_stop", &json!({ "type": "message_stop" }));
    }

    /// The events one event of the answer becomes.
    fn write(&mut self, event: Event) -> Bytes {
        let mut out = Sse::with_capacity(192);
        if !self.started && !matches!(event, Event::Failed(_)) {
            self.started = true;
            out.named(
                "message_start",
                &json!({
                    "type": "message_start",
                    "message": {
                        "id": self.id,
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [],
                        "stop_reason": null,
                        "stop_sequence": null,
                        "usage": { "input_tokens": 0, "output_tokens": 0 },
                    },
                }),
            );
        }
        match event {
            Event::Text(text) => {
                self.open(Open::Text, &mut out);
                // Written by hand: no JSON tree for the commonest event.
                out.raw("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":");
                out.number(self.index);
                out.raw(",\"delta\":{\"type\":\"text_delta\",\"text\":");
                out.string(&text);
                out.raw("}}\n\n");
            }
            Event::Reasoning(text) => {
                self.open(Open::Thinking, &mut out);
                self.delta(
                    json!({ "type": "thinking_delta", "thinking": text }),
                    &mut out,
                );
            }
            Event::ToolCall(call) => {
                self.close(&mut out);
                out.named(
                    "content_block_start",
                    &json!({
                        "type": "content_block_start",
                        "index": self.index,
                        "content_block": { "type": "tool_use", "id": call.tool_call_id, "name": call.tool_name, "input": {} },
                    }),
                );
                self.delta(
                    json!({ "type": "input_json_delta", "partial_json": call.args.to_string() }),
                    &mut out,
                );
                out.named(
                    "content_block_stop",
                    &json!({ "type": "content_block_stop", "index": self.index }),
                );
                self.index += 1;
            }
            Event::Finish(reason, u) => self.stop(stop_reason(reason), &u, None, &mut out),
            Event::Refused(tw) => self.stop("refusal", &Usage::default(), Some(&tw), &mut out),
            Event::Failed(e) => out.named("error", &error_body(&ClientError::upstream(&e))),
        }
        out.into_bytes()
    }
}

/// An error in Anthropic's shape.
pub(crate) fn error_body(e: &ClientError) -> Value {
    json!({
        "type": "error",
        "error": { "type": e.kind.anthropic_type(), "message": e.message },
    })
}
