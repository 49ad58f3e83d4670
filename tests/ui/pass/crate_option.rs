//! `crate = ...` names where generated code finds the runtime: the facade or the runtime
//! crate itself, in any position among agent!'s keys. Processors declared either way mix.

use processors::prelude::*;

#[processor(output_stream, crate = ::processors)]
fn shout(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    }
}

struct Exclaim;

#[processor(crate = processors_runtime)]
impl Exclaim {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) => chunk.clone().map_text(|_| format!("{t}!")).into(),
            None => StreamAction::Pass,
        }
    }
}

fn main() {
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("hi")]),
        crate: ::processors,
        output: [Shout, Exclaim],
    };
    let result = futures::executor::block_on(agent.generate("x")).unwrap();
    assert_eq!(result.text, "HI!");
}
