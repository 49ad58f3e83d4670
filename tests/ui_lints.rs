//! Code the macros generate is clean under `clippy::pedantic` and the compiler's stricter lints,
//! on its own tokens and on the user's it is spanned at. The CI's `cargo clippy --all-targets`
//! builds this file, so a lint in generated code fails it; the test itself runs the agent.
#![deny(clippy::pedantic, warnings)]
#![deny(
    unused_parens,
    unused_qualifications,
    unused_results,
    trivial_casts,
    unused_lifetimes
)]

use processors::prelude::*;
use std::sync::Arc;

/// Rejects empty answers, asking for a retry.
#[processor(output_step)]
fn not_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    if text.is_empty() {
        return Err(abort.reason("say something").retry(true).into());
    }
    Ok(())
}

/// Counts the chunks it sees, up to `limit`, and can read the history.
#[processor(output_stream)]
fn count(chunk: &Chunk, history: &[Chunk], state: &mut usize, #[config] limit: usize) {
    let _ = (chunk, history.len());
    *state = (*state + 1).min(limit);
}

/// Upper-cases streamed text.
#[processor(output_stream, id = "shout")]
fn shout(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    }
}

/// Reads the input, the message list and the request context.
#[processor(input)]
fn look(messages: Vec<Message>, list: &MessageList, context: &RequestContext, step: RetryCount) {
    let _ = (messages, list, context, step);
}

/// Retries rejected requests.
#[processor(api_error)]
fn retry_all(error: &ApiError) -> ApiErrorAction {
    let _ = error;
    ApiErrorAction::Retry
}

/// Replaces tool results that name a secret.
#[processor(tool_result)]
fn hide(call: &ToolCall, result: &Value) -> Value {
    if call.tool_name.contains("secret") {
        Value::Null
    } else {
        result.clone()
    }
}

/// Caps a search's limit and refuses deletions.
#[processor(tool_call)]
fn gate(call: &ToolCall, tool: Option<&dyn Tool>) -> ToolCallAction {
    match (call.tool_name.as_str(), tool) {
        ("delete", _) => ToolCallAction::Refuse("not allowed".to_owned()),
        (_, None) => ToolCallAction::Respond(Value::Null),
        _ => ToolCallAction::Continue,
    }
}

/// A processor with several hooks and a per-value id.
struct Guard {
    id: String,
}

#[processor]
impl Guard {
    fn id(&self) -> &str {
        &self.id
    }

    async fn process_input_step(&self, step: StepNumber, state: &mut Vec<String>) {
        futures::future::ready(()).await;
        state.push(format!("{}:{}", self.id, step.0));
    }

    fn process_output_result(&self, state: &mut Vec<String>) {
        state.clear();
    }
}

/// Ends the run on a listed word; its `#[config]` parameters are its options in files.
#[processor(input, options)]
fn blocklist(
    messages: Vec<Message>,
    /// The words.
    #[config]
    words: &[String],
    /// Whether a match only warns.
    #[config]
    warn_only: Option<bool>,
) -> Result<(), ProcessorError> {
    let hit = messages
        .into_iter()
        .any(|m| words.iter().any(|w| m.text().contains(w.as_str())));
    match (hit, warn_only) {
        (true, Some(true)) => Err(Abort::new().reason("listed").warn()),
        (true, _) => Err(ProcessorError::abort("listed")),
        (false, _) => Ok(()),
    }
}

/// The status of an order.
#[tool]
async fn order_status(
    /// The order's id.
    id: String,
    /// Whether to include its lines.
    lines: Option<bool>,
    cx: ToolContext<'_>,
) -> Result<Value, String> {
    Ok(json!({ "id": id, "lines": lines, "call": cx.tool_call_id }))
}

/// A refund's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order.
    order_id: String,
}

/// Refunds an order.
#[tool]
async fn refund(#[args] refund: Refund) -> String {
    refund.order_id
}

/// Rings.
#[tool]
async fn ring() {}

const RETRIES: u32 = 2;
const STEPS: u32 = 4;

#[test]
fn an_agent_of_every_kind_of_entry_runs() {
    let store = InMemoryStore::new();
    let agent = agent! {
        name: "lints",
        instructions: "Be brief.",
        model: ScriptedModel::new([Turn::text("ok")]),
        tools: [OrderStatusTool, RefundTool, RingTool],
        memory: Memory::new(store),
        input: [memory, Look, (Guard { id: "guard".to_owned() }), Blocklist::new(Vec::new(), None)],
        output: [(Shout), Arc::new(Count::new(8)), NotEmpty, Gate, Hide, memory],
        error: [RetryAll],
        max_processor_retries: RETRIES,
        max_steps: STEPS,
    };
    let result = futures::executor::block_on(agent.generate("hi")).expect("a run");
    assert_eq!(result.text, "OK");
}

#[test]
fn an_agent_of_ordered_lists_runs() {
    use processors::builtins::{BatchParts, UnicodeNormalizer};
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        input: ordered[(Guard { id: "guard".to_owned() }) after UnicodeNormalizer, UnicodeNormalizer::new()],
        output: ordered[Shout before BatchParts, BatchParts::builder().build().expect("a batcher")],
    };
    let result = futures::executor::block_on(agent.generate("hi")).expect("a run");
    assert_eq!(result.text, "OK");
}
