//! `max_processor_retries` and `max_steps` take a `const` as well as a literal; the compiler
//! checks the constant's value.

use processors::prelude::*;
include!("../common.rs");

const MAX_RETRIES: u32 = 2;

mod limits {
    pub const STEPS: u32 = 3;
}

fn main() {
    let agent = agent! {
        model: ScriptedModel::new([Turn::text(""), Turn::text("ok")]),
        output: [NotEmpty],
        error: [RetryAll],
        max_processor_retries: MAX_RETRIES,
        max_steps: limits::STEPS,
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "ok");
}
