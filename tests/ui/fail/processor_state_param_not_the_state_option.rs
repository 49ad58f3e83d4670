use processors::prelude::*;

#[processor(output_result, state = Vec<String>)]
fn report(state: &mut Vec<u8>) {
    state.clear();
}

fn main() {}
