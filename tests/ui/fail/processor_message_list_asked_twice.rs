use processors::prelude::*;

#[processor(output_step)]
fn check(list: &mut MessageList, again: &MessageList) {
    let _ = (list, again);
}

fn main() {}
