use processors::prelude::*;
include!("../common.rs");

#[processor(output_stream, id = "shout")]
fn yell(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn loud() -> Shout {
    Shout
}

fn louder() -> Yell {
    Yell
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [loud(), louder()],
    };
}
