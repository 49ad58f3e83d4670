use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [Trim],
        output: [Shout],
        max_processor_retries: 3,
    };
}
