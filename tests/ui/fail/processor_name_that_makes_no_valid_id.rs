use processors::prelude::*;

#[processor(input)]
fn _check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
