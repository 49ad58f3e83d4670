use processors::prelude::*;
include!("../common.rs");

/// Also upper-cases text, under the same id as `Shout`.
#[processor(output_stream, id = "shout")]
fn yell(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Shout, Yell],
    };
}
