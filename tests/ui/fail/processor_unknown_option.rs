use processors::prelude::*;

#[processor(input, idd = "check")]
fn check(messages: Vec<Message>) -> Vec<Message> {
    messages
}

fn main() {}
