//! An agent with a tool, streamed from a real provider when one is configured, else offline.
//!
//! ```text
//! PROCESSORS_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=sk-… cargo run --example real_provider
//! PROCESSORS_MODEL=anthropic/claude-haiku-4-5 ANTHROPIC_API_KEY=… cargo run --example real_provider
//! PROCESSORS_MODEL=ollama/llama3.2 cargo run --example real_provider   # a local Ollama
//! cargo run --example real_provider                                     # offline
//! ```

use futures::StreamExt;
use processors::prelude::*;
use processors::providers;
use serde_json::json;
use std::io::Write;
use std::sync::Arc;

const HOW_TO: &str = "set PROCESSORS_MODEL (openai/…, anthropic/…, ollama/…, lmstudio/…, vllm/…, \
llamacpp/…) and the provider's key (OPENAI_API_KEY, ANTHROPIC_API_KEY) to use a real model";

/// The model named by `PROCESSORS_MODEL`, or a scripted one (and why).
fn choose_model() -> Arc<dyn LanguageModel> {
    let offline = |why: String| -> Arc<dyn LanguageModel> {
        eprintln!("[offline: {why}; {HOW_TO}]\n");
        Arc::new(ScriptedModel::new([
            Turn::empty().tool_call("call-1", "weather", json!({ "city": "Oslo" })),
            Turn::deltas(["It is ", "sunny and 21 °C ", "in Oslo."]),
        ]))
    };
    match std::env::var("PROCESSORS_MODEL") {
        Ok(id) if !id.trim().is_empty() => match providers::resolve(id.trim()) {
            Ok(model) => {
                eprintln!("[using {}/{}]\n", model.provider(), model.model_id());
                model
            }
            Err(e) => offline(format!("cannot use `{id}`: {e}")),
        },
        _ => offline("PROCESSORS_MODEL is not set".to_owned()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weather = tool(
        "weather",
        "Current weather for a city",
        json!({
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
        }),
        |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny", "celsius": 21 })) },
    );
    let agent = Agent::builder()
        .instructions("You are terse. Use the weather tool for weather questions.")
        .shared_model(choose_model())
        .tool(weather)
        .build()?;

    let mut stream = agent.stream("What is the weather in Oslo?");
    let mut out = std::io::stdout();
    while let Some(chunk) = stream.next().await {
        match &chunk.kind {
            ChunkKind::TextDelta { text, .. } => write!(out, "{text}")?,
            ChunkKind::ToolCall(ToolCall {
                tool_name, args, ..
            }) => writeln!(out, "[calling {tool_name} {args}]")?,
            ChunkKind::ToolResult(r) => writeln!(out, "[result {}]", r.result)?,
            ChunkKind::Error { message } => writeln!(out, "\n[error: {message}]")?,
            _ => {}
        }
        out.flush()?;
    }
    let result = match stream.finish().await {
        Ok(result) => result,
        Err(e) => {
            eprintln!("\nthe run failed: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "\n\n[{:?}, {} tokens in, {} out]",
        result.finish_reason, result.usage.input_tokens, result.usage.output_tokens
    );
    Ok(())
}
