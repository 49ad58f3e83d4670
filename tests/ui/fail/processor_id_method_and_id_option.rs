use processors::prelude::*;

struct Counter {
    id: String,
}

#[processor(id = "counter")]
impl Counter {
    fn id(&self) -> &str {
        &self.id
    }

    fn process_output_stream(&self) {}
}

fn main() {}
