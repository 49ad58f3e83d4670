//! The README's first program, whole: a guard on the input and a redaction on the stream,
//! an answer streamed as it comes, and the trip wire a blocked question ends with.
//!
//! ```text
//! cargo run --example first_guard
//! ```

use futures::StreamExt;
use processors::prelude::*;
use std::io::Write;
use std::time::Duration;

/// Replaces each API key (`sk-…`) in streamed text, and only the key.
#[processor(output_stream)]
fn redact_keys(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(text) if text.contains("sk-") => chunk.clone().map_text(redact).into(),
        _ => StreamAction::Pass,
    }
}

/// `text` with every word that starts with `sk-` replaced by `[key]`.
fn redact(text: &str) -> String {
    text.split(' ')
        .map(|word| match word.starts_with("sk-") {
            true => "[key]",
            false => word,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Ends the run before the model is called when the question holds a password.
#[processor(input)]
fn no_passwords(messages: Vec<Message>, abort: Abort) -> Result<(), ProcessorError> {
    if messages.iter().any(|m| m.text().contains("password")) {
        return Err(abort.reason("do not send passwords").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = agent! {
        // A scripted model, offline: three deltas, 50 ms apart, as a model streams them.
        model: ScriptedModel::new([
            Turn::deltas(["Your key is ", "sk-123 and", " it works."]).pace(Duration::from_millis(50)),
        ]),
        input: [NoPasswords],
        output: [RedactKeys],
    };

    // Streamed: each delta as it comes, redacted on the way.
    let mut stream = agent.stream("Is my key set?");
    while let Some(chunk) = stream.next().await {
        if let Some(text) = chunk.text_delta() {
            print!("{text}");
            std::io::stdout().flush()?;
        }
    }
    println!();
    let result = stream.finish().await?;
    assert_eq!(result.text, "Your key is [key] and it works.");

    // Blocked: the run ends with a trip wire, and the model is never called.
    let result = agent.generate("my password is hunter2").await?;
    if let Some(tripwire) = &result.tripwire {
        println!("blocked by {}: {}", tripwire.processor_id, tripwire.reason);
    }
    Ok(())
}
