use processors::builtins::UnicodeNormalizer;
use processors::builtins::order::Ordered;
use processors::prelude::*;

struct Mine;

#[processor]
impl Mine {
    fn process_input(&self, messages: Vec<Message>) -> Vec<Message> {
        messages
    }
}

fn main() {
    let _ = Ordered::input().with(UnicodeNormalizer::new()).with(Mine);
}
