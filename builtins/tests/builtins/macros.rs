//! The macros work in a crate that depends on the runtime and the macros directly, not on the
//! `processors` facade, as the built-in processors do: `crate = processors_runtime` points the
//! generated code at the runtime.

use processors_macros::{agent, processor};
use processors_runtime::prelude::*;

/// Upper-cases streamed text.
#[processor(output_stream, crate = processors_runtime)]
fn shout(chunk: &Chunk) -> StreamAction {
    match chunk.text_delta() {
        Some(t) => chunk.clone().map_text(|_| t.to_uppercase()).into(),
        None => StreamAction::Pass,
    }
}

/// Counts the input messages and rejects empty answers, asking for a retry.
struct Guard;

#[processor(crate = processors_runtime)]
impl Guard {
    fn process_input(&self, messages: Vec<Message>, state: &mut usize) {
        *state += messages.len();
    }

    async fn process_output_step(&self, text: &str, abort: Abort) -> Result<(), ProcessorError> {
        match text.is_empty() {
            true => Err(abort.reason("say something").retry(true).into()),
            false => Ok(()),
        }
    }
}

#[test]
fn processors_and_agents_declared_against_the_runtime_run() {
    assert_eq!(Shout::ID, "shout");
    assert_eq!(Guard::ID, "guard");
    let agent = agent! {
        crate: processors_runtime,
        model: ScriptedModel::new([Turn::text(""), Turn::text("hello")]),
        input: [Guard],
        output: [Shout, Guard],
        max_processor_retries: 1,
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "HELLO");
}
