//! Chat-completion event streams, plausible and not, into the OpenAI-compatible decoder:
//! out-of-order and duplicate tool-call pieces, huge indices, unknown fields, error objects,
//! bytes that are not UTF-8, and whole answers sent as one JSON document.
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
        message: Field<Delta>,
        finish_reason: Field<Reason>,
        usage: Field<Usage>,
        extra_choices: u8,
    },
}

#[derive(Arbitrary, Debug)]
enum Event {
    Chunk {
        choices: Field<Vec<Choice>>,
        usage: Field<Usage>,
    },
    Done,
    Error {
        message: Field<Text>,
        code: Field<Number>,
        kind: Field<Text>,
    },
    Empty,
}

#[derive(Arbitrary, Debug)]
struct Choice {
    index: Field<Number>,
    delta: Field<Delta>,
    finish_reason: Field<Reason>,
}

#[derive(Arbitrary, Debug)]
struct Delta {
    role: Field<Text>,
    content: Field<Text>,
    reasoning_content: Field<Text>,
    reasoning: Field<Text>,
    tool_calls: Field<Vec<CallPiece>>,
}

#[derive(Arbitrary, Debug)]
struct CallPiece {
    index: Field<Number>,
    id: Field<Text>,
    kind: Field<Text>,
    name: Field<Text>,
    arguments: Field<Arguments>,
}

#[derive(Arbitrary, Debug)]
enum Arguments {
    Text(Text),
    Object(Vec<(Text, AnyJson)>),
}

#[derive(Arbitrary, Debug)]
enum Reason {
    Stop,
    Length,
    ToolCalls,
    FunctionCall,
    ContentFilter,
    Other(Text),
}

#[derive(Arbitrary, Debug)]
struct Usage {
    prompt: Field<Number>,
    completion: Field<Number>,
    total: Field<Number>,
}

impl Reason {
    fn value(&self) -> Value {
        json!(match self {
            Reason::Stop => "stop".to_owned(),
            Reason::Length => "length".to_owned(),
            Reason::ToolCalls => "tool_calls".to_owned(),
            Reason::FunctionCall => "function_call".to_owned(),
            Reason::ContentFilter => "content_filter".to_owned(),
            Reason::Other(t) => t.get(),
        })
    }
}

impl Usage {
    fn value(&self) -> Value {
        let mut o = Map::new();
        self.prompt.put(&mut o, "prompt_tokens", Number::value);
        self.completion
            .put(&mut o, "completion_tokens", Number::value);
        self.total.put(&mut o, "total_tokens", Number::value);
        Value::Object(o)
    }
}

impl Delta {
    fn value(&self) -> Value {
        let mut o = Map::new();
        self.role.put(&mut o, "role", |t| json!(t.get()));
        self.content.put(&mut o, "content", |t| json!(t.get()));
        self.reasoning_content
            .put(&mut o, "reasoning_content", |t| json!(t.get()));
        self.reasoning.put(&mut o, "reasoning", |t| json!(t.get()));
        self.tool_calls.put(&mut o, "tool_calls", |calls| {
            calls.iter().map(CallPiece::value).collect()
        });
        Value::Object(o)
    }
}

impl CallPiece {
    fn value(&self) -> Value {
        let mut o = Map::new();
        self.index.put(&mut o, "index", Number::value);
        self.id.put(&mut o, "id", |t| json!(t.get()));
        self.kind.put(&mut o, "type", |t| json!(t.get()));
        let mut function = Map::new();
        self.name.put(&mut function, "name", |t| json!(t.get()));
        self.arguments.put(&mut function, "arguments", |a| match a {
            Arguments::Text(t) => json!(t.get()),
            Arguments::Object(fields) => {
                Value::Object(fields.iter().map(|(k, v)| (k.get(), v.value())).collect())
            }
        });
        o.insert("function".into(), Value::Object(function));
        Value::Object(o)
    }
}

impl Choice {
    fn value(&self) -> Value {
        let mut o = Map::new();
        self.index.put(&mut o, "index", Number::value);
        self.delta.put(&mut o, "delta", Delta::value);
        self.finish_reason
            .put(&mut o, "finish_reason", Reason::value);
        Value::Object(o)
    }
}

impl ProtocolEvent for Event {
    fn data(&self) -> String {
        match self {
            Event::Chunk { choices, usage } => {
                let mut o = Map::new();
                o.insert("object".into(), json!("chat.completion.chunk"));
                choices.put(&mut o, "choices", |c| c.iter().map(Choice::value).collect());
                usage.put(&mut o, "usage", Usage::value);
                Value::Object(o).to_string()
            }
            Event::Done => "[DONE]".to_owned(),
            Event::Error {
                message,
                code,
                kind,
            } => {
                let mut e = Map::new();
                message.put(&mut e, "message", |t| json!(t.get()));
                code.put(&mut e, "code", Number::value);
                kind.put(&mut e, "type", |t| json!(t.get()));
                json!({ "error": e }).to_string()
            }
            Event::Empty => String::new(),
        }
    }
}

fuzz_target!(|input: Input| {
    match input {
        Input::Stream { events, crlf, cuts } => {
            let bytes = processors_fuzz::wire_bytes(&events, crlf);
            let items = processors_fuzz::decode_stream(Protocol::OpenAi, &bytes, &cuts);
            processors_fuzz::check(&items);
        }
        Input::Answer {
            message,
            finish_reason,
            usage,
            extra_choices,
        } => {
            let mut choice = Map::new();
            message.put(&mut choice, "message", Delta::value);
            finish_reason.put(&mut choice, "finish_reason", Reason::value);
            let mut choices = vec![Value::Object(choice)];
            choices.extend((0..extra_choices % 3).map(|_| json!({ "message": {} })));
            let mut answer = Map::new();
            answer.insert("choices".into(), Value::Array(choices));
            usage.put(&mut answer, "usage", Usage::value);
            if let Some(items) =
                processors_fuzz::answer_items(Protocol::OpenAi, &Value::Object(answer))
            {
                processors_fuzz::check(&items);
            }
        }
    }
});
