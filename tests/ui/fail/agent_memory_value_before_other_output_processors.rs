use processors::prelude::*;
include!("../common.rs");

fn main() {
    let store = InMemoryStore::new();
    let _agent = agent! {
        model: ScriptedModel::new([]),
        memory: Memory::new(store.clone()),
        output: [Memory::new(store), Shout],
    };
}
