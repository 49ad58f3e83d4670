use processors::prelude::*;
include!("../common.rs");

fn main() {
    let store = InMemoryStore::new();
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Shout, Memory::new(store)],
    };
}
