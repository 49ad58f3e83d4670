//! An impl block's `fn id(&self) -> &str` is the processor's id, per value: two values of one
//! type with their own ids keep their own state in one list.

use processors::prelude::*;

/// Counts the chunks it sees, under the id it is given.
struct Counter {
    id: String,
}

#[processor]
impl Counter {
    fn id(&self) -> &str {
        &self.id
    }

    fn process_output_stream(&self, state: &mut usize) {
        *state += 1;
    }
}

fn main() {
    let counter = Counter { id: "first".to_owned() };
    assert_eq!(Processor::id(&counter), "first");
    assert_eq!(<Counter as Processor>::STATIC_ID, None);
    let _agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        output: [counter, Counter { id: "second".to_owned() }],
    };
}
