use processors::prelude::*;

#[processor(input, output_step)]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
