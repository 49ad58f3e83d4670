//! agent! with every key, run offline.

use processors::prelude::*;
use std::sync::Arc;

include!("../common.rs");

fn main() {
    let store = InMemoryStore::new();
    let weather = tool("weather", "Weather", serde_json::json!({}), |_| async { Ok(serde_json::json!(21)) });
    let agent = agent! {
        name: "support",
        instructions: "You are a helpful assistant.",
        model: Arc::new(ScriptedModel::new([Turn::text("ok")])),
        tools: [weather],
        memory: Memory::new(store),
        input: [memory, Trim],
        output: [Shout, NotEmpty, memory],
        error: [RetryAll],
        max_processor_retries: 2,
        max_steps: 4,
        on_violation: |v: &Violation| eprintln!("{}", v.reason),
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "ok");
    assert_eq!(agent.name(), "support");
}
