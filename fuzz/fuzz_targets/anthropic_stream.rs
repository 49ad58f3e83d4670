//! Messages-API event streams, plausible and not, into the Anthropic decoder: blocks started
//! twice, deltas of blocks never started or of the wrong kind, huge indices, duplicate tool
//! ids, unknown event types, error events, bytes that are not UTF-8, and whole answers sent
//! as one JSON document.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use processors_fuzz::{AnyJson, Field, Number, ProtocolEvent, Text, Wire};
use processors_providers::__fuzz::Protocol;
use serde_json::{Map, Value, json};

#[derive(Arbitrary, Debug)]
#[allow(clippy::large_enum_variant)] // Built once per run.
enum Input {
    Stream {
        events: Vec<Wire<Event>>,
        crlf: bool,
        cuts: Vec<u16>,
    },
    Answer {
        kind: Field<Text>,
        content: Field<Vec<Block>>,
        stop_reason: Field<StopReason>,
        usage: Field<Usage>,
    },
}

#[derive(Arbitrary, Debug)]
enum Event {
    MessageStart {
        usage: Field<Usage>,
    },
    BlockStart {
        index: Field<Number>,
        block: Field<Block>,
    },
    BlockDelta {
        index: Field<Number>,
        delta: Field<Delta>,
    },
    BlockStop {
        index: Field<Number>,
    },
    MessageDelta {
        stop_reason: Field<StopReason>,
        usage: Field<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        kind: Field<Text>,
        message: Field<Text>,
    },
    Unknown {
        kind: Text,
        body: AnyJson,
    },
}

#[derive(Arbitrary, Debug)]
enum Block {
    Text {
        text: Field<Text>,
    },
    Thinking {
        thinking: Field<Text>,
    },
    ToolUse {
        id: Field<Text>,
        name: Field<Text>,
        input: Field<Vec<(Text, AnyJson)>>,
    },
    Other {
        kind: Text,
    },
}

#[derive(Arbitrary, Debug)]
enum Delta {
    Text(Field<Text>),
    Thinking(Field<Text>),
    InputJson(Field<Text>),
    Signature(Text),
    Other { kind: Text },
}

#[derive(Arbitrary, Debug)]
enum StopReason {
    EndTurn,
    StopSequence,
    MaxTokens,
    ToolUse,
    Refusal,
    Other(Text),
}

#[derive(Arbitrary, Debug)]
struct Usage {
    input: Field<Number>,
    output: Field<Number>,
}

impl Usage {
    fn value(&self) -> Value {
        let mut o = Map::new();
        self.input.put(&mut o, "input_tokens", Number::value);
        self.output.put(&mut o, "output_tokens", Number::value);
        Value::Object(o)
    }
}

impl StopReason {
    fn value(&self) -> Value {
        json!(match self {
            StopReason::EndTurn => "end_turn".to_owned(),
            StopReason::StopSequence => "stop_sequence".to_owned(),
            StopReason::MaxTokens => "max_tokens".to_owned(),
            StopReason::ToolUse => "tool_use".to_owned(),
            StopReason::Refusal => "refusal".to_owned(),
            StopReason::Other(t) => t.get(),
        })
    }
}

impl Block {
    fn value(&self) -> Value {
        let mut o = Map::new();
        let kind = match self {
            Block::Text { text } => {
                text.put(&mut o, "text", |t| json!(t.get()));
                "text".to_owned()
            }
            Block::Thinking { thinking } => {
                thinking.put(&mut o, "thinking", |t| json!(t.get()));
                "thinking".to_owned()
            }
            Block::ToolUse { id, name, input } => {
                id.put(&mut o, "id", |t| json!(t.get()));
                name.put(&mut o, "name", |t| json!(t.get()));
                input.put(&mut o, "input", |fields| {
                    Value::Object(fields.iter().map(|(k, v)| (k.get(), v.value())).collect())
                });
                "tool_use".to_owned()
            }
            Block::Other { kind } => kind.get(),
        };
        o.insert("type".into(), json!(kind));
        Value::Object(o)
    }
}

impl Delta {
    fn value(&self) -> Value {
        let mut o = Map::new();
        let kind = match self {
            Delta::Text(t) => {
                t.put(&mut o, "text", |t| json!(t.get()));
                "text_delta".to_owned()
            }
            Delta::Thinking(t) => {
                t.put(&mut o, "thinking", |t| json!(t.get()));
                "thinking_delta".to_owned()
            }
            Delta::InputJson(t) => {
                t.put(&mut o, "partial_json", |t| json!(t.get()));
                "input_json_delta".to_owned()
            }
            Delta::Signature(t) => {
                o.insert("signature".into(), json!(t.get()));
                "signature_delta".to_owned()
            }
            Delta::Other { kind } => kind.get(),
        };
        o.insert("type".into(), json!(kind));
        Value::Object(o)
    }
}

impl ProtocolEvent for Event {
    fn data(&self) -> String {
        let mut o = Map::new();
        let kind = match self {
            Event::MessageStart { usage } => {
                let mut message = Map::new();
                usage.put(&mut message, "usage", Usage::value);
                o.insert("message".into(), Value::Object(message));
                "message_start"
            }
            Event::BlockStart { index, block } => {
                index.put(&mut o, "index", Number::value);
                block.put(&mut o, "content_block", Block::value);
                "content_block_start"
            }
            Event::BlockDelta { index, delta } => {
                index.put(&mut o, "index", Number::value);
                delta.put(&mut o, "delta", Delta::value);
                "content_block_delta"
            }
            Event::BlockStop { index } => {
                index.put(&mut o, "index", Number::value);
                "content_block_stop"
            }
            Event::MessageDelta { stop_reason, usage } => {
                let mut delta = Map::new();
                stop_reason.put(&mut delta, "stop_reason", StopReason::value);
                o.insert("delta".into(), Value::Object(delta));
                usage.put(&mut o, "usage", Usage::value);
                "message_delta"
            }
            Event::MessageStop => "message_stop",
            Event::Ping => "ping",
            Event::Error { kind, message } => {
                let mut e = Map::new();
                kind.put(&mut e, "type", |t| json!(t.get()));
                message.put(&mut e, "message", |t| json!(t.get()));
                o.insert("error".into(), Value::Object(e));
                "error"
            }
            Event::Unknown { kind, body } => {
                o.insert("body".into(), body.value());
                o.insert("type".into(), json!(kind.get()));
                return Value::Object(o).to_string();
            }
        };
        o.insert("type".into(), json!(kind));
        Value::Object(o).to_string()
    }
}

fuzz_target!(|input: Input| {
    match input {
        Input::Stream { events, crlf, cuts } => {
            let bytes = processors_fuzz::wire_bytes(&events, crlf);
            let items = processors_fuzz::decode_stream(Protocol::Anthropic, &bytes, &cuts);
            processors_fuzz::check(&items);
        }
        Input::Answer {
            kind,
            content,
            stop_reason,
            usage,
        } => {
            let mut answer = Map::new();
            kind.put(&mut answer, "type", |t| json!(t.get()));
            content.put(&mut answer, "content", |blocks| {
                blocks.iter().map(Block::value).collect()
            });
            stop_reason.put(&mut answer, "stop_reason", StopReason::value);
            usage.put(&mut answer, "usage", Usage::value);
            if let Some(items) =
                processors_fuzz::answer_items(Protocol::Anthropic, &Value::Object(answer))
            {
                processors_fuzz::check(&items);
            }
        }
    }
});
