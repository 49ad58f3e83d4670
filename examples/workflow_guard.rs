//! An input guard as a workflow: moderation and PII redaction judged in parallel (the
//! moderation verdict can stop the run, the redacted input is what goes on), then a branch
//! that normalises Unicode only in inputs that need it. Offline on scripted models.
//!
//! Run with `cargo run --example workflow_guard`.

use processors::builtins::Sites;
use processors::builtins::UnicodeNormalizer;
use processors::builtins::detector::{Judge, Moderation, PiiDetector, PiiStrategy, Redaction};
use processors::prelude::*;
use processors::workflow::WorkflowInput;
use serde_json::json;
use std::sync::Arc;

/// The offline judge: moderation scores from keywords, and the e-mail addresses it sees.
fn verdict(request: &ModelRequest) -> Turn {
    let content = request.prompt.last().map(Message::text).unwrap_or_default();
    let hostile = ["idiot", "hurt"]
        .iter()
        .any(|w| content.to_lowercase().contains(w));
    let score = if hostile { 0.93 } else { 0.02 };
    let entities: Vec<_> = content
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '@' && c != '.'))
        .filter(|w| w.contains('@'))
        .map(|w| json!({ "type": "email", "value": w, "confidence": 0.98 }))
        .collect();
    let verdict = json!({
        "categories": { "harassment": score, "violence": score },
        "entities": entities,
    });
    Turn::text(verdict.to_string())
}

/// Whether a message has characters outside ASCII (fancy quotes, full-width letters).
fn needs_normalising(input: &WorkflowInput<'_>) -> bool {
    matches!(input, WorkflowInput::Messages(ms) if ms.iter().any(|m| !m.text().is_ascii()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let judge = Judge::shared(Arc::new(
        ScriptedModel::responder(|r, _| verdict(r)).named("judge"),
    ));
    let guard = Workflow::new("input-guard")
        .parallel(
            (
                Moderation::builder(judge.clone())
                    .sites(Sites::INPUT)
                    .build()?,
                PiiDetector::builder(judge)
                    .types(["email"])
                    .strategy(PiiStrategy::Redact(Redaction::Placeholder))
                    .sites(Sites::INPUT)
                    .build()?,
            ),
            1, // keep the PII branch's output: the redacted input
        )
        .branch(needs_normalising, UnicodeNormalizer::new());
    // The assistant repeats what reached it, so the output shows what the guard let through.
    let assistant = ScriptedModel::responder(|r, _| {
        let last = r.prompt.last().map(Message::text).unwrap_or_default();
        Turn::text(format!("(the model received: {last})"))
    });
    let agent = agent! {
        model: assistant,
        input: [guard],
    };
    for input in [
        "Where is my order?",
        "Mail me at ada@lovelace.example please",
        "Ｗｈｅｒｅ is my “order”?",
        "You idiot, where is it?",
    ] {
        let result = agent.generate(input).await?;
        match &result.tripwire {
            Some(tw) => println!("> {input}\n  blocked by {}: {}", tw.processor_id, tw.reason),
            None => println!("> {input}\n  {}", result.text),
        }
    }
    Ok(())
}
