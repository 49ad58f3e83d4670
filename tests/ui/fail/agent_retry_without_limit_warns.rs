//! A processor that asks for a retry as written (`.retry(true)`), in an agent with no
//! `max_processor_retries`, gets a warning at its entry: that retry would end the run. The
//! warning is the `deprecated` lint's, denied here to pin its text.
#![deny(deprecated)]
use processors::prelude::*;
include!("../common.rs");

/// Rejects long answers, without a retry: no warning.
#[processor(output_step)]
fn short(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    if text.len() > 100 {
        return Err(abort.reason("too long").into());
    }
    Ok(())
}

/// Refuses shell calls, asking the model to answer again: warned of too.
#[processor(tool_call)]
fn no_shell(call: &ToolCall, abort: Abort) -> Result<ToolCallAction, ProcessorError> {
    match call.tool_name.as_str() {
        "shell" => Err(abort.reason("no shell").retry(true).into()),
        _ => Ok(ToolCallAction::Continue),
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [Short, NotEmpty, NoShell],
    };
    let _limited = agent! {
        model: ScriptedModel::new([]),
        output: [Short, NotEmpty, NoShell],
        max_processor_retries: 2,
    };
}
