//! OpenAI's chat completions, as the gateway serves them: the request read into a
//! [`ModelRequest`], the answer written as a `chat.completion` or as `chat.completion.chunk`
//! events, refusals and errors in OpenAI's error shape.

use crate::call::{Answer, Event, refusal_detail};
use crate::wire::{self, ClientError, Sse};
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use processors_runtime::chunk::{FinishReason, Usage};
use processors_runtime::message::{Message, Part, Role, ToolCall, ToolResult};
use processors_runtime::model::{ModelRequest, ModelSettings, ToolChoice, ToolSpec};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// A chat completions request: the fields the gateway reads, the others kept in `rest`.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    pub(crate) stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    tools: Vec<ChatTool>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    top_p: Option<f32>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    stop: Option<Stop>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    n: Option<u32>,
    /// Fields the gateway does not read: passed to an upstream of the same protocol.
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct ChatTool {
    #[serde(rename = "type")]
    kind: String,
    function: Function,
}

#[derive(Debug, Deserialize)]
struct Function {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    tool_calls: Vec<ChatToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
    File { file: FileData },
    Refusal { refusal: String },
}

#[derive(Debug, Deserialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Deserialize)]
struct FileData {
    #[serde(default)]
    file_data: Option<String>,
    #[serde(default)]
    file_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChatToolCall {
    id: String,
    function: CallFunction,
}

#[derive(Debug, Deserialize)]
struct CallFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

impl ChatRequest {
    /// Whether the last chunk of a stream carries the usage.
    pub(crate) fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .is_some_and(|o| o.include_usage)
    }

    /// The request as the model reads it; `pass_on` keeps the fields the gateway does not
    /// read, for an upstream that speaks this protocol.
    pub(crate) fn into_model_request(self, pass_on: bool) -> Result<ModelRequest, ClientError> {
        if self.n.is_some_and(|n| n != 1) {
            return Err(ClientError::invalid(
                "n",
                "the gateway answers with one choice; leave `n` out or set it to 1",
            ));
        }
        let mut names: HashMap<String, String> = HashMap::new();
        let mut prompt = Vec::with_capacity(self.messages.len());
        for (i, m) in self.messages.into_iter().enumerate() {
            prompt.push(message(m, i, &mut names)?);
        }
        let tools = self
            .tools
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                if t.kind != "function" {
                    return Err(ClientError::invalid(
                        format!("tools[{i}].type"),
                        format!(
                            "the gateway offers tools of type `function`, not `{}`",
                            t.kind
                        ),
                    ));
                }
                Ok(ToolSpec {
                    name: t.function.name,
                    description: t.function.description.unwrap_or_default(),
                    parameters: t
                        .function
                        .parameters
                        .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tool_choice = match &self.tool_choice {
            None => ToolChoice::Auto,
            Some(v) => tool_choice(v)?,
        };
        let mut rest = wire::passed_on(self.rest, PASSED_ON, pass_on, "OpenAI's")?;
        // An OpenAI upstream gets `max_completion_tokens` as it came (reasoning models refuse
        // `max_tokens`); another reads it as its output limit.
        let max_completion = match (pass_on, self.max_completion_tokens) {
            (true, Some(n)) => {
                rest.insert("max_completion_tokens".into(), json!(n));
                None
            }
            (_, n) => n,
        };
        let settings = ModelSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: max_completion.or(self.max_tokens),
            stop_sequences: match self.stop {
                None => Vec::new(),
                Some(Stop::One(s)) => vec![s],
                Some(Stop::Many(v)) => v,
            },
            seed: self.seed,
        };
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

/// The fields of a request the gateway does not read but passes on to an OpenAI upstream:
/// settings, none of which carries conversation text (what does, like `prediction`, would
/// reach the upstream past the policies' input processors, and is refused).
const PASSED_ON: &[&str] = &[
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "metadata",
    "modalities",
    "parallel_tool_calls",
    "presence_penalty",
    "reasoning_effort",
    "response_format",
    "service_tier",
    "store",
    "top_logprobs",
    "user",
    "verbosity",
];

fn tool_choice(v: &Value) -> Result<ToolChoice, ClientError> {
    match v {
        Value::String(s) if s == "auto" => Ok(ToolChoice::Auto),
        Value::String(s) if s == "none" => Ok(ToolChoice::None),
        Value::String(s) if s == "required" => Ok(ToolChoice::Required),
        Value::Object(o) => match o.get("function").and_then(|f| f.get("name")) {
            Some(Value::String(name)) => Ok(ToolChoice::Tool(name.clone())),
            _ => Err(ClientError::invalid(
                "tool_choice",
                "a tool choice object names its function: `{\"type\": \"function\", \"function\": {\"name\": \"...\"}}`",
            )),
        },
        other => Err(ClientError::invalid(
            "tool_choice",
            format!("`tool_choice` is `auto`, `none`, `required` or a function, not {other}"),
        )),
    }
}

/// One chat message as a message; `names` maps tool call ids to their tools' names, for
/// the results that follow.
fn message(
    m: ChatMessage,
    i: usize,
    names: &mut HashMap<String, String>,
) -> Result<Message, ClientError> {
    let role = match m.role.as_str() {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(ClientError::invalid(
                format!("messages[{i}].role"),
                format!(
                    "a message's role is `system`, `developer`, `user`, `assistant` or `tool`, not `{other}`"
                ),
            ));
        }
    };
    let mut parts = Vec::new();
    if role == Role::Tool {
        let Some(id) = m.tool_call_id else {
            return Err(ClientError::invalid(
                format!("messages[{i}].tool_call_id"),
                "a `tool` message names the call it answers in `tool_call_id`",
            ));
        };
        let text = match m.content {
            None => String::new(),
            Some(Content::Text(t)) => t,
            Some(Content::Parts(p)) => p
                .into_iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text),
                    _ => None,
                })
                .collect(),
        };
        let name = names.get(&id).cloned().unwrap_or_default();
        parts.push(Part::ToolResult(ToolResult::new(
            id,
            name,
            Value::String(text),
        )));
        return Ok(Message::new(role, parts));
    }
    match m.content {
        None => {}
        Some(Content::Text(text)) => parts.push(Part::Text { text: text.into() }),
        Some(Content::Parts(content)) => {
            for (j, part) in content.into_iter().enumerate() {
                parts.push(match part {
                    ContentPart::Text { text } | ContentPart::Refusal { refusal: text } => {
                        Part::Text { text: text.into() }
                    }
                    ContentPart::ImageUrl { image_url } => {
                        wire::file_part(&image_url.url, "image/*")
                    }
                    ContentPart::File { file } => match (file.file_data, file.file_id) {
                        (Some(data), _) => wire::file_part(&data, "application/octet-stream"),
                        _ => {
                            return Err(ClientError::invalid(
                                format!("messages[{i}].content[{j}].file"),
                                "the gateway takes files inline (`file_data`), not by `file_id`",
                            ));
                        }
                    },
                });
            }
        }
    }
    for (j, call) in m.tool_calls.into_iter().enumerate() {
        names.insert(call.id.clone(), call.function.name.clone());
        let args = wire::arguments(&call.function.arguments).ok_or_else(|| {
            ClientError::invalid(
                format!("messages[{i}].tool_calls[{j}].function.arguments"),
                "a tool call's `arguments` is a JSON text",
            )
        })?;
        parts.push(Part::ToolCall(ToolCall {
            tool_call_id: call.id,
            tool_name: call.function.name,
            args,
        }));
    }
    Ok(Message::new(role, parts))
}

/// The finish reason as OpenAI names it.
fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter | FinishReason::Tripwire => "content_filter",
        _ => "stop",
    }
}

fn usage(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.total_tokens,
    })
}

fn tool_call(index: usize, call: &ToolCall) -> Value {
    json!({
        "index": index,
        "id": call.tool_call_id,
        "type": "function",
        "function": { "name": call.tool_name, "arguments": call.args.to_string() },
    })
}

/// The answer of a call that does not stream.
pub(crate) fn completion(id: &str, model: &str, created: u64, answer: &Answer) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        match answer.text.is_empty() && !answer.tool_calls.is_empty() {
            true => Value::Null,
            false => json!(answer.text),
        },
    );
    if !answer.reasoning.is_empty() {
        message.insert("reasoning_content".into(), json!(answer.reasoning));
    }
    if !answer.tool_calls.is_empty() {
        let calls: Vec<Value> = answer
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut v = tool_call(i, c);
                v.as_object_mut().map(|o| o.remove("index"));
                v
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let reason = match &answer.refused {
        Some(_) => "content_filter",
        None => finish_reason(answer.finish_reason.unwrap_or(FinishReason::Stop)),
    };
    let mut choice =
        json!({ "index": 0, "message": message, "finish_reason": reason, "logprobs": null });
    if let Some(tw) = &answer.refused {
        choice["content_filter"] = refusal_detail(tw);
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": usage(&answer.usage),
    })
}

/// The answer as `chat.completion.chunk` events, then `[DONE]`.
pub(crate) fn chunks(
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    events: BoxStream<'static, Event>,
) -> BoxStream<'static, Bytes> {
    let text_head = format!(
        "data: {{\"id\":{},\"object\":\"chat.completion.chunk\",\"created\":{created},\"model\":{},\"choices\":[{{\"index\":0,\"delta\":{{\"content\":",
        Value::from(id.as_str()),
        Value::from(model.as_str())
    );
    let mut writer = ChunkWriter {
        id,
        model,
        created,
        include_usage,
        calls: 0,
        started: false,
        text_head,
    };
    let body = events.map(move |event| writer.write(event));
    let done = futures::stream::once(async { Bytes::from_static(b"data: [DONE]\n\n") });
    body.chain(done).boxed()
}

struct ChunkWriter {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    calls: usize,
    started: bool,
    /// A text delta's event up to its text.
    text_head: String,
}

/// A text delta's event after its text.
const TEXT_TAIL: &str = "},\"finish_reason\":null,\"logprobs\":null}]}\n\n";

impl ChunkWriter {
    fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": null }],
        })
    }

    /// The events one event of the answer becomes.
    fn write(&mut self, event: Event) -> Bytes {
        let mut out = Sse::with_capacity(self.text_head.len() + TEXT_TAIL.len() + 64);
        if !self.started && !matches!(event, Event::Failed(_)) {
            self.started = true;
            out.json(&self.chunk(json!({ "role": "assistant", "content": "" }), None));
        }
        match event {
            Event::Text(text) => {
                out.raw(&self.text_head);
                out.string(&text);
                out.raw(TEXT_TAIL);
            }
            Event::Reasoning(text) => {
                out.json(&self.chunk(json!({ "reasoning_content": text }), None));
            }
            Event::ToolCall(call) => {
                let delta = json!({ "tool_calls": [tool_call(self.calls, &call)] });
                self.calls += 1;
                out.json(&self.chunk(delta, None));
            }
            Event::Finish(reason, u) => {
                out.json(&self.chunk(json!({}), Some(finish_reason(reason))));
                if self.include_usage {
                    out.json(&json!({
                        "id": self.id,
                        "object": "chat.completion.chunk",
                        "created": self.created,
                        "model": self.model,
                        "choices": [],
                        "usage": usage(&u),
                    }));
                }
            }
            Event::Refused(tw) => {
                let mut chunk = self.chunk(json!({}), Some("content_filter"));
                chunk["choices"][0]["content_filter"] = refusal_detail(&tw);
                out.json(&chunk);
            }
            Event::Failed(e) => out.json(&error_body(&ClientError::upstream(&e))),
        }
        out.into_bytes()
    }
}

/// An error in OpenAI's shape.
pub(crate) fn error_body(e: &ClientError) -> Value {
    json!({
        "error": {
            "message": e.message,
            "type": e.kind.openai_type(),
            "param": e.param,
            "code": e.code,
        }
    })
}
