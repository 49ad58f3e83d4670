//! `EnsureFinalResponse` on an agent with a step limit: the last step answers.

use crate::support;

use processors_builtins::ensure_final_response::EnsureFinalResponse;
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use support::*;

/// Calls a tool whenever it may, and answers when it may not.
fn eager() -> ScriptedModel {
    ScriptedModel::responder(|request, i| match request.tool_choice {
        ToolChoice::None if !request.tools.is_empty() => Turn::text("final answer"),
        _ if request.tools.is_empty() => Turn::text("answer without tools"),
        _ => Turn::empty().tool_call(format!("c{i}"), "search", json!({ "page": i })),
    })
}

fn search() -> Arc<dyn Tool> {
    tool(
        "search",
        "Searches.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("results")) },
    )
}

#[test]
fn without_it_a_run_ends_on_a_tool_call() {
    let agent = Agent::builder()
        .model(eager())
        .tool(search())
        .max_steps(3)
        .build()
        .unwrap();
    let result = generate(&agent, "go");
    assert_eq!(result.finish_reason, FinishReason::ToolCalls);
    assert_eq!(result.text, "");
}

#[test]
fn the_last_allowed_step_forbids_tools_and_asks_for_the_answer() {
    for (path, agent, model) in agents!(
        model: eager(),
        tools: [search()],
        max_steps: 3,
        input: [EnsureFinalResponse::new(3).unwrap()],
    ) {
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "final answer", "{path}");
        assert_eq!(result.finish_reason, FinishReason::Stop);
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        let choices: Vec<&ToolChoice> = requests.iter().map(|r| &r.tool_choice).collect();
        assert_eq!(
            choices,
            [&ToolChoice::Auto, &ToolChoice::Auto, &ToolChoice::None]
        );
        let last_system = texts(&requests[2].prompt, Role::System);
        assert_eq!(last_system.len(), 1);
        assert!(
            last_system[0].contains("final step (step 3 of 3)"),
            "{path}"
        );
        assert!(
            texts(&requests[1].prompt, Role::System).is_empty(),
            "{path}: earlier steps have no such message"
        );
        assert_eq!(requests[2].tools.len(), 1, "tools stay offered by default");
    }
}

#[test]
fn hidden_tools_are_not_offered_on_the_last_step() {
    let last = EnsureFinalResponse::builder(2)
        .hide_tools(true)
        .message("Answer now.")
        .build()
        .unwrap();
    for (path, agent, model) in agents!(
        model: eager(),
        tools: [search()],
        max_steps: 2,
        input: [last.clone()],
    ) {
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "answer without tools", "{path}");
        let requests = model.requests();
        assert!(requests[1].tools.is_empty());
        assert_eq!(texts(&requests[1].prompt, Role::System), ["Answer now."]);
    }
}

#[test]
fn rejected_attempts_do_not_count_as_steps() {
    // The first answer of step 0 is rejected: the run still has three steps, and the third,
    // not the second, is the last.
    let reject_first = || {
        output_step_fn("reject-first", |a: &mut OutputStepArgs<'_, u32>| {
            *a.state += 1;
            match *a.state {
                1 => Err(a.abort().reason("try again").retry(true)),
                _ => Ok(()),
            }
        })
    };
    for (path, agent, model) in agents!(
        model: eager(),
        tools: [search()],
        max_steps: 3,
        max_processor_retries: 1,
        input: [EnsureFinalResponse::new(3).unwrap()],
        output: [reject_first()],
    ) {
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "final answer", "{path}");
        let choices: Vec<ToolChoice> = model
            .requests()
            .iter()
            .map(|r| r.tool_choice.clone())
            .collect();
        assert_eq!(
            choices,
            [
                ToolChoice::Auto,
                ToolChoice::Auto,
                ToolChoice::Auto,
                ToolChoice::None
            ],
            "{path}"
        );
    }
}

#[test]
fn a_run_without_tools_is_left_alone() {
    for (path, agent, model) in agents!(
        model: eager(),
        max_steps: 1,
        input: [EnsureFinalResponse::new(1).unwrap()],
    ) {
        assert_eq!(
            generate(&*agent, "hi").text,
            "answer without tools",
            "{path}"
        );
        assert!(texts(&model.requests()[0].prompt, Role::System).is_empty());
        assert_eq!(model.requests()[0].tool_choice, ToolChoice::Auto);
    }
}
