use processors::prelude::*;

struct Limit;

#[processor]
impl Limit {
    fn process_output_stream(&self, #[config] max: usize) {
        let _ = max;
    }
}

fn main() {}
