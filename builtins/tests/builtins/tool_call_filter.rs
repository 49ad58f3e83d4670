//! `ToolCallFilter` on an agent: tool exchanges leave the prompt, never the list or memory.

use crate::support;

use processors_builtins::tool_call_filter::ToolCallFilter;
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use support::*;

fn echo(name: &'static str) -> Arc<dyn Tool> {
    tool(
        name,
        "Echoes.",
        json!({ "type": "object" }),
        move |args| async move { Ok(json!({ "tool": name, "args": args })) },
    )
}

fn calls_in(prompt: &[Message]) -> Vec<String> {
    prompt
        .iter()
        .flat_map(Message::tool_calls)
        .map(|c| c.tool_call_id.clone())
        .collect()
}

fn results_in(prompt: &[Message]) -> Vec<String> {
    prompt
        .iter()
        .flat_map(|m| &m.content.parts)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn earlier_turns_are_filtered_from_the_prompt_and_memory_saved_the_calls() {
    let store = InMemoryStore::new();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([
            Turn::empty().tool_call("c1", "search", json!({ "q": "oslo" })),
            Turn::text("Oslo is in Norway."),
            Turn::text("You asked about Oslo."),
        ]),
        tools: [echo("search")],
        memory: Memory::new(store.clone()),
        input: [ToolCallFilter::all()],
    ) {
        let thread = format!("t-{path}");
        let options = || {
            GenerateOptions::new()
                .request_context(RequestContext::new().with_thread(thread.as_str(), "u"))
        };
        let first = generate_with(&*agent, "where is oslo?", options());
        assert_eq!(first.tool_results.len(), 1);
        let step_1 = &model.requests()[1].prompt;
        assert_eq!(
            calls_in(step_1),
            ["c1"],
            "{path}: the current turn keeps its calls"
        );
        assert_eq!(results_in(step_1), ["c1"]);

        generate_with(&*agent, "what did I ask?", options());
        let second = &model.requests()[2].prompt;
        assert!(
            calls_in(second).is_empty() && results_in(second).is_empty(),
            "{path}"
        );
        assert_eq!(
            texts(second, Role::User),
            ["where is oslo?", "what did I ask?"]
        );
        assert!(texts(second, Role::Assistant).contains(&"Oslo is in Norway.".to_owned()));

        let saved = futures::executor::block_on(store.list_messages(&thread, None)).unwrap();
        assert_eq!(calls_in(&saved), ["c1"], "{path}: memory kept the call");
        assert_eq!(results_in(&saved), ["c1"], "{path}: and its result");
    }
}

#[test]
fn a_long_tool_loop_shows_only_its_latest_steps() {
    let filter = ToolCallFilter::builder()
        .filter_after_tool_steps(1)
        .build()
        .unwrap();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([
            Turn::empty().tool_call("c1", "search", json!({ "page": 1 })),
            Turn::empty().tool_call("c2", "search", json!({ "page": 2 })),
            Turn::empty().tool_call("c3", "search", json!({ "page": 3 })),
            Turn::text("found it"),
        ]),
        tools: [echo("search")],
        input: [filter.clone()],
    ) {
        let result = generate(&*agent, "find it");
        assert_eq!(result.text, "found it");
        let prompts: Vec<Vec<String>> = model
            .requests()
            .iter()
            .map(|r| calls_in(&r.prompt))
            .collect();
        assert_eq!(
            prompts,
            [vec![], vec!["c1"], vec!["c2"], vec!["c3"]],
            "{path}"
        );
        let last = &model.requests()[3].prompt;
        assert_eq!(results_in(last), ["c3"]);
        assert_eq!(result.tool_results.len(), 3, "{path}: every result is kept");
        assert_eq!(calls_in(&result.response_messages), ["c1", "c2", "c3"]);
    }
}

#[test]
fn only_the_named_tools_leave_the_prompt() {
    let filter = ToolCallFilter::builder().tools(["search"]).build().unwrap();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([
            Turn::empty()
                .tool_call("c1", "search", json!({}))
                .tool_call("c2", "clock", json!({})),
            Turn::text("done"),
            Turn::text("again"),
        ]),
        tools: [echo("search"), echo("clock")],
        input: [filter.clone()],
    ) {
        let first = generate(&*agent, "go");
        let again = generate(
            &*agent,
            first
                .response_messages
                .iter()
                .cloned()
                .chain([Message::user("again")])
                .collect::<Vec<_>>(),
        );
        assert_eq!(again.text, "again");
        let prompt = &model.requests()[2].prompt;
        assert_eq!(calls_in(prompt), ["c2"], "{path}");
        assert_eq!(results_in(prompt), ["c2"]);
    }
}

/// With `preserve_model_output`, a filtered exchange leaves its model-facing account, as
/// text of the assistant message that made the call; its raw arguments and result leave.
#[test]
fn bi_57_a_filtered_exchange_keeps_its_model_facing_output() {
    let store = InMemoryStore::new();
    let account = |r: &ToolResult| Some(format!("found {}", r.result["args"]["q"]));
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([
            Turn::text("Let me look.").tool_call("c1", "search", json!({ "q": "oslo" })),
            Turn::text("Oslo is in Norway."),
            Turn::text("You asked about Oslo."),
        ]),
        tools: [echo("search")],
        memory: Memory::new(store.clone()),
        input: [ToolCallFilter::builder().preserve_model_output(account).build().unwrap()],
    ) {
        let thread = format!("t-{path}");
        let options = || {
            GenerateOptions::new()
                .request_context(RequestContext::new().with_thread(thread.as_str(), "u"))
        };
        generate_with(&*agent, "where is oslo?", options());
        generate_with(&*agent, "what did I ask?", options());
        let second = &model.requests()[2].prompt;
        assert!(
            calls_in(second).is_empty() && results_in(second).is_empty(),
            "{path}"
        );
        let texts: Vec<String> = second.iter().map(Message::text).collect();
        assert!(
            texts
                .iter()
                .any(|t| t.contains("Let me look.")
                    && t.contains("`search` returned: found \"oslo\"")),
            "{path}: {texts:?}"
        );
    }
}
