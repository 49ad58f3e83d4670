//! Processors declared with `#[processor]` and an agent declared with `agent!`, with memory,
//! a typed tool (`#[tool]`), a stream redactor, a retrying guardrail and a provider-error handler; offline on
//! the scripted model.
//!
//! Run with `cargo run --example support_agent`; `-- --trace run.html` also writes the run's
//! timeline as a page (each step, each processor's hook calls, each chunk's way through the
//! stream processors).

use futures::StreamExt;
use processors::prelude::*;
use processors::trace::Recorder;
use serde_json::json;
use tracing::instrument::WithSubscriber;

/// Collapses runs of whitespace in the new input.
#[processor(input)]
fn normalize(messages: Vec<Message>) -> Vec<Message> {
    messages
        .into_iter()
        .map(|mut m| {
            let t = m.text().split_whitespace().collect::<Vec<_>>().join(" ");
            m.set_text(t);
            m
        })
        .collect()
}

/// Redacts e-mail addresses as they stream, counting them per request.
#[processor(output_stream)]
fn redact_emails(chunk: &Chunk, state: &mut usize) -> StreamAction {
    let Some(text) = chunk.text_delta() else {
        return StreamAction::Pass;
    };
    if !text.contains('@') {
        return StreamAction::Pass;
    }
    *state += 1;
    let redacted = text
        .split(' ')
        .map(|w| if w.contains('@') { "[email]" } else { w })
        .collect::<Vec<_>>()
        .join(" ");
    chunk.clone().map_text(|_| redacted).into()
}

/// Asks the model again when it answers without citing the tool.
#[processor(output_step, id = "cite-sources")]
async fn cite_sources(text: &str, calls: &[ToolCall], abort: Abort) -> Result<(), ProcessorError> {
    if calls.is_empty() && !text.to_lowercase().contains("according to") {
        return Err(abort
            .reason("cite where the answer comes from")
            .retry(true)
            .into());
    }
    Ok(())
}

/// Shortens the conversation when the provider says the prompt is too long.
#[processor(api_error)]
fn shorten_on_overflow(error: &ApiError, list: &mut MessageList) -> ApiErrorAction {
    if error.status != Some(400) || !error.message.contains("too long") {
        return ApiErrorAction::Unhandled;
    }
    let oldest: Vec<String> = list.remembered().take(2).map(|m| m.id.clone()).collect();
    let ids: Vec<&str> = oldest.iter().map(String::as_str).collect();
    list.remove(&ids);
    ApiErrorAction::Retry
}

/// The status of an order.
#[tool]
async fn order_status(
    /// The order's id, such as `A-17`.
    id: String,
) -> serde_json::Value {
    json!({ "id": id, "status": "shipped" })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        Turn::error(ApiError::new(400, "prompt too long")),
        Turn::text("It has probably shipped."),
        Turn::empty().tool_call("call-1", OrderStatusTool::NAME, json!({ "id": "A-17" })),
        Turn::deltas([
            "According to the order system, ",
            "A-17 has shipped; ",
            "updates go to ann@example.com ",
            "daily.",
        ]),
    ]);
    let store = InMemoryStore::new();

    let agent = agent! {
        name: "support",
        instructions: "You answer questions about orders.",
        model: model.clone(),
        tools: [OrderStatusTool],
        memory: Memory::new(store.clone()),
        input: [memory, Normalize],
        output: [RedactEmails, CiteSources, memory],
        error: [ShortenOnOverflow],
        max_processor_retries: 2,
        max_steps: 4,
    };

    let trace_to = trace_path()?;
    let recorder = Recorder::new();
    let options = GenerateOptions::new()
        .request_context(RequestContext::new().with_thread("thread-1", "customer-9"));
    let run = async {
        let mut stream = agent.stream_with("  where   is order A-17? ", options);
        while let Some(chunk) = stream.next().await {
            print_chunk(&chunk);
        }
        stream.finish().await
    };
    let result = match &trace_to {
        Some(_) => run.with_subscriber(recorder.clone()).await?,
        None => run.await?,
    };
    println!("\nanswer: {}", result.text);

    for step in &result.steps {
        if let Some(t) = &step.tripwire {
            println!(
                "rejected step {} by {}: {}",
                step.step_number, t.processor_id, t.reason
            );
        }
    }
    println!(
        "model calls: {} (one rejected by the provider, one by the guardrail)",
        model.calls()
    );
    let saved = store.list_messages("thread-1", None).await?;
    println!(
        "saved to memory: {} messages; last: {:?}",
        saved.len(),
        saved.last().map(Message::text)
    );
    if let Some(path) = trace_to {
        std::fs::write(&path, recorder.timeline().to_html())?;
        println!("timeline written to {path}");
    }
    Ok(())
}

/// The path after `--trace`, if given.
fn trace_path() -> Result<Option<String>, String> {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        None => Ok(None),
        Some("--trace") => args
            .next()
            .map(Some)
            .ok_or_else(|| "--trace needs a file name, like `--trace run.html`".to_owned()),
        Some(other) => Err(format!("unknown argument `{other}`; use `--trace FILE`")),
    }
}

fn print_chunk(chunk: &Chunk) {
    match &chunk.kind {
        ChunkKind::TextDelta { text, .. } => print!("{text}"),
        ChunkKind::ToolCall(ToolCall {
            tool_name, args, ..
        }) => println!("[calls {tool_name} {args}]"),
        ChunkKind::ToolResult(r) => println!("[result {}]", r.result),
        ChunkKind::StepFinish { finish_reason, .. } => println!("  <{finish_reason:?}>"),
        _ => {}
    }
}
