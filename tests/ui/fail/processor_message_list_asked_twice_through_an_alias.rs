use processors::prelude::*;

type List<'a> = &'a mut MessageList;

#[processor(output_step)]
fn check(list: &MessageList, again: List<'_>) {
    let _ = (list, again);
}

fn main() {}
