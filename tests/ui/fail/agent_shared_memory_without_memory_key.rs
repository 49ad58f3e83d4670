use processors::prelude::*;
use std::sync::Arc;
include!("../common.rs");

fn main() {
    let shared = Arc::new(Memory::new(InMemoryStore::new()));
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Shout, shared],
    };
}
