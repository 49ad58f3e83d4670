use processors::prelude::*;

fn main() {
    let agent = agent! { model: ScriptedModel::new([Turn::text("hello")]) };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "hello");
}
