use processors::prelude::*;

mod limits {
    pub const STEPS: u32 = 0;
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        max_steps: limits::STEPS,
    };
}
