//! `ToolSearch` on an agent: meta-tools first, loaded tools from the next step to the end of
//! the request.

use crate::support;

use processors_builtins::tool_search::ToolSearch;
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use support::*;

fn catalog() -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = (0..30)
        .map(|i| {
            tool(
                format!("filler_{i}"),
                format!("Filler tool number {i}."),
                json!({ "type": "object" }),
                |_| async { Ok(json!(null)) },
            )
        })
        .collect();
    tools.push(tool(
        "get_weather",
        "Current weather for a city.",
        json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
        |args| async move { Ok(json!({ "city": args["city"], "sky": "sunny" })) },
    ));
    tools
}

fn always_on() -> Arc<dyn Tool> {
    tool(
        "clock",
        "The time.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("12:00")) },
    )
}

/// Searches, loads, calls the weather, then answers.
fn researcher() -> ScriptedModel {
    ScriptedModel::new([
        Turn::empty().tool_call("c1", "search_tools", json!({ "query": "weather" })),
        Turn::empty().tool_call("c2", "load_tool", json!({ "name": "get_weather" })),
        Turn::empty().tool_call("c3", "get_weather", json!({ "city": "Oslo" })),
        Turn::text("Sunny in Oslo."),
    ])
}

fn offered(model: &ScriptedModel) -> Vec<Vec<String>> {
    model
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect()
}

#[test]
fn the_model_searches_loads_and_calls_a_tool() {
    for (path, agent, model) in agents!(
        model: researcher(),
        tools: [always_on()],
        input: [ToolSearch::new(catalog()).unwrap()],
    ) {
        let result = generate(&*agent, "weather in Oslo?");
        assert_eq!(result.text, "Sunny in Oslo.", "{path}");
        let meta = ["clock", "search_tools", "load_tool"];
        let with_weather = ["clock", "search_tools", "load_tool", "get_weather"];
        assert_eq!(
            offered(&model),
            [&meta[..], &meta[..], &with_weather[..], &with_weather[..]],
            "{path}: only the loaded tool's schema joins, from the step after loading"
        );
        let search = &result.tool_results[0].result;
        assert_eq!(search["tools"][0]["name"], "get_weather");
        assert_eq!(result.tool_results[1].result["loaded"], "get_weather");
        assert_eq!(result.tool_results[2].result["sky"], "sunny");
        let schema = &model.requests()[2].tools[3].parameters;
        assert_eq!(schema["properties"]["city"]["type"], "string");
    }
}

#[test]
fn loading_an_unknown_tool_is_an_error_the_model_sees() {
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([
            Turn::empty().tool_call("c1", "load_tool", json!({ "name": "teleport" })),
            Turn::text("I cannot."),
        ]),
        input: [ToolSearch::new(catalog()).unwrap()],
    ) {
        let result = generate(&*agent, "teleport me");
        let r = &result.tool_results[0];
        assert!(r.is_error, "{path}");
        assert!(
            r.result
                .as_str()
                .unwrap()
                .contains("no tool named `teleport`")
        );
        assert_eq!(offered(&model)[1], ["search_tools", "load_tool"]);
    }
}

#[test]
fn a_new_request_starts_with_nothing_loaded() {
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", "load_tool", json!({ "name": "get_weather" })),
        Turn::text("loaded"),
        Turn::text("again"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(ToolSearch::new(catalog()).unwrap())
        .build()
        .unwrap();
    generate(&agent, "load it");
    generate(&agent, "and now?");
    let offered = offered(&model);
    assert_eq!(offered[1], ["search_tools", "load_tool", "get_weather"]);
    assert_eq!(offered[2], ["search_tools", "load_tool"]);
}

#[test]
fn active_tools_chosen_before_it_are_kept() {
    let model = researcher();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(always_on())
        .tool(tool("hidden", "Hidden.", json!({}), |_| async {
            Ok(json!(null))
        }))
        .input(input_step_fn(
            "only-clock",
            |_: &mut InputStepArgs<'_, ()>| StepOverrides::new().active_tools(["clock"]),
        ))
        .input(ToolSearch::new(catalog()).unwrap())
        .build()
        .unwrap();
    let result = generate(&agent, "weather?");
    assert_eq!(result.text, "Sunny in Oslo.");
    let offered = offered(&model);
    assert_eq!(offered[0], ["clock", "search_tools", "load_tool"]);
    assert_eq!(
        offered[3],
        ["clock", "search_tools", "load_tool", "get_weather"]
    );
}
