use processors::prelude::*;

struct Shout;

#[processor]
impl Shout {
    fn shout(&self, text: &str) -> String {
        text.to_uppercase()
    }
}

fn main() {}
