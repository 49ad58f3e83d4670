use processors::prelude::*;

#[processor(input, id)]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
