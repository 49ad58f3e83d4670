use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        max_processor_retries: 2,
    };
}
