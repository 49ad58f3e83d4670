use processors::prelude::*;

fn main() {
    let _agent = agent! {
        model: "gpt-4o",
    };
}
