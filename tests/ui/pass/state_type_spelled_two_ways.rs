//! The hooks of an impl block share one state type however each spells it.

use processors::prelude::*;

struct Collect;

#[processor]
impl Collect {
    fn process_output_stream(&self, chunk: &Chunk, state: &mut std::vec::Vec<u8>) -> StreamAction {
        state.extend(chunk.text_delta().unwrap_or_default().bytes());
        StreamAction::Pass
    }

    fn process_output_result(&self, state: &mut Vec<u8>) {
        state.clear();
    }
}

type Bytes = Vec<u8>;

#[processor(output_result, state = Vec<u8>)]
fn forget(state: &mut Bytes) {
    state.clear();
}

fn main() {
    let _: fn(&mut <Collect as Processor>::State) -> &mut Vec<u8> = |s| s;
    let _: fn(&mut <Forget as Processor>::State) -> &mut Vec<u8> = |s| s;
}
