//! Asking for the stream history (`&[Chunk]`, or an alias of it) is enough to get it; the
//! `stream_history` option is not needed.

use processors::prelude::*;

type History<'a> = &'a [Chunk];

/// Replaces each text delta with everything streamed so far.
#[processor(output_stream)]
fn so_far(chunk: &Chunk, history: History<'_>) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => {
            let before: String = history.iter().filter_map(Chunk::text_delta).collect();
            chunk.clone().map_text(|_| format!("[{before}{t}]")).into()
        }
        None => StreamAction::Pass,
    }
}

fn main() {
    assert!(Processor::keeps_stream_history(&SoFar));
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        output: [SoFar],
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert!(result.text.starts_with("[o"), "{}", result.text);
}
