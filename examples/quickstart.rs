//! An agent with an input processor, a streaming redaction processor and a guardrail that
//! retries, on the offline scripted model.
//!
//! Run with `cargo run --example quickstart`.

use futures::StreamExt;
use processors::prelude::*;

/// Collapses runs of whitespace in the user's input.
struct NormalizeWhitespace;

impl Processor for NormalizeWhitespace {
    type State = ();
    const HOOKS: Hooks = Hooks::INPUT;

    fn id(&self) -> &str {
        "normalize-whitespace"
    }

    async fn process_input(&self, args: InputArgs<'_, ()>) -> Result<InputOutcome, ProcessorError> {
        let mut messages = args.messages;
        for m in &mut messages {
            let text = m.text().split_whitespace().collect::<Vec<_>>().join(" ");
            m.set_text(text);
        }
        Ok(messages.into())
    }
}
impl InputProcessor for NormalizeWhitespace {}

/// Redacts API keys (`sk-…`) as they stream; counts redactions in its per-request state.
struct RedactKeys;

impl Processor for RedactKeys {
    type State = usize;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM.with(Hooks::OUTPUT_RESULT);

    fn id(&self) -> &str {
        "redact-keys"
    }

    async fn process_output_stream(
        &self,
        args: OutputStreamArgs<'_, usize>,
    ) -> Result<StreamAction, ProcessorError> {
        let Some(text) = args.chunk.text_delta() else {
            return Ok(StreamAction::Pass);
        };
        if !text.contains("sk-") {
            return Ok(StreamAction::Pass);
        }
        *args.state += 1;
        let redacted = text
            .split(' ')
            .map(|w| if w.starts_with("sk-") { "[key]" } else { w })
            .collect::<Vec<_>>()
            .join(" ");
        Ok(args.chunk.clone().map_text(|_| redacted).into())
    }

    async fn process_output_result(
        &self,
        args: OutputResultArgs<'_, usize>,
    ) -> Result<OutputOutcome, ProcessorError> {
        println!("\n[redact-keys] redacted {} chunk(s)", args.state);
        Ok(OutputOutcome::Unchanged)
    }
}
impl OutputProcessor for RedactKeys {}

/// Rejects answers that apologise, asking the model to try again.
struct NoApologies;

impl Processor for NoApologies {
    type State = ();
    const HOOKS: Hooks = Hooks::OUTPUT_STEP;

    fn id(&self) -> &str {
        "no-apologies"
    }

    async fn process_output_step(
        &self,
        args: OutputStepArgs<'_, ()>,
    ) -> Result<OutputOutcome, ProcessorError> {
        if args.text.to_lowercase().contains("sorry") {
            return Err(args
                .abort()
                .reason("answer without apologising")
                .retry(true)
                .into());
        }
        Ok(OutputOutcome::Unchanged)
    }
}
impl OutputProcessor for NoApologies {}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), AgentError> {
    let model = ScriptedModel::new([
        Turn::deltas(["Sorry, ", "I cannot ", "help."]),
        Turn::deltas([
            "Your key ",
            "sk-12345 ",
            "is set; ",
            "rotate it ",
            "monthly.",
        ])
        .usage(42, 12),
    ]);

    let agent = Agent::builder()
        .name("support")
        .instructions("You are a helpful assistant.")
        .model(model.clone())
        .input(NormalizeWhitespace)
        .output(RedactKeys)
        .output(NoApologies)
        .max_processor_retries(2)
        .build()
        .expect("a valid agent");

    let mut stream = agent.stream("  is   my key   set? ");
    while let Some(chunk) = stream.next().await {
        match &chunk.kind {
            ChunkKind::TextDelta { text, .. } => print!("{text}"),
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
