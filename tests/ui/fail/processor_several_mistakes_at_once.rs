use processors::prelude::*;

struct Guard;

#[processor(id = "Guard!", colour = "blue")]
impl Guard {
    fn process_inptu(&self, messages: Vec<Message>) -> Vec<Message> {
        messages
    }

    fn process_output_step(&mut self, text: &str) {
        let _ = text;
    }
}

fn main() {}
