use processors::prelude::*;
include!("../common.rs");

fn main() {
    let _agent = agent! {
        crate: "processors",
        model: ScriptedModel::new([]),
    };
}
