//! The macros work in a crate that depends on the runtime and the macros directly, not on the
//! `processors` facade, as the built-in processors do: `crate = processors_runtime` points the
//! generated code at the runtime, for `#[processor]`, `agent!` and `#[tool]` alike.

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

/// Doubles a number.
#[processors_macros::tool(crate = processors_runtime)]
async fn double(
    /// The number.
    n: i64,
) -> i64 {
    n * 2
}

/// A processor whose `#[config]` parameter is its option in files.
#[processor(input, options, crate = processors_runtime)]
fn tagged(messages: Vec<Message>, #[config] tag: &str) -> Vec<Message> {
    messages
        .into_iter()
        .map(|mut m| {
            m.set_text(format!("{tag} {}", m.text()));
            m
        })
        .collect()
}

#[test]
fn tool_and_file_options_work_with_the_runtime_crate() {
    let run = futures::executor::block_on(processors_runtime::testing::run_tool(
        &DoubleTool,
        serde_json::json!({ "n": 21 }),
    ));
    assert_eq!(run.result.unwrap(), serde_json::json!(42));
    assert_eq!(
        DoubleTool.parameters()["required"],
        serde_json::json!(["n"])
    );
    let tagged: Tagged = serde_json::from_value(serde_json::json!({ "tag": "[x]" })).unwrap();
    assert_eq!(tagged.tag, "[x]");
    let unknown = serde_json::from_value::<Tagged>(serde_json::json!({ "tags": "[x]" }));
    assert!(
        unknown
            .err()
            .unwrap()
            .to_string()
            .starts_with("unknown field `tags`")
    );
}
