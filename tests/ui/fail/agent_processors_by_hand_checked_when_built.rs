//! What only the types know of processors implemented by hand (their hooks, ids) is checked
//! when the code is built, not by `cargo check`.
use processors::prelude::*;

/// Processors implemented by hand, under one fixed id.
struct Tally;
struct Count;

impl Processor for Tally {
    type State = ();
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    const STATIC_ID: Option<&'static str> = Some("tally");
    fn id(&self) -> &str {
        "tally"
    }
}
impl OutputProcessor for Tally {}

impl Processor for Count {
    type State = ();
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    const STATIC_ID: Option<&'static str> = Some("tally");
    fn id(&self) -> &str {
        "tally"
    }
}
impl OutputProcessor for Count {}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Tally, Count],
    };
}
