//! An agent with an input processor, a streaming redaction processor and a guardrail that
//! retries, on the offline scripted model: processors written with `#[processor]`, the agent
//! declared with `agent!`.
//!
//! Run with `cargo run --example quickstart`.

use futures::StreamExt;
use processors::prelude::*;
use std::io::Write;
use std::time::Duration;

/// Collapses runs of whitespace in the user's input.
#[processor(input)]
fn normalize_whitespace(mut messages: Vec<Message>) -> Vec<Message> {
    for m in &mut messages {
        let text = m.text().split_whitespace().collect::<Vec<_>>().join(" ");
        m.set_text(text);
    }
    messages
}

/// Redacts API keys (`sk-…`) as they stream; counts redactions in its per-request state.
struct RedactKeys;

#[processor]
impl RedactKeys {
    fn process_output_stream(&self, chunk: &Chunk, state: &mut usize) -> StreamAction {
        let Some(text) = chunk.text_delta() else {
            return StreamAction::Pass;
        };
        if !text.contains("sk-") {
            return StreamAction::Pass;
        }
        *state += 1;
        let redacted = text
            .split(' ')
            .map(|w| if w.starts_with("sk-") { "[key]" } else { w })
            .collect::<Vec<_>>()
            .join(" ");
        chunk.clone().map_text(|_| redacted).into()
    }

    fn process_output_result(&self, state: &mut usize) {
        println!("\n[redact-keys] redacted {state} chunk(s)");
    }
}

/// Rejects answers that apologise, asking the model to try again with the reason.
#[processor(output_step)]
fn no_apologies(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    if text.to_lowercase().contains("sorry") {
        return Err(abort
            .reason("answer without apologising")
            .retry(true)
            .into());
    }
    Ok(())
}

/// How long the scripted model takes per delta: the answer streams as a model's would.
const PACE: Duration = Duration::from_millis(40);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), AgentError> {
    let model = ScriptedModel::new([
        Turn::deltas(["Sorry, ", "I cannot ", "help."]).pace(PACE),
        Turn::deltas([
            "Your key ",
            "sk-12345 ",
            "is set; ",
            "rotate it ",
            "monthly.",
        ])
        .pace(PACE)
        .usage(42, 12),
    ]);

    // Checked at compile time: each processor is in a list it has a hook for, no two share
    // an id, and a processor can ask for the retries `max_processor_retries` allows.
    let agent = agent! {
        name: "support",
        instructions: "You are a helpful assistant.",
        model: model.clone(),
        input: [NormalizeWhitespace],
        output: [RedactKeys, NoApologies],
        max_processor_retries: 2,
    };

    let mut stream = agent.stream("  is   my key   set? ");
    while let Some(chunk) = stream.next().await {
        match &chunk.kind {
            ChunkKind::TextDelta { text, .. } => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            ChunkKind::StepFinish { finish_reason, .. } => println!("   <step: {finish_reason:?}>"),
            ChunkKind::Tripwire(t) => println!("\n[tripwire] {}", t.reason),
            _ => {}
        }
    }
    let result = stream.finish().await?;

    println!("\ntext:          {}", result.text);
    println!("steps:         {}", result.steps.len());
    for step in &result.steps {
        match &step.tripwire {
            Some(t) => println!("  rejected by {}: {}", t.processor_id, t.reason),
            None => println!("  accepted: {:?}", step.text),
        }
    }
    println!("finish reason: {:?}", result.finish_reason);
    println!("usage:         {:?}", result.usage);
    println!("model calls:   {}", model.calls());
    println!(
        "user input as the model saw it: {:?}",
        model.requests()[0].prompt.last().map(Message::text)
    );
    Ok(())
}
