use processors::prelude::*;

const STEPS: usize = 4;

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        max_steps: STEPS,
    };
}
