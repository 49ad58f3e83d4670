use processors::prelude::*;
include!("../common.rs");

fn main() {
    let retries = 3;
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [NotEmpty],
        max_processor_retries: retries,
    };
}
