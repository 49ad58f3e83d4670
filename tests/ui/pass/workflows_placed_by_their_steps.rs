// A workflow goes where its steps' processors go, known from its type; branches given as
// shared processors are known at run time (the agent checks them when a call starts).
use processors::prelude::*;
use processors::workflow::WorkflowInput;

#[processor(input)]
fn trim(messages: Vec<Message>) -> Vec<Message> {
    messages
}

#[processor(output_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| t.to_uppercase()).into()
}

fn main() {
    let input = Workflow::new("in")
        .then(Trim)
        .branch(|i| matches!(i, WorkflowInput::Messages(m) if m.len() > 3), Trim);
    let output = Workflow::new("out").parallel((Shout, Shout), 1);
    let shared = Workflow::new("shared").parallel([boxed(Shout)], 0);
    let _agent = agent! {
        model: ScriptedModel::new([]),
        input: [input],
        output: [output, shared],
    };
}
