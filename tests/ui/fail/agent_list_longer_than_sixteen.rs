use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [
            Workflow::new("a"), Workflow::new("b"), Workflow::new("c"), Workflow::new("d"),
            Workflow::new("e"), Workflow::new("f"), Workflow::new("g"), Workflow::new("h"),
            Workflow::new("i"), Workflow::new("j"), Workflow::new("k"), Workflow::new("l"),
            Workflow::new("m"), Workflow::new("n"), Workflow::new("o"), Workflow::new("p"),
            Workflow::new("q"),
        ],
    };
}
