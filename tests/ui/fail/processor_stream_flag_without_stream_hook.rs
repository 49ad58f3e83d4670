use processors::prelude::*;

#[processor(input, stream_history)]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
