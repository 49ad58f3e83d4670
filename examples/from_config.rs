//! An agent loaded from a TOML file, run offline on its scripted model: an answer streamed
//! with the e-mail address redacted, then a question that holds an API key, blocked before
//! the model is called.
//!
//! ```sh
//! cargo run --example from_config -- examples/agent.toml
//! ```
//!
//! A mistake in the file is reported with its line and column, every mistake at once.

use futures::StreamExt;
use processors::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "examples/agent.toml".to_owned());
    let agent = match Agent::from_config(&path) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let context = || RequestContext::new().with_thread("t-1", "u-1");

    let options = GenerateOptions::new().request_context(context());
    let mut stream = agent.stream_with("Who can help?", options);
    while let Some(chunk) = stream.next().await {
        if let Some(text) = chunk.text_delta() {
            print!("{text}");
        }
    }
    println!();
    stream.finish().await?;

    let options = GenerateOptions::new().request_context(context());
    let result = agent
        .generate_with("my key is sk-abcdefghijklmnopqrstuvwxyz", options)
        .await?;
    if let Some(tripwire) = &result.tripwire {
        println!("blocked by {}: {}", tripwire.processor_id, tripwire.reason);
    }
    Ok(())
}
