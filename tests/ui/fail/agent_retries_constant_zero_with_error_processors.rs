use processors::prelude::*;
include!("../common.rs");

const NO_RETRIES: u32 = 0;

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        error: [RetryAll],
        max_processor_retries: NO_RETRIES,
    };
}
