use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        error: [RetryAll],
        max_processor_retries: 0,
    };
}
