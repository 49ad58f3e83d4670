//! In a generic function the processors' types are the caller's: their ids are checked when
//! the function is instantiated with them.
use processors::prelude::*;
include!("../common.rs");

fn with<A: OutputProcessor, B: OutputProcessor>(a: A, b: B) -> Agent<(), (A, B), ()> {
    agent! {
        model: ScriptedModel::new([]),
        output: [a, b],
    }
}

fn main() {
    let _fine = with(Shout, shadow(Shout));
    let _agent = with(Shout, Shout);
}

