//! A conversation kept in SQLite across runs of the program: run it twice and the second run
//! remembers the first.
//!
//! ```text
//! cargo run --example persistent_chat                        # "My name is Ada."
//! cargo run --example persistent_chat                        # "What did I tell you?"
//! cargo run --example persistent_chat -- "Any message" --db chat.db --thread support-7
//! PROCESSORS_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=sk-… cargo run --example persistent_chat
//! ```
//!
//! The database is `persistent_chat.db` in the current directory unless `--db` says
//! otherwise. Offline, the model is a small local one that answers from the conversation it
//! is sent, so what it says shows what memory loaded.

use futures::StreamExt;
use futures::future::BoxFuture;
use processors::model::ModelStream;
use processors::prelude::*;
use processors::providers;
use std::sync::Arc;

/// An offline model that answers from what it is sent: the earlier user messages of the
/// conversation (those memory loaded) and the new one.
struct Recall;

impl LanguageModel for Recall {
    fn provider(&self) -> &str {
        "local"
    }

    fn model_id(&self) -> &str {
        "recall"
    }

    fn stream(&self, request: ModelRequest) -> BoxFuture<'_, Result<ModelStream, ApiError>> {
        let said: Vec<String> = request
            .prompt
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .collect();
        let answer = match said.split_last() {
            Some((_, [])) | None => {
                "Nice to meet you. I will remember this conversation.".to_owned()
            }
            Some((_, earlier)) => format!(
                "You told me {} thing(s) before; the first was: \"{}\"",
                earlier.len(),
                earlier[0]
            ),
        };
        let chunks = vec![
            Ok(ChunkKind::TextStart { id: "t".into() }),
            Ok(ChunkKind::TextDelta {
                id: "t".into(),
                text: answer,
            }),
            Ok(ChunkKind::TextEnd { id: "t".into() }),
            Ok(ChunkKind::Finish {
                finish_reason: FinishReason::Stop,
                usage: Usage::default(),
            }),
        ];
        Box::pin(async move { Ok(futures::stream::iter(chunks).boxed()) })
    }
}

/// `PROCESSORS_MODEL`'s model, or the offline one.
fn model() -> Arc<dyn LanguageModel> {
    match std::env::var("PROCESSORS_MODEL") {
        Ok(id) if !id.trim().is_empty() => match providers::resolve(id.trim()) {
            Ok(model) => return model,
            Err(e) => eprintln!("[offline: cannot use `{id}`: {e}]"),
        },
        _ => {}
    }
    Arc::new(Recall)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut message, mut db, mut thread) =
        (None, "persistent_chat.db".to_owned(), "chat".to_owned());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--db" => db = args.next().ok_or("--db needs a path")?,
            "--thread" => thread = args.next().ok_or("--thread needs an id")?,
            _ => message = Some(arg),
        }
    }

    let memory = Memory::sqlite(&db)?;
    let store = memory.store().clone();
    let agent = Agent::builder()
        .instructions("You are a friendly assistant with a good memory.")
        .shared_model(model())
        .memory(memory)
        .build()?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let earlier = store.list_messages(&thread, None).await?;
        let message = message.unwrap_or_else(|| match earlier.is_empty() {
            true => "My name is Ada.".to_owned(),
            false => "What did I tell you?".to_owned(),
        });
        println!(
            "[{db}: {} message(s) remembered in thread `{thread}`]",
            earlier.len()
        );
        println!("you: {message}");
        let options = GenerateOptions::new()
            .request_context(RequestContext::new().with_thread(&thread, "local-user"));
        let result = agent.generate_with(message, options).await?;
        println!("assistant: {}", result.text);
        let now = store.list_messages(&thread, None).await?;
        println!("[{} message(s) in thread `{thread}` now]", now.len());
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
