use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        instructions: "Be brief.",
        output: [Shout],
    };
}
