//! A refund that waits for a person: the first run asks and exits; a second run, another
//! process, answers and finishes the same run from SQLite.
//!
//! ```text
//! cargo run --example approvals                      # asks, prints the waiting call, exits
//! cargo run --example approvals -- approve           # approves it: the refund runs
//! cargo run --example approvals -- deny "not today"  # or denies it, with a reason
//! cargo run --example approvals -- --db refunds.db   # another database
//! ```
//!
//! The paused run is kept in the agent's memory store (`approvals.db` in the current
//! directory unless `--db` says otherwise); the second run finds it there by its
//! conversation (`Agent::waiting_runs`), with the calls it waits on, and answers each. Offline,
//! the model is a small local one: it asks for the refund, then reports the tool's result.

use futures::StreamExt;
use futures::future::BoxFuture;
use processors::agent::Approval;
use processors::model::ModelStream;
use processors::prelude::*;
use serde_json::json;

/// An offline model: asks to refund order 7, then says what the refund tool answered.
struct Clerk;

impl LanguageModel for Clerk {
    fn provider(&self) -> &str {
        "local"
    }

    fn model_id(&self) -> &str {
        "clerk"
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let answered = request.prompt.last().and_then(|m| {
            m.content.parts.iter().find_map(|p| match p {
                Part::ToolResult(r) => Some(r.clone()),
                _ => None,
            })
        });
        let chunks = match answered {
            None => vec![
                ChunkKind::ToolCall(ToolCall {
                    tool_call_id: "call-1".into(),
                    tool_name: "refund".into(),
                    args: json!({ "order": 7, "amount_eur": 120 }),
                }),
                ChunkKind::Finish {
                    finish_reason: FinishReason::ToolCalls,
                    usage: Usage::default(),
                },
            ],
            Some(r) => {
                let text = match r.is_error {
                    false => format!("Done: {}.", r.result),
                    true => format!("I could not refund the order: {}.", r.result),
                };
                vec![
                    ChunkKind::TextStart { id: "t".into() },
                    ChunkKind::TextDelta {
                        id: "t".into(),
                        text,
                    },
                    ChunkKind::TextEnd { id: "t".into() },
                    ChunkKind::Finish {
                        finish_reason: FinishReason::Stop,
                        usage: Usage::default(),
                    },
                ]
            }
        };
        Box::pin(async move { Ok(futures::stream::iter(chunks.into_iter().map(Ok)).boxed()) })
    }
}

/// Asks a person before any refund over 100 EUR.
#[processor(tool_call)]
fn ask_before_large_refunds(call: &ToolCall) -> ToolCallAction {
    match call.args["amount_eur"].as_u64() {
        Some(amount) if call.tool_name == "refund" && amount > 100 => {
            ToolCallAction::approval(format!("a refund of {amount} EUR needs a person"))
        }
        _ => ToolCallAction::Continue,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut db, mut answer) = ("approvals.db".to_owned(), None);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = args.next().ok_or("--db needs a path")?,
            "approve" => answer = Some(None),
            "deny" => answer = Some(Some(args.next().unwrap_or_else(|| "denied".to_owned()))),
            other => return Err(format!("unknown argument `{other}`").into()),
        }
    }
    let refund = tool(
        "refund",
        "Refunds an order",
        json!({ "type": "object" }),
        |args| async move { Ok(json!(format!("order {} refunded", args["order"]))) },
    );
    let agent = Agent::builder()
        .instructions("You handle refunds.")
        .model(Clerk)
        .tool(refund)
        .memory(Memory::sqlite(&db)?)
        .output(AskBeforeLargeRefunds)
        .build()?;
    let options = || {
        GenerateOptions::new().request_context(RequestContext::new().with_thread("refunds", "ada"))
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let result = match answer {
            None => {
                println!("you: Please refund order 7.");
                agent
                    .generate_with("Please refund order 7.", options())
                    .await?
            }
            Some(decision) => {
                // What waits in this conversation, read from the store: the run and its calls.
                let waiting = agent.waiting_runs(Some("refunds"), None).await?;
                let run = waiting
                    .first()
                    .ok_or("no paused run to answer in `refunds`")?;
                let mut answer = Approval::new(&run.run_id);
                for request in &run.requests {
                    answer = match &decision {
                        None => answer.approve(&request.tool_call_id),
                        Some(reason) => answer.deny(&request.tool_call_id, reason),
                    };
                }
                println!("[resuming run {} from {db}]", run.run_id);
                agent.resume_with(answer, options()).await?
            }
        };
        for request in &result.pending_approvals {
            println!(
                "[waiting for approval: `{}` {} ({}), asked by {}]",
                request.tool_name, request.args, request.reason, request.processor_id
            );
            println!(
                "[answer with: cargo run --example approvals -- approve   (or: deny \"why\")]"
            );
        }
        if result.pending_approvals.is_empty() {
            println!("assistant: {}", result.text);
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
