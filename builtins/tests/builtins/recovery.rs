//! The recovery processors (behaviours 13-28 of docs/builtins.md): each repairs the
//! error it recognises and the retry succeeds, leaves other errors alone, and stops after its
//! attempts; then each through a real provider client against a server on 127.0.0.1 that
//! answers with the provider's own error body.

use crate::common;
use crate::loopback;

use loopback::server;

use common::{saved, thread};
use futures::StreamExt;
use futures::executor::block_on;
use futures::future::BoxFuture;
use processors_builtins::recovery::{
    Backoff, BuiltinRule, CompatRule, ContextLengthHandler, Jitter, PrefillErrorHandler,
    ProviderHistoryCompat, Setting, StreamErrorRetry, TrailingAssistantGuard, TrailingStrategy,
    UnsupportedFileHandler, UnsupportedSettingHandler,
};
use processors_providers::{Anthropic, OpenAiCompatible};
use processors_runtime::model::ModelSettings;
use processors_runtime::model::{ModelRequest, ModelStream};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Errors as the provider clients classify them, and conversations.

/// An Anthropic 400 as the client reports it: its message, with its body.
fn anthropic_400(message: &str) -> ApiError {
    let body = json!({ "type": "error", "error": { "type": "invalid_request_error", "message": message } });
    ApiError::new(
        400,
        format!("bad request: {message} (invalid_request_error)"),
    )
    .with_body(body.to_string())
}

/// An OpenAI 400 as the client reports it (the type names it; the code is in the body).
fn openai_400(message: &str, code: Option<&str>) -> ApiError {
    let body = json!({ "error": {
        "message": message, "type": "invalid_request_error", "param": "messages", "code": code,
    } });
    ApiError::new(
        400,
        format!("bad request: {message} (invalid_request_error)"),
    )
    .with_body(body.to_string())
}

const PREFILL: &str = "This model does not support assistant message prefill. The conversation must end with a user message.";
const CONTEXT: &str = "This model's maximum context length is 128000 tokens. However, your messages resulted in 130567 tokens. Please reduce the length of the messages.";
const ANTHROPIC_TOO_LONG: &str = "prompt is too long: 210311 tokens > 200000 maximum";

fn call(id: &str) -> Part {
    Part::ToolCall(ToolCall {
        tool_call_id: id.into(),
        tool_name: "weather".into(),
        args: json!({ "city": "Oslo" }),
    })
}

fn result(id: &str, text: &str) -> Part {
    Part::ToolResult(ToolResult {
        tool_call_id: id.into(),
        tool_name: "weather".into(),
        result: json!(text),
        is_error: false,
        model_output: None,
    })
}

fn assistant(parts: Vec<Part>) -> Message {
    Message::new(Role::Assistant, parts)
}

fn tool_message(parts: Vec<Part>) -> Message {
    Message::new(Role::Tool, parts)
}

fn text(t: &str) -> Part {
    Part::Text { text: t.into() }
}

fn texts(prompt: &[Message]) -> Vec<String> {
    prompt.iter().map(Message::text).collect()
}

fn call_ids(prompt: &[Message]) -> Vec<String> {
    prompt
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| c.tool_call_id.clone())
        .collect()
}

fn result_ids(prompt: &[Message]) -> Vec<String> {
    prompt
        .iter()
        .flat_map(|m| &m.content.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

/// Every tool result answers a call made before it.
fn pair_safe(prompt: &[Message]) -> bool {
    let mut seen = HashSet::new();
    for part in prompt.iter().flat_map(|m| &m.content.parts) {
        match part {
            Part::ToolCall(c) => {
                seen.insert(c.tool_call_id.clone());
            }
            Part::ToolResult(r) if !seen.contains(&r.tool_call_id) => return false,
            _ => {}
        }
    }
    true
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 40
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What a strict provider refuses in a prompt, in Anthropic's words, or `None`.
fn refusal(prompt: &[Message], provider: &str) -> Option<String> {
    let conversation: Vec<&Message> = prompt.iter().filter(|m| m.role != Role::System).collect();
    for (i, m) in conversation.iter().enumerate() {
        for (j, p) in m.content.parts.iter().enumerate() {
            let id = match p {
                Part::ToolCall(c) => &c.tool_call_id,
                Part::ToolResult(r) => &r.tool_call_id,
                _ => continue,
            };
            if !valid_id(id) {
                return Some(format!(
                    "messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                ));
            }
        }
    }
    let mut seen = HashSet::new();
    for (i, m) in conversation.iter().enumerate() {
        for p in &m.content.parts {
            match p {
                Part::ToolCall(c) => {
                    seen.insert(c.tool_call_id.clone());
                }
                Part::ToolResult(r) if !seen.contains(&r.tool_call_id) => {
                    return Some(format!(
                        "messages.{i}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                        r.tool_call_id
                    ));
                }
                _ => {}
            }
        }
    }
    let answered: HashSet<String> = result_ids(prompt).into_iter().collect();
    for (i, m) in conversation.iter().enumerate() {
        if let Some(c) = m.tool_calls().find(|c| !answered.contains(&c.tool_call_id)) {
            return Some(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                c.tool_call_id
            ));
        }
    }
    for (i, m) in conversation.iter().enumerate() {
        let blank = m
            .content
            .parts
            .iter()
            .all(|p| matches!(p, Part::Text { text } if text.trim().is_empty()))
            || m.content
                .parts
                .iter()
                .any(|p| matches!(p, Part::Text { text } if text.trim().is_empty()));
        if m.role == Role::Assistant && blank {
            return Some(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
    }
    if provider == "anthropic" {
        for (i, m) in conversation.iter().enumerate() {
            if m.content
                .parts
                .iter()
                .any(|p| matches!(p, Part::Reasoning { .. }))
            {
                return Some(format!(
                    "messages.{i}.content.0.thinking.signature: Field required"
                ));
            }
        }
    }
    None
}

/// A model that refuses, as a strict provider would, every prompt that breaks its rules, and
/// answers the others.
fn strict(answer: &'static str) -> ScriptedModel {
    strict_as(answer, "scripted")
}

fn strict_as(answer: &'static str, provider: &'static str) -> ScriptedModel {
    ScriptedModel::responder(move |request, _| match refusal(&request.prompt, provider) {
        Some(message) => Turn::error(anthropic_400(&message)),
        None => Turn::text(answer),
    })
}

/// A model that says it is another provider's.
#[derive(Clone)]
struct AsProvider {
    inner: ScriptedModel,
    provider: &'static str,
}

impl LanguageModel for AsProvider {
    fn provider(&self) -> &str {
        self.provider
    }
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        self.inner.stream(request)
    }
}

fn api_error(result: Result<GenerateResult, AgentError>) -> ApiError {
    match result {
        Err(AgentError::Api(e)) => e,
        Err(other) => panic!("expected a provider error, got {other}"),
        Ok(r) => panic!("expected a provider error, got an answer: {:?}", r.text),
    }
}

/// The step-finish chunks: reason and the processor that asked for a retry.
fn step_finishes(chunks: &[Chunk]) -> Vec<(FinishReason, Option<String>)> {
    chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::StepFinish {
                finish_reason,
                retry,
                ..
            } => Some((
                *finish_reason,
                retry.as_ref().map(|r| r.processor_id.clone()),
            )),
            _ => None,
        })
        .collect()
}

/// The text a client shows that drops a step's text when the step finishes with reason
/// `retry`.
fn shown_text(chunks: &[Chunk]) -> String {
    let mut shown = String::new();
    let mut step = String::new();
    for c in chunks {
        match &c.kind {
            ChunkKind::TextDelta { text, .. } => step.push_str(text),
            ChunkKind::StepFinish {
                finish_reason: FinishReason::Retry,
                ..
            } => step.clear(),
            ChunkKind::StepFinish { .. } => shown.push_str(&std::mem::take(&mut step)),
            _ => {}
        }
    }
    shown + &step
}

async fn streamed<I: Pipeline, O: Pipeline, E: Pipeline>(
    agent: &Agent<I, O, E>,
    input: Vec<Message>,
) -> (Vec<Chunk>, Result<GenerateResult, AgentError>) {
    let mut s = agent.stream(input);
    let mut chunks = Vec::new();
    while let Some(c) = s.next().await {
        chunks.push(c);
    }
    (chunks, s.finish().await)
}

// ---------------------------------------------------------------------------------------------
// PrefillErrorHandler

#[test]
fn bi_13_a_prefill_refusal_is_continued_and_retried() {
    let model = ScriptedModel::new([
        Turn::error(anthropic_400(PREFILL)),
        Turn::text(" on the roof."),
    ]);
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .error(PrefillErrorHandler::new())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("Finish my sentence: rain"),
        Message::assistant("Rain falls"),
    ];
    let (chunks, r) = block_on(async {
        let mut s = agent.stream_with(conversation, thread());
        let mut chunks = Vec::new();
        while let Some(c) = s.next().await {
            chunks.push(c);
        }
        (chunks, s.finish().await)
    });
    let r = r.unwrap();
    assert_eq!(r.text, " on the roof.");
    assert_eq!(model.calls(), 2);
    let requests = model.requests();
    assert_eq!(requests[0].prompt.last().unwrap().role, Role::Assistant);
    let last = requests[1].prompt.last().unwrap();
    assert_eq!((last.role, last.text().as_str()), (Role::User, "Continue."));
    assert_eq!(
        last.metadata,
        Some(json!({ "recovery": "prefill-error-handler" }))
    );
    assert_eq!(
        step_finishes(&chunks)[0],
        (
            FinishReason::Retry,
            Some("prefill-error-handler".to_owned())
        )
    );
    // The continuation is context: not a response message, not saved.
    assert!(
        r.response_messages
            .iter()
            .all(|m| m.role == Role::Assistant)
    );
    let saved = saved(&store);
    assert_eq!(
        texts(&saved),
        ["Finish my sentence: rain", "Rain falls", " on the roof."]
    );
}

#[test]
fn bi_13_the_continuation_can_be_configured() {
    let model = ScriptedModel::new([Turn::error(anthropic_400(PREFILL)), Turn::text("ok")]);
    let handler = PrefillErrorHandler::builder()
        .continuation("Please go on.")
        .build()
        .unwrap();
    let agent = processors_macros::agent! {
        crate: processors_runtime,
        model: model.clone(),
        error: [handler],
    };
    block_on(agent.generate(vec![Message::user("q"), Message::assistant("a")])).unwrap();
    assert_eq!(
        model.requests()[1]
            .prompt
            .last()
            .map(Message::text)
            .as_deref(),
        Some("Please go on.")
    );
}

#[test]
fn bi_14_the_prefill_handler_leaves_other_errors_alone() {
    for error in [
        anthropic_400("Unknown parameter: top_k_sampling"),
        ApiError::new(500, PREFILL),
        ApiError::other(PREFILL, false),
    ] {
        let model = ScriptedModel::new([Turn::error(error.clone()), Turn::text("never")]);
        let agent = Agent::builder()
            .model(model.clone())
            .error(PrefillErrorHandler::new())
            .build()
            .unwrap();
        let e = api_error(block_on(agent.generate("hi")));
        assert_eq!(e, error);
        assert_eq!(model.calls(), 1, "{error}");
    }
}

#[test]
fn bi_14_the_prefill_handler_retries_once() {
    let model = ScriptedModel::cycle([Turn::error(anthropic_400(PREFILL))]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(PrefillErrorHandler::new())
        .build()
        .unwrap();
    let e = api_error(block_on(
        agent.generate(vec![Message::user("q"), Message::assistant("a")]),
    ));
    assert_eq!(e.status, Some(400));
    assert_eq!(model.calls(), 2);
    let continuations = model.requests()[1]
        .prompt
        .iter()
        .filter(|m| m.text() == "Continue.")
        .count();
    assert_eq!(continuations, 1);
}

// ---------------------------------------------------------------------------------------------
// ProviderHistoryCompat: before the call

/// An agent with the compat processor in `input` (before the call only), on `model`.
fn rewriting(model: impl LanguageModel, compat: ProviderHistoryCompat) -> Agent {
    Agent::builder().model(model).input(compat).build().unwrap()
}

fn before_call_only() -> ProviderHistoryCompat {
    ProviderHistoryCompat::builder()
        .after_error(false)
        .build()
        .unwrap()
}

#[test]
fn bi_15_orphan_tool_results_are_left_out_of_the_prompt() {
    let model = strict("sunny");
    let agent = rewriting(model.clone(), before_call_only());
    let history = vec![
        tool_message(vec![result("c0", "old result")]),
        Message::user("weather?"),
        assistant(vec![call("c1")]),
        tool_message(vec![result("c1", "sunny"), result("c9", "stray")]),
        Message::user("and tomorrow?"),
    ];
    let r = block_on(agent.generate(history)).unwrap();
    assert_eq!(r.text, "sunny");
    assert_eq!(model.calls(), 1, "the provider accepted the first prompt");
    let prompt = &model.requests()[0].prompt;
    assert_eq!(result_ids(prompt), ["c1"]);
    assert_eq!(prompt.len(), 4, "the emptied tool message is left out");
    assert_eq!(prompt[0].text(), "weather?");
}

#[test]
fn bi_16_tool_calls_without_results_are_left_out_of_the_prompt() {
    let model = strict("sunny");
    let agent = rewriting(model.clone(), before_call_only());
    let history = vec![
        Message::user("weather?"),
        assistant(vec![text("Let me check."), call("c1")]),
        Message::user("never mind, and tomorrow?"),
        assistant(vec![call("c2")]),
        Message::user("well?"),
    ];
    block_on(agent.generate(history)).unwrap();
    assert_eq!(model.calls(), 1);
    let prompt = &model.requests()[0].prompt;
    assert!(call_ids(prompt).is_empty());
    assert_eq!(
        texts(prompt),
        [
            "weather?",
            "Let me check.",
            "never mind, and tomorrow?",
            "well?"
        ]
    );
}

#[test]
fn bi_17_empty_assistant_messages_are_left_out_of_the_prompt() {
    let model = strict("ok");
    let agent = rewriting(model.clone(), before_call_only());
    let history = vec![
        Message::user("one"),
        assistant(vec![]),
        Message::user("two"),
        assistant(vec![text("  \n")]),
        Message::user("three"),
        assistant(vec![text(" "), text("an answer")]),
        Message::user("four"),
    ];
    block_on(agent.generate(history)).unwrap();
    assert_eq!(model.calls(), 1);
    let prompt = &model.requests()[0].prompt;
    assert_eq!(texts(prompt), ["one", "two", "three", "an answer", "four"]);
    assert_eq!(prompt[3].content.parts, [text("an answer")]);
}

fn with_reasoning() -> Vec<Message> {
    vec![
        Message::user("6 x 7?"),
        assistant(vec![
            Part::Reasoning {
                text: "six sevens".into(),
            },
            text("42"),
        ]),
        Message::user("and 6 x 8?"),
    ]
}

#[test]
fn bi_18_reasoning_is_left_out_for_anthropic_only() {
    let inner = strict_as("48", "anthropic");
    let anthropic = AsProvider {
        inner: inner.clone(),
        provider: "anthropic",
    };
    let agent = rewriting(anthropic, before_call_only());
    block_on(agent.generate(with_reasoning())).unwrap();
    assert_eq!(inner.calls(), 1);
    let prompt = &inner.requests()[0].prompt;
    assert_eq!(prompt[1].content.parts, [text("42")]);

    let other = strict("48");
    let agent = rewriting(other.clone(), before_call_only());
    block_on(agent.generate(with_reasoning())).unwrap();
    let prompt = &other.requests()[0].prompt;
    assert!(
        matches!(prompt[1].content.parts[0], Part::Reasoning { .. }),
        "kept for a provider that does not check signatures"
    );
}

#[test]
fn bi_19_invalid_tool_call_ids_are_rewritten_consistently() {
    let weather = tool_fn("weather");
    let model = ScriptedModel::responder(|request, i| {
        if let Some(message) = refusal(&request.prompt, "scripted") {
            return Turn::error(anthropic_400(&message));
        }
        match i {
            // The model of this run makes ids that another provider would refuse, too.
            0 => Turn::empty().tool_call("call.3:x", "weather", json!({ "city": "Oslo" })),
            _ => Turn::text("done"),
        }
    });
    let agent = Agent::builder()
        .model(model.clone())
        .tool(weather)
        .input(before_call_only())
        .build()
        .unwrap();
    let long = "toolu_".to_owned() + &"x".repeat(60);
    let history = vec![
        Message::user("weather?"),
        assistant(vec![
            call("functions.weather:0"),
            call("toolu_01A09q90qw90lq917835lq9"),
            call(&long),
        ]),
        tool_message(vec![
            result("functions.weather:0", "sunny"),
            result("toolu_01A09q90qw90lq917835lq9", "dry"),
            result(&long, "warm"),
        ]),
        Message::user("and now?"),
    ];
    let r = block_on(agent.generate(history)).unwrap();
    assert_eq!(r.text, "done");
    assert_eq!(model.calls(), 2, "neither prompt was refused");
    let requests = model.requests();
    let first = &requests[0].prompt;
    let calls = call_ids(first);
    assert_eq!(
        calls,
        result_ids(first),
        "calls and results rewritten alike"
    );
    assert!(calls.iter().all(|id| valid_id(id)), "{calls:?}");
    assert_eq!(
        calls[1], "toolu_01A09q90qw90lq917835lq9",
        "a valid id is kept"
    );
    assert_ne!(calls[0], calls[2]);
    // The second step's prompt rewrites the history the same way, and this run's call too.
    let second = &requests[1].prompt;
    let later = call_ids(second);
    assert_eq!(later[..3], calls[..]);
    assert_eq!(later, result_ids(second));
    assert!(valid_id(&later[3]));
    // The run's own records keep the model's id.
    assert_eq!(r.tool_calls[0].tool_call_id, "call.3:x");
}

fn tool_fn(name: &str) -> Arc<dyn Tool> {
    tool(
        name,
        "The weather.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("sunny")) },
    )
}

/// A rule of its own: files become their names, before calls to `text-only` models, and after
/// a refusal that says images are not supported.
struct NoFiles;

impl CompatRule for NoFiles {
    fn name(&self) -> &str {
        "no-files"
    }
    fn apply(&self, messages: &mut Vec<Message>) -> bool {
        let mut changed = false;
        for part in messages.iter_mut().flat_map(|m| &mut m.content.parts) {
            if let Part::File { mime_type, .. } = part {
                *part = text(&format!("[a {mime_type} file]"));
                changed = true;
            }
        }
        changed
    }
    fn before_call_to(&self, provider: &str) -> bool {
        provider == "text-only"
    }
    fn fixes(&self, error: &ApiError) -> bool {
        error.message.contains("image input is not supported")
    }
}

fn with_file() -> Vec<Message> {
    vec![Message::new(
        Role::User,
        vec![
            text("what is this?"),
            Part::File {
                mime_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            },
        ],
    )]
}

#[test]
fn bi_20_rules_are_switchable_and_custom_rules_run_after_the_built_in_ones() {
    let orphan = || {
        vec![
            tool_message(vec![result("c0", "stray")]),
            Message::user("hello?"),
            assistant(vec![text("  ")]),
            Message::user("still there?"),
        ]
    };
    // One built-in rule off: its problem stays; the others are fixed.
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let compat = ProviderHistoryCompat::builder()
        .disable(BuiltinRule::OrphanToolResults)
        .build()
        .unwrap();
    block_on(rewriting(model.clone(), compat).generate(orphan())).unwrap();
    let prompt = &model.requests()[0].prompt;
    assert_eq!(result_ids(prompt), ["c0"]);
    assert_eq!(prompt.len(), 3, "the blank answer is still left out");

    // The prompt rewrite off: nothing changes before the call.
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let compat = ProviderHistoryCompat::builder()
        .before_call(false)
        .build()
        .unwrap();
    block_on(rewriting(model.clone(), compat).generate(orphan())).unwrap();
    assert_eq!(model.requests()[0].prompt.len(), 4);

    // A closure rule sees what the built-in rules left, and runs before every call.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let compat = ProviderHistoryCompat::builder()
        .custom_rule("shout", move |messages| {
            log.lock().unwrap().push(messages.len());
            for m in messages.iter_mut().filter(|m| m.role == Role::User) {
                let loud = m.text().to_uppercase();
                m.set_text(loud);
            }
            true
        })
        .build()
        .unwrap();
    block_on(rewriting(model.clone(), compat).generate(orphan())).unwrap();
    assert_eq!(*seen.lock().unwrap(), [2]);
    assert_eq!(
        texts(&model.requests()[0].prompt),
        ["HELLO?", "STILL THERE?"]
    );

    // A trait rule: before calls to the providers it names, and after the refusal it knows.
    let compat = || {
        ProviderHistoryCompat::builder()
            .rule(NoFiles)
            .build()
            .unwrap()
    };
    let inner = ScriptedModel::cycle([Turn::text("a cat")]);
    let text_only = AsProvider {
        inner: inner.clone(),
        provider: "text-only",
    };
    block_on(rewriting(text_only, compat()).generate(with_file())).unwrap();
    assert_eq!(
        inner.requests()[0].prompt[0].text(),
        "what is this?[a image/png file]"
    );
    let model = ScriptedModel::new([
        Turn::error(openai_400(
            "image input is not supported by this model",
            None,
        )),
        Turn::text("a cat"),
    ]);
    block_on(rewriting(model.clone(), compat()).generate(with_file())).unwrap();
    let requests = model.requests();
    assert!(matches!(
        requests[0].prompt[0].content.parts[1],
        Part::File { .. }
    ));
    assert_eq!(
        requests[1].prompt[0].text(),
        "what is this?[a image/png file]"
    );
}

#[test]
fn bi_21_the_prompt_rewrite_changes_neither_the_list_nor_memory() {
    let model = strict("sunny");
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(before_call_only())
        .output(output_result_fn(
            "inspect",
            |a: &mut OutputResultArgs<'_, ()>| {
                // The list as the run ends: the ids as they were.
                let ids = call_ids(&a.message_list.all().cloned().collect::<Vec<_>>());
                assert_eq!(ids, ["functions.weather:0"]);
            },
        ))
        .build()
        .unwrap();
    let history = vec![
        Message::user("weather?"),
        assistant(vec![call("functions.weather:0")]),
        tool_message(vec![result("functions.weather:0", "sunny")]),
        tool_message(vec![result("lost-1", "stray")]),
        Message::user("and tomorrow?"),
    ];
    block_on(agent.generate_with(history, thread())).unwrap();
    assert_eq!(model.calls(), 1);
    assert!(valid_id(&call_ids(&model.requests()[0].prompt)[0]));
    let saved = saved(&store);
    assert_eq!(call_ids(&saved), ["functions.weather:0"]);
    assert_eq!(result_ids(&saved), ["functions.weather:0", "lost-1"]);

    // The next run loads that history and rewrites its prompt again, the same way.
    block_on(agent.generate_with("and after?", thread())).unwrap();
    let requests = model.requests();
    assert_eq!(call_ids(&requests[1].prompt), call_ids(&requests[0].prompt));
    assert_eq!(result_ids(&common::saved(&store)).len(), 2);
}

// ---------------------------------------------------------------------------------------------
// ProviderHistoryCompat: after a refusal

fn after_error_only() -> ProviderHistoryCompat {
    ProviderHistoryCompat::builder()
        .before_call(false)
        .build()
        .unwrap()
}

/// One broken history per rule, and the model that refuses it.
fn broken() -> Vec<(&'static str, Vec<Message>, &'static str)> {
    vec![
        (
            "ids",
            vec![
                Message::user("weather?"),
                assistant(vec![call("functions.weather:0")]),
                tool_message(vec![result("functions.weather:0", "sunny")]),
                Message::user("and tomorrow?"),
            ],
            "scripted",
        ),
        (
            "orphans",
            vec![
                tool_message(vec![result("c0", "stray")]),
                Message::user("and tomorrow?"),
            ],
            "scripted",
        ),
        (
            "unanswered",
            vec![
                Message::user("weather?"),
                assistant(vec![text("Checking."), call("c1")]),
                Message::user("and tomorrow?"),
            ],
            "scripted",
        ),
        (
            "empty",
            vec![
                Message::user("weather?"),
                assistant(vec![text(" ")]),
                Message::user("and tomorrow?"),
            ],
            "scripted",
        ),
        ("reasoning", with_reasoning(), "anthropic"),
    ]
}

#[test]
fn bi_22_a_refusal_naming_the_problem_repairs_the_list_and_retries() {
    for (name, history, provider) in broken() {
        let inner = strict_as("fixed", provider);
        let model = AsProvider {
            inner: inner.clone(),
            provider,
        };
        let agent = Agent::builder()
            .model(model)
            .error(after_error_only())
            .build()
            .unwrap();
        let (chunks, r) = block_on(streamed(&agent, history));
        let r = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.text, "fixed", "{name}");
        assert_eq!(inner.calls(), 2, "{name}");
        let requests = inner.requests();
        assert!(refusal(&requests[0].prompt, provider).is_some(), "{name}");
        assert!(refusal(&requests[1].prompt, provider).is_none(), "{name}");
        assert_eq!(
            step_finishes(&chunks)[0].1.as_deref(),
            Some("provider-history-compat"),
            "{name}"
        );
        assert_eq!(
            requests[1].prompt.last().map(Message::text).as_deref(),
            Some(if name == "reasoning" {
                "and 6 x 8?"
            } else {
                "and tomorrow?"
            }),
            "{name}: the newest message stays"
        );
    }
}

#[test]
fn bi_22_only_the_rules_the_refusal_names_repair_the_list() {
    let model = ScriptedModel::new([
        Turn::error(anthropic_400(
            "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        )),
        Turn::text("ok"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(after_error_only())
        .build()
        .unwrap();
    let history = vec![
        tool_message(vec![result("c0", "stray")]),
        Message::user("weather?"),
        assistant(vec![call("functions.weather:0")]),
        tool_message(vec![result("functions.weather:0", "sunny")]),
        Message::user("and tomorrow?"),
    ];
    block_on(agent.generate(history)).unwrap();
    let retried = &model.requests()[1].prompt;
    assert!(call_ids(retried).iter().all(|id| valid_id(id)));
    assert_eq!(
        result_ids(retried)[0],
        "c0",
        "the refusal did not name the orphan"
    );
}

#[test]
fn bi_22_the_repaired_list_is_what_the_run_saves() {
    let model = strict("fixed");
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(after_error_only())
        .build()
        .unwrap();
    let (_, history, _) = broken().remove(0);
    block_on(agent.generate_with(history, thread())).unwrap();
    assert_eq!(model.calls(), 2);
    let saved = saved(&store);
    let ids = call_ids(&saved);
    assert_eq!(ids, result_ids(&saved));
    assert!(valid_id(&ids[0]), "{ids:?}");
}

#[test]
fn bi_22_other_errors_are_left_alone_and_the_repair_is_tried_once() {
    let cases = [
        // No rule recognises it.
        anthropic_400("Unknown parameter: top_k_sampling"),
        // Recognised, but the history has nothing to repair.
        anthropic_400("messages.1.content.0.tool_use.id: String should match pattern"),
    ];
    for error in cases {
        let model = ScriptedModel::cycle([Turn::error(error.clone())]);
        let agent = Agent::builder()
            .model(model.clone())
            .error(after_error_only())
            .build()
            .unwrap();
        let e = api_error(block_on(agent.generate("weather?")));
        assert_eq!(e, error);
        assert_eq!(model.calls(), 1, "{error}");
    }
    // Recognised, with a history to repair, but another status.
    let (_, history, _) = broken().remove(0);
    let error = ApiError::new(
        500,
        "messages.1.content.0.tool_use.id: String should match pattern",
    );
    let model = ScriptedModel::cycle([Turn::error(error.clone())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(after_error_only())
        .build()
        .unwrap();
    assert_eq!(api_error(block_on(agent.generate(history))), error);
    assert_eq!(model.calls(), 1);
    // A provider that refuses the repaired list too: one repair, then the error.
    let (_, history, _) = broken().remove(0);
    let refusal = anthropic_400("messages.1.content.0.tool_use.id: String should match pattern");
    let model = ScriptedModel::cycle([Turn::error(refusal.clone())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(after_error_only())
        .build()
        .unwrap();
    assert_eq!(api_error(block_on(agent.generate(history))), refusal);
    assert_eq!(model.calls(), 2);

    // A rule that changes something every time is still tried once per step.
    let refusal = anthropic_400("custom refusal");
    let model = ScriptedModel::cycle([Turn::error(refusal.clone())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(
            ProviderHistoryCompat::builder()
                .before_call(false)
                .rule(Restless)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    assert_eq!(api_error(block_on(agent.generate("hi"))), refusal);
    assert_eq!(model.calls(), 2);
}

/// Recognises "custom refusal" and always changes something.
struct Restless;

impl CompatRule for Restless {
    fn name(&self) -> &str {
        "restless"
    }
    fn apply(&self, messages: &mut Vec<Message>) -> bool {
        messages.push(Message::user("again"));
        true
    }
    fn fixes(&self, error: &ApiError) -> bool {
        error.message.contains("custom refusal")
    }
}

// ---------------------------------------------------------------------------------------------
// ContextLengthHandler

fn too_long_then(answer: &'static str) -> ScriptedModel {
    ScriptedModel::responder(move |_, i| match i {
        0 => Turn::error(openai_400(CONTEXT, Some("context_length_exceeded"))),
        _ => Turn::text(answer),
    })
}

fn handling_context(model: &ScriptedModel, handler: ContextLengthHandler) -> Agent {
    Agent::builder()
        .model(model.clone())
        .instructions("Be brief.")
        .error(handler)
        .build()
        .unwrap()
}

#[test]
fn bi_23_a_context_length_refusal_drops_the_oldest_turns_pair_safe() {
    let model = too_long_then("ok");
    let agent = handling_context(&model, ContextLengthHandler::new());
    let history = vec![
        Message::user("first question"),
        assistant(vec![text("Let me look."), call("c1")]),
        tool_message(vec![result("c1", &"a long page of results ".repeat(100))]),
        Message::assistant("first answer"),
        Message::user("second question"),
        Message::assistant("second answer"),
        Message::user("third question"),
    ];
    let (chunks, r) = block_on(streamed(&agent, history));
    assert_eq!(r.unwrap().text, "ok");
    assert_eq!(model.calls(), 2);
    let requests = model.requests();
    let (before, after) = (&requests[0].prompt, &requests[1].prompt);
    assert!(after.len() < before.len());
    assert_eq!(
        texts(after),
        [
            "Be brief.",
            "second question",
            "second answer",
            "third question"
        ]
    );
    assert!(pair_safe(after));
    assert_eq!(
        step_finishes(&chunks)[0].1.as_deref(),
        Some("context-length-handler")
    );
}

#[test]
fn bi_23_the_current_turns_older_tool_rounds_go_when_no_older_turn_is_left() {
    let model = too_long_then("ok");
    let agent = handling_context(&model, ContextLengthHandler::new());
    let big = "a long page of results ".repeat(100);
    let history = vec![
        Message::user("research this"),
        assistant(vec![call("c1")]),
        tool_message(vec![result("c1", &big)]),
        assistant(vec![call("c2")]),
        tool_message(vec![result("c2", "short")]),
        assistant(vec![call("c3")]),
        tool_message(vec![result("c3", "short too")]),
    ];
    block_on(agent.generate(history.clone())).unwrap();
    let after = &model.requests()[1].prompt;
    assert_eq!(texts(&after[..2]), ["Be brief.", "research this"]);
    assert_eq!(call_ids(after), ["c2", "c3"], "the oldest round went");
    assert_eq!(result_ids(after), ["c2", "c3"]);

    // Dropping all it may, it keeps the newest round.
    let model = too_long_then("ok");
    let all = ContextLengthHandler::builder()
        .fraction(1.0)
        .build()
        .unwrap();
    let agent = handling_context(&model, all);
    block_on(agent.generate(history)).unwrap();
    let after = &model.requests()[1].prompt;
    assert_eq!(texts(&after[..2]), ["Be brief.", "research this"]);
    assert_eq!(call_ids(after), ["c3"]);
    assert_eq!(result_ids(after), ["c3"]);
}

#[test]
fn bi_23_no_result_outlives_its_dropped_call() {
    let model = too_long_then("ok");
    let agent = handling_context(&model, ContextLengthHandler::new());
    let history = vec![
        Message::user("an old, long question ".repeat(100)),
        assistant(vec![call("c1")]),
        Message::user("meanwhile"),
        tool_message(vec![result("c1", "late result")]),
        Message::assistant("noted"),
        Message::user("now?"),
    ];
    block_on(agent.generate(history)).unwrap();
    let after = &model.requests()[1].prompt;
    assert!(pair_safe(after));
    assert_eq!(texts(after), ["Be brief.", "meanwhile", "noted", "now?"]);
}

#[test]
fn bi_24_the_context_handler_leaves_other_errors_alone() {
    let long_history = || {
        vec![
            Message::user("one"),
            Message::assistant("uno"),
            Message::user("two"),
        ]
    };
    for error in [
        anthropic_400("Unknown parameter: top_k_sampling"),
        ApiError::new(500, ANTHROPIC_TOO_LONG),
        ApiError::new(429, "too many tokens per minute"),
    ] {
        let model = ScriptedModel::cycle([Turn::error(error.clone())]);
        let agent = handling_context(&model, ContextLengthHandler::new());
        assert_eq!(api_error(block_on(agent.generate(long_history()))), error);
        assert_eq!(model.calls(), 1, "{error}");
    }
    // Recognised, with nothing older than the newest user message to drop.
    let error = anthropic_400(ANTHROPIC_TOO_LONG);
    let model = ScriptedModel::cycle([Turn::error(error.clone())]);
    let agent = handling_context(&model, ContextLengthHandler::new());
    assert_eq!(
        api_error(block_on(agent.generate("one huge question"))),
        error
    );
    assert_eq!(model.calls(), 1);
}

#[test]
fn bi_24_the_context_handler_is_bounded_by_its_attempts() {
    let history = || {
        (0..8)
            .flat_map(|i| {
                [
                    Message::user(format!("question {i}")),
                    Message::assistant(format!("answer {i}")),
                ]
            })
            .chain([Message::user("last question")])
            .collect::<Vec<_>>()
    };
    let error = anthropic_400(ANTHROPIC_TOO_LONG);
    let model = ScriptedModel::cycle([Turn::error(error.clone())]);
    let agent = handling_context(&model, ContextLengthHandler::new());
    assert_eq!(api_error(block_on(agent.generate(history()))), error);
    assert_eq!(model.calls(), 3, "2 attempts by default");
    let lengths: Vec<usize> = model.requests().iter().map(|r| r.prompt.len()).collect();
    assert!(
        lengths.windows(2).all(|w| w[1] < w[0]),
        "each attempt drops more: {lengths:?}"
    );
    assert!(
        model
            .requests()
            .iter()
            .all(|r| r.prompt.last().unwrap().text() == "last question")
    );

    let model = ScriptedModel::cycle([Turn::error(error.clone())]);
    let one = ContextLengthHandler::builder()
        .max_attempts(1)
        .build()
        .unwrap();
    let agent = handling_context(&model, one);
    api_error(block_on(agent.generate(history())));
    assert_eq!(model.calls(), 2);

    // A custom phrase is recognised too.
    let custom = ApiError::new(400, "input exceeds the model's window");
    let model = ScriptedModel::new([Turn::error(custom), Turn::text("ok")]);
    let handler = ContextLengthHandler::builder()
        .matching("exceeds the model's window")
        .build()
        .unwrap();
    let agent = handling_context(&model, handler);
    block_on(agent.generate(history())).unwrap();
    assert_eq!(model.calls(), 2);
}

// ---------------------------------------------------------------------------------------------
// StreamErrorRetry

fn cut() -> ApiError {
    ApiError::other(
        "the connection failed while streaming: connection reset",
        true,
    )
}

#[test]
fn bi_25_a_stream_failure_is_retried_and_the_client_sees_the_answer_once() {
    let model = ScriptedModel::new([
        Turn::deltas(["half ", "an answ"]).fail_mid_stream(cut()),
        Turn::deltas(["a whole ", "answer"]),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(StreamErrorRetry::new())
        .build()
        .unwrap();
    let (chunks, r) = block_on(streamed(&agent, vec![Message::user("hi")]));
    let r = r.unwrap();
    assert_eq!(r.text, "a whole answer");
    assert_eq!(model.calls(), 2);
    assert_eq!(shown_text(&chunks), "a whole answer");
    // The partial text streamed once, before the retried step's finish; the next attempt's
    // text does not repeat it.
    let retried_at = chunks
        .iter()
        .position(|c| {
            matches!(
                c.kind,
                ChunkKind::StepFinish {
                    finish_reason: FinishReason::Retry,
                    ..
                }
            )
        })
        .expect("a retried step");
    let after: String = chunks[retried_at..]
        .iter()
        .filter_map(Chunk::text_delta)
        .collect();
    assert_eq!(after, "a whole answer");
    assert_eq!(
        step_finishes(&chunks),
        [
            (FinishReason::Retry, Some("stream-error-retry".to_owned())),
            (FinishReason::Stop, None)
        ]
    );
    assert!(!texts(&model.requests()[1].prompt).concat().contains("half"));
    assert!(
        !r.response_messages
            .iter()
            .any(|m| m.text().contains("half"))
    );
}

#[test]
fn bi_26_stream_retries_are_bounded() {
    let model = ScriptedModel::cycle([Turn::deltas(["par"]).fail_mid_stream(cut())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(StreamErrorRetry::new())
        .build()
        .unwrap();
    let e = api_error(block_on(agent.generate("hi")));
    assert_eq!(e, cut());
    assert_eq!(model.calls(), 3, "2 retries by default");

    let model = ScriptedModel::cycle([Turn::deltas(["par"]).fail_mid_stream(cut())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(StreamErrorRetry::builder().max_retries(1).build().unwrap())
        .build()
        .unwrap();
    api_error(block_on(agent.generate("hi")));
    assert_eq!(model.calls(), 2);
}

#[test]
fn bi_26_errors_with_a_status_and_optionally_unretryable_ones_are_left_alone() {
    let cases = [
        (StreamErrorRetry::new(), ApiError::new(503, "overloaded")),
        (StreamErrorRetry::new(), anthropic_400(PREFILL)),
        (
            StreamErrorRetry::builder()
                .retryable_only(true)
                .build()
                .unwrap(),
            ApiError::other("the provider sent event data that is not JSON", false),
        ),
    ];
    for (retry, error) in cases {
        let model = ScriptedModel::new([
            Turn::deltas(["par"]).fail_mid_stream(error.clone()),
            Turn::text("never"),
        ]);
        let agent = Agent::builder()
            .model(model.clone())
            .error(retry)
            .build()
            .unwrap();
        assert_eq!(api_error(block_on(agent.generate("hi"))), error);
        assert_eq!(model.calls(), 1, "{error}");
    }
    // Without `retryable_only`, a malformed stream is retried.
    let malformed = ApiError::other("the provider sent event data that is not JSON", false);
    let model = ScriptedModel::new([
        Turn::deltas(["par"]).fail_mid_stream(malformed),
        Turn::text("whole"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(StreamErrorRetry::new())
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("hi")).unwrap().text, "whole");
}

fn failing_twice() -> ScriptedModel {
    ScriptedModel::new([
        Turn::deltas(["par"]).fail_mid_stream(cut()),
        Turn::deltas(["par"]).fail_mid_stream(cut()),
        Turn::text("whole"),
    ])
}

#[test]
fn bi_27_the_backoff_waits_on_any_executor() {
    let model = failing_twice();
    let retry = StreamErrorRetry::builder()
        .backoff(Backoff::exponential(
            Duration::from_millis(60),
            Duration::from_secs(1),
        ))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(model.clone())
        .error(retry)
        .build()
        .unwrap();
    // No Tokio runtime here: the wait is kept without a Tokio timer.
    let started = Instant::now();
    assert_eq!(block_on(agent.generate("hi")).unwrap().text, "whole");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(90),
        "60 + 120 ms, with equal jitter at least half of each: {waited:?}"
    );
    assert_eq!(model.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn bi_27_under_tokio_the_backoff_is_a_tokio_timer() {
    let model = failing_twice();
    let retry = StreamErrorRetry::builder()
        .backoff(Backoff::fixed(Duration::from_secs(30)))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(model.clone())
        .error(retry)
        .build()
        .unwrap();
    let (clock, wall) = (tokio::time::Instant::now(), Instant::now());
    assert_eq!(agent.generate("hi").await.unwrap().text, "whole");
    assert!(
        clock.elapsed() >= Duration::from_secs(60),
        "two waits of 30 s"
    );
    assert!(
        wall.elapsed() < Duration::from_secs(20),
        "paused time ran them"
    );
}

/// The backoff is the providers' own: exponential with equal jitter by default (each wait
/// between half and all of its exponential value), exact with `Jitter::None`.
#[tokio::test(start_paused = true)]
async fn bi_27_the_backoff_is_exponential_with_the_providers_jitter() {
    let waited = |backoff: Backoff| async move {
        let retry = StreamErrorRetry::builder()
            .backoff(backoff)
            .build()
            .unwrap();
        let agent = Agent::builder()
            .model(failing_twice())
            .error(retry)
            .build()
            .unwrap();
        let clock = tokio::time::Instant::now();
        assert_eq!(agent.generate("hi").await.unwrap().text, "whole");
        clock.elapsed()
    };
    let exponential = Backoff::exponential(Duration::from_secs(10), Duration::from_secs(60));
    let exact = waited(exponential.jitter(Jitter::None)).await;
    assert!(
        exact >= Duration::from_secs(30) && exact < Duration::from_secs(31),
        "10 + 20 s: {exact:?}"
    );
    let mut totals = HashSet::new();
    for _ in 0..5 {
        let jittered = waited(exponential).await;
        assert!(
            jittered >= Duration::from_secs(15) && jittered < Duration::from_secs(31),
            "between 5 + 10 and 10 + 20 s: {jittered:?}"
        );
        totals.insert(jittered.as_millis());
    }
    assert!(totals.len() > 1, "jittered waits differ: {totals:?}");
}

// ---------------------------------------------------------------------------------------------
// Through the HTTP clients, against the providers' own error bodies.

fn http_error(status: u16, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "HTTP/1.1 {status} Bad Request\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn sse(body: &str) -> String {
    format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{body}")
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The start of an Anthropic messages stream with `text` streamed so far.
fn anthropic_start(text: &str) -> String {
    [
        event(
            "message_start",
            json!({ "type": "message_start", "message": { "id": "msg_1", "role": "assistant", "content": [], "usage": { "input_tokens": 25, "output_tokens": 1 } } }),
        ),
        event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        ),
        event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }),
        ),
    ]
    .concat()
}

/// An Anthropic messages stream of `text`.
fn anthropic_answer(text: &str) -> String {
    sse(&[
        anthropic_start(text),
        event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ),
        event(
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" }, "usage": { "output_tokens": 12 } }),
        ),
        event("message_stop", json!({ "type": "message_stop" })),
    ]
    .concat())
}

fn anthropic_error(message: &str) -> String {
    http_error(
        400,
        &json!({ "type": "error", "error": { "type": "invalid_request_error", "message": message } }),
    )
}

fn anthropic(url: &str) -> Anthropic {
    Anthropic::builder("claude-sonnet-4-5")
        .base_url(url)
        .api_key("test-key")
        .max_retries(0)
        .build()
        .unwrap()
}

fn openai(url: &str) -> OpenAiCompatible {
    OpenAiCompatible::builder("gpt-4o-mini")
        .base_url(format!("{url}/v1"))
        .api_key("test-key")
        .max_retries(0)
        .build()
        .unwrap()
}

/// An OpenAI chat completions stream of `text`.
fn openai_answer(text: &str) -> String {
    let delta =
        json!({ "choices": [{ "index": 0, "delta": { "content": text }, "finish_reason": null }] });
    let end = json!({
        "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43 }
    });
    sse(&format!("data: {delta}\n\ndata: {end}\n\ndata: [DONE]\n\n"))
}

#[tokio::test]
async fn bi_28_anthropics_prefill_refusal_is_continued_over_http() {
    let (url, bodies) = server(vec![
        anthropic_error(PREFILL),
        anthropic_answer(" on the roof."),
    ])
    .await;
    let agent = Agent::builder()
        .model(anthropic(&url))
        .error(PrefillErrorHandler::new())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("Finish my sentence: rain"),
        Message::assistant("Rain falls"),
    ];
    let r = agent.generate(conversation).await.unwrap();
    assert_eq!(r.text, " on the roof.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        bodies[1]["messages"][2],
        json!({ "role": "user", "content": [{ "type": "text", "text": "Continue." }] })
    );
}

#[tokio::test]
async fn bi_28_anthropics_tool_id_pattern_error_is_repaired_over_http() {
    let (url, bodies) = server(vec![
        anthropic_error(
            "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        ),
        anthropic_answer("Rain tomorrow."),
    ])
    .await;
    let agent = Agent::builder()
        .model(anthropic(&url))
        .input(after_error_only())
        .build()
        .unwrap();
    let history = vec![
        Message::user("weather?"),
        assistant(vec![call("functions.weather:0")]),
        tool_message(vec![result("functions.weather:0", "sunny")]),
        Message::user("and tomorrow?"),
    ];
    let r = agent.generate(history).await.unwrap();
    assert_eq!(r.text, "Rain tomorrow.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        bodies[0]["messages"][1]["content"][0]["id"],
        "functions.weather:0"
    );
    let id = bodies[1]["messages"][1]["content"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(valid_id(&id), "{id}");
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["tool_use_id"],
        json!(id)
    );
}

#[tokio::test]
async fn bi_28_openais_context_length_exceeded_is_trimmed_over_http() {
    let body = json!({ "error": {
        "message": CONTEXT,
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    } });
    let (url, bodies) = server(vec![http_error(400, &body), openai_answer("Done.")]).await;
    let model = openai(&url);
    let agent = Agent::builder()
        .model(model)
        .instructions("Be brief.")
        .error(ContextLengthHandler::new())
        .build()
        .unwrap();
    let history = vec![
        Message::user("an old, long question ".repeat(50)),
        Message::assistant("an old answer"),
        Message::user("the question"),
    ];
    let r = agent.generate(history).await.unwrap();
    assert_eq!(r.text, "Done.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["messages"].as_array().unwrap().len(), 4);
    assert_eq!(
        bodies[1]["messages"],
        json!([
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": "the question" },
        ])
    );
}

#[tokio::test]
async fn bi_28_an_anthropic_error_event_mid_stream_is_retried_over_http() {
    let overloaded = event(
        "error",
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    );
    let (url, bodies) = server(vec![
        sse(&(anthropic_start("Half an ") + &overloaded)),
        anthropic_answer("A whole answer."),
    ])
    .await;
    let agent = Agent::builder()
        .model(anthropic(&url))
        .error(
            StreamErrorRetry::builder()
                .retryable_only(true)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let (chunks, r) = streamed(&agent, vec![Message::user("hi")]).await;
    assert_eq!(r.unwrap().text, "A whole answer.");
    assert_eq!(shown_text(&chunks), "A whole answer.");
    let streamed: String = chunks.iter().filter_map(Chunk::text_delta).collect();
    assert_eq!(
        streamed, "Half an A whole answer.",
        "the partial text, then the answer"
    );
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[1]["messages"], bodies[0]["messages"]);
}

/// The prompt a guard sent, for a conversation, with `guard` in `input`.
fn sent_with(guard: TrailingAssistantGuard, conversation: Vec<Message>) -> Vec<Message> {
    let model = ScriptedModel::new([Turn::text("and so on.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(guard)
        .build()
        .unwrap();
    let result = block_on(agent.generate(conversation)).unwrap();
    assert_eq!(result.text, "and so on.");
    model.requests()[0].prompt.clone()
}

fn roles_and_texts(prompt: &[Message]) -> Vec<(Role, String)> {
    prompt.iter().map(|m| (m.role, m.text())).collect()
}

#[test]
fn bi_82_a_trailing_assistant_message_is_fixed_before_the_call() {
    let story = || {
        vec![
            Message::user("Tell me a story."),
            Message::assistant("Once upon a time"),
        ]
    };
    let sent = sent_with(TrailingAssistantGuard::new(), story());
    assert_eq!(
        roles_and_texts(&sent),
        [
            (Role::User, "Tell me a story.".to_owned()),
            (Role::Assistant, "Once upon a time".to_owned()),
            (Role::User, "Continue.".to_owned()),
        ]
    );
    assert_eq!(
        sent[2].metadata,
        Some(json!({ "guard": "trailing-assistant-guard" }))
    );
    let drop = TrailingAssistantGuard::builder()
        .strategy(TrailingStrategy::Drop)
        .build()
        .unwrap();
    let sent = sent_with(drop, story());
    assert_eq!(
        roles_and_texts(&sent),
        [(Role::User, "Tell me a story.".to_owned())]
    );
    // An empty assistant message is left out, not continued.
    let empty = vec![Message::user("Hi."), Message::assistant("")];
    let sent = sent_with(TrailingAssistantGuard::new(), empty);
    assert_eq!(roles_and_texts(&sent), [(Role::User, "Hi.".to_owned())]);
}

#[test]
fn bi_82_other_models_and_the_list_are_left_alone() {
    let story = || {
        vec![
            Message::user("Tell me a story."),
            Message::assistant("Once upon a time"),
        ]
    };
    // The scripted model is `scripted/scripted`.
    let elsewhere = TrailingAssistantGuard::builder()
        .models(["anthropic/*"])
        .build()
        .unwrap();
    assert_eq!(sent_with(elsewhere, story()).len(), 2);
    let here = TrailingAssistantGuard::builder()
        .models(["anthropic/*", "scripted/*"])
        .build()
        .unwrap();
    assert_eq!(sent_with(here, story()).len(), 3);
    // The list keeps the conversation as it was: the continuation is the call's only.
    let model = ScriptedModel::new([Turn::text("and so on.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(TrailingAssistantGuard::new())
        .build()
        .unwrap();
    let result = block_on(agent.generate(story())).unwrap();
    assert!(
        result
            .response_messages
            .iter()
            .all(|m| m.text() != "Continue.")
    );
    assert!(
        TrailingAssistantGuard::builder()
            .models([""])
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn bi_82_through_the_anthropic_client_the_first_call_already_ends_with_the_user() {
    let (url, bodies) = server(vec![anthropic_answer(" on the roof.")]).await;
    let guard = TrailingAssistantGuard::builder()
        .models(["anthropic/*"])
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(anthropic(&url))
        .input(guard)
        .error(PrefillErrorHandler::new())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("Finish my sentence: rain"),
        Message::assistant("Rain falls"),
    ];
    let r = agent.generate(conversation).await.unwrap();
    assert_eq!(r.text, " on the roof.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "no refusal to recover from");
    assert_eq!(
        bodies[0]["messages"][2],
        json!({ "role": "user", "content": [{ "type": "text", "text": "Continue." }] })
    );
}

// UnsupportedFileHandler

/// A user message with a PNG and a PDF.
fn with_files() -> Message {
    let mut m = Message::user("What are these?");
    m.content.parts.push(Part::File {
        mime_type: "image/png".into(),
        data: "data:image/png;base64,AAAA".into(),
    });
    m.content.parts.push(Part::File {
        mime_type: "application/pdf".into(),
        data: "data:application/pdf;base64,JVBE".into(),
    });
    m
}

#[test]
fn bi_88_a_refused_file_type_is_left_out_with_a_note_once_per_step() {
    let refusal = || ApiError::new(400, "Invalid MIME type. Only image types are supported.");
    let model = ScriptedModel::new([Turn::error(refusal()), Turn::text("A chart.")]);
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .error(UnsupportedFileHandler::new())
        .build()
        .unwrap();
    let r = block_on(agent.generate_with(vec![with_files()], thread())).unwrap();
    assert_eq!(r.text, "A chart.");
    let parts = &model.requests()[1].prompt[0].content.parts;
    assert!(matches!(&parts[1], Part::File { mime_type, .. } if mime_type == "image/png"));
    assert!(matches!(&parts[2], Part::Text { text }
        if &**text == "[a file (application/pdf) was left out: the model does not accept files of this type]"));
    // The conversation keeps the note: memory does not send the file again.
    assert!(saved(&store)[0].text().contains("was left out"));

    // Once per step: a second refusal in the step is the run's error.
    let model = ScriptedModel::new([Turn::error(refusal()), Turn::error(refusal())]);
    let agent = Agent::builder()
        .model(model.clone())
        .error(UnsupportedFileHandler::new())
        .build()
        .unwrap();
    assert!(block_on(agent.generate(vec![with_files()])).is_err());
    assert_eq!(model.calls(), 2);

    // Other errors, and a refusal with no file to leave out, are not its to handle.
    for (error, message) in [
        (
            ApiError::new(400, "temperature is not supported"),
            with_files(),
        ),
        (refusal(), Message::user("no files")),
        (ApiError::new(500, "Invalid MIME type"), with_files()),
    ] {
        let model = ScriptedModel::new([Turn::error(error), Turn::text("unused")]);
        let agent = Agent::builder()
            .model(model.clone())
            .error(UnsupportedFileHandler::new())
            .build()
            .unwrap();
        assert!(block_on(agent.generate(vec![message])).is_err());
        assert_eq!(model.calls(), 1);
    }
}

#[tokio::test]
async fn bi_88_openais_refusal_of_a_pdf_is_recovered_over_http() {
    let body = json!({ "error": {
        "message": "Invalid MIME type. Only image types are supported.",
        "type": "invalid_request_error",
        "param": null,
        "code": "invalid_image_format",
    } });
    let (url, bodies) = server(vec![http_error(400, &body), openai_answer("A chart.")]).await;
    let model = openai(&url);
    let agent = Agent::builder()
        .model(model)
        .error(UnsupportedFileHandler::new())
        .build()
        .unwrap();
    let r = agent.generate(vec![with_files()]).await.unwrap();
    assert_eq!(r.text, "A chart.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let content = bodies[1]["messages"][0]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(content[1]["type"], "image_url");
    assert!(
        content[2]
            .to_string()
            .contains("(application/pdf) was left out"),
        "{content:?}"
    );
}

#[tokio::test]
async fn bi_88_anthropics_refusal_of_an_image_type_is_recovered_over_http() {
    let (url, bodies) = server(vec![
        anthropic_error(
            "messages.0.content.1.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'",
        ),
        anthropic_answer("A photo."),
    ])
    .await;
    let agent = Agent::builder()
        .model(anthropic(&url))
        .error(UnsupportedFileHandler::new())
        .build()
        .unwrap();
    let mut message = Message::user("What is this?");
    message.content.parts.push(Part::File {
        mime_type: "image/bmp".into(),
        data: "data:image/bmp;base64,Qk0=".into(),
    });
    message.content.parts.push(Part::File {
        mime_type: "image/png".into(),
        data: "data:image/png;base64,AAAA".into(),
    });
    let r = agent.generate(vec![message]).await.unwrap();
    assert_eq!(r.text, "A photo.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    let content = &bodies[1]["messages"][0]["content"];
    assert_eq!(
        bodies[0]["messages"][0]["content"][1]["source"]["media_type"],
        "image/bmp"
    );
    assert_eq!(content[1]["type"], "text");
    assert!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .contains("(image/bmp) was left out")
    );
    assert_eq!(content[2]["source"]["media_type"], "image/png");
}

// ---------------------------------------------------------------------------------------------
// UnsupportedSettingHandler (behaviour 91).

fn warm() -> ModelSettings {
    ModelSettings {
        temperature: Some(0.2),
        top_p: Some(0.9),
        ..ModelSettings::default()
    }
}

fn no_temperature() -> ApiError {
    ApiError::new(
        400,
        "Unsupported parameter: 'temperature' is not supported with this model.",
    )
}

#[test]
fn bi_91_a_refused_setting_is_left_out_and_the_model_called_again_then_learned() {
    let model = ScriptedModel::new([
        Turn::error(no_temperature()),
        Turn::text("Hi."),
        Turn::text("Again."),
    ]);
    let handler = UnsupportedSettingHandler::new();
    let agent = Agent::builder()
        .model(model.clone())
        .model_settings(warm())
        .input(handler.clone())
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("hi")).unwrap().text, "Hi.");
    let requests = model.requests();
    assert_eq!(requests[0].settings.temperature, Some(0.2));
    assert_eq!(requests[1].settings.temperature, None);
    // Only what was refused goes.
    assert_eq!(requests[1].settings.top_p, Some(0.9));
    // Learned for the model: a later run sends no refused call first.
    assert_eq!(block_on(agent.generate("hi")).unwrap().text, "Again.");
    assert_eq!(model.calls(), 3);
    assert_eq!(model.requests()[2].settings.temperature, None);
    assert_eq!(handler.refused("scripted/scripted"), [Setting::Temperature]);

    // Per model: another model, with the same handler, still gets its temperature.
    let other = ScriptedModel::new([Turn::text("Warm.")]).named("other");
    let agent = Agent::builder()
        .model(other.clone())
        .model_settings(warm())
        .input(handler)
        .build()
        .unwrap();
    block_on(agent.generate("hi")).unwrap();
    assert_eq!(other.requests()[0].settings.temperature, Some(0.2));
}

#[test]
fn bi_91_other_errors_and_settings_not_sent_are_not_its_to_handle() {
    for (error, settings) in [
        (no_temperature(), ModelSettings::default()),
        (ApiError::new(500, "temperature is not supported"), warm()),
        (ApiError::new(400, "The prompt is too long."), warm()),
    ] {
        let model = ScriptedModel::new([Turn::error(error), Turn::text("unused")]);
        let agent = Agent::builder()
            .model(model.clone())
            .model_settings(settings)
            .input(UnsupportedSettingHandler::new())
            .build()
            .unwrap();
        assert!(block_on(agent.generate("hi")).is_err());
        assert_eq!(model.calls(), 1);
    }
}

#[test]
fn bi_91_in_error_alone_it_cannot_change_the_request_and_warns() {
    let model = ScriptedModel::new([Turn::error(no_temperature()), Turn::text("unused")]);
    let violations = common::Violations::new();
    let agent = Agent::builder()
        .model(model.clone())
        .model_settings(warm())
        .error(UnsupportedSettingHandler::new())
        .on_violation(violations.hook())
        .build()
        .unwrap();
    assert!(block_on(agent.generate("hi")).is_err());
    assert_eq!(model.calls(), 1);
    let reasons: Vec<String> = violations.all().into_iter().map(|v| v.reason).collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("put it in `input`"), "{reasons:?}");
}

#[tokio::test]
async fn bi_91_openais_refusal_of_temperature_is_recovered_over_http() {
    let body = json!({ "error": {
        "message": "Unsupported parameter: 'temperature' is not supported with this model.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_parameter",
    } });
    let (url, bodies) = server(vec![http_error(400, &body), openai_answer("Hi.")]).await;
    let agent = Agent::builder()
        .model(openai(&url))
        .model_settings(warm())
        .input(UnsupportedSettingHandler::new())
        .build()
        .unwrap();
    assert_eq!(agent.generate("hi").await.unwrap().text, "Hi.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["temperature"], json!(0.2f32));
    assert!(bodies[1].get("temperature").is_none(), "{}", bodies[1]);
    assert_eq!(bodies[1]["top_p"], json!(0.9f32));
}

#[tokio::test]
async fn bi_91_anthropics_refusal_of_temperature_with_top_p_is_recovered_over_http() {
    let (url, bodies) = server(vec![
        anthropic_error(
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
        ),
        anthropic_answer("Hi."),
    ])
    .await;
    let agent = Agent::builder()
        .model(anthropic(&url))
        .model_settings(warm())
        .input(UnsupportedSettingHandler::new())
        .build()
        .unwrap();
    assert_eq!(agent.generate("hi").await.unwrap().text, "Hi.");
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].get("top_p").is_some(), "{}", bodies[0]);
    assert!(bodies[1].get("top_p").is_none(), "{}", bodies[1]);
    assert_eq!(bodies[1]["temperature"], json!(0.2f32));
}
