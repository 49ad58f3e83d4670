// Memory shared through an `Arc`: given as the `memory:` key and placed in a list, it is the
// agent's memory (placement checks included).
use processors::prelude::*;
use std::sync::Arc;

#[processor(output_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| t.to_uppercase()).into()
}

fn main() {
    let shared = Arc::new(Memory::new(InMemoryStore::new()));
    let _agent = agent! {
        model: ScriptedModel::new([]),
        memory: Arc::clone(&shared),
        output: [Shout, shared],
    };
}
