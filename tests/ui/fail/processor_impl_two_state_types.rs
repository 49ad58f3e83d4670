use processors::prelude::*;

struct Counter;

#[processor]
impl Counter {
    fn process_output_stream(&self, state: &mut usize) -> StreamAction {
        *state += 1;
        StreamAction::Pass
    }

    fn process_output_result(&self, state: &mut u64) {
        let _ = state;
    }
}

fn main() {}
