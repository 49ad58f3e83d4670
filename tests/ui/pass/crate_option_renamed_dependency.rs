//! The facade under another name, as `pipelines = { package = "processors", ... }` in a
//! manifest makes it: `crate = pipelines` points both macros' generated code there.

extern crate processors as pipelines;

use pipelines::prelude::{Chunk, ScriptedModel, StreamAction, Turn};

#[pipelines::processor(output_stream, crate = pipelines)]
fn shout(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    }
}

struct Exclaim;

#[pipelines::processor(crate = pipelines)]
impl Exclaim {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) => chunk.clone().map_text(|_| format!("{t}!")).into(),
            None => StreamAction::Pass,
        }
    }
}

fn main() {
    let agent = pipelines::agent! {
        crate: pipelines,
        model: ScriptedModel::new([Turn::text("hi")]),
        output: [Shout, Exclaim],
        max_steps: 2,
    };
    let result = futures::executor::block_on(agent.generate("x")).unwrap();
    assert_eq!(result.text, "HI!");
}
