use processors::prelude::*;

#[processor(input, id = "My Checker")]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
