//! A lowercase `const` is a `const`: the key takes it (the hint that it looks like a variable
//! is a warning, which this case allows, as the compiler's at the name).
#![allow(deprecated, non_upper_case_globals)]
use processors::prelude::*;

const retries: u32 = 2;

#[processor(output_step)]
fn not_empty(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    if text.is_empty() {
        return Err(abort.reason("say something").retry(true).into());
    }
    Ok(())
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [NotEmpty],
        max_processor_retries: retries,
    };
}
