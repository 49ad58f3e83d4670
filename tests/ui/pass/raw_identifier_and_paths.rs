//! A raw identifier as the function name, and processors named by path in agent!.

use processors::prelude::*;

mod filters {
    use processors::prelude::*;

    #[processor(output_stream)]
    pub fn r#loop(chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

const LOUD: filters::Loop = filters::Loop;

fn main() {
    assert_eq!(filters::Loop::ID, "loop");
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        output: [LOUD],
    };
    assert_eq!(futures::executor::block_on(agent.generate("x")).unwrap().text, "ok");
}
