use processors::prelude::*;
include!("../common.rs");

fn main() {
    let agent = agent! {
        model: ScriptedModel::new([]),
        ouput: [Shout],
    };
    let _ = agent.name();
    println!("after");
}
