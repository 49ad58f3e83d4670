use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [NotEmpty],
        max_processor_retries: 1 + 1,
    };
}
