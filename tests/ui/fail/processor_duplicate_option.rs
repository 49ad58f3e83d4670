use processors::prelude::*;

#[processor(input, id = "first", id = "second")]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
