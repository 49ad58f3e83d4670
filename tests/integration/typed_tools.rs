//! `#[tool]`: typed tools (docs/semantics.md, "Typed tools", 107-112). The schema the model is sent,
//! the arguments read before the call and the errors the model reads when they do not fit,
//! the `ToolContext` asked for by type, and what the function returns.

use futures::StreamExt;
use processors::agent::GenerateOptions;
use processors::prelude::*;
use processors::testing::{run_tool, run_tool_with};
use processors::tool::{IntoTool, ToolContext};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(serde::Deserialize, schemars::JsonSchema, Debug)]
struct Place {
    city: String,
    country: Option<String>,
}

/// The forecast for a place.
#[tool]
async fn forecast(
    /// Where.
    place: Place,
    /// How many days; 1 when left out.
    days: Option<u8>,
) -> Vec<String> {
    let country = place.country.unwrap_or_else(|| "?".into());
    (0..days.unwrap_or(1))
        .map(|d| format!("{}/{country} day {d}: sunny", place.city))
        .collect()
}

/// The calls of `ship` that reached its body (only the test of bad arguments calls it).
static SHIPPED: AtomicUsize = AtomicUsize::new(0);

/// Ships a parcel.
#[tool]
async fn ship(to: Place, days: Option<u8>) -> String {
    SHIPPED.fetch_add(1, Ordering::SeqCst);
    format!("{} in {} days", to.city, days.unwrap_or(1))
}

/// Runs `forecast` once with `args`, returning the tool's result and whether it failed.
async fn call_forecast(args: serde_json::Value) -> (serde_json::Value, bool) {
    call(ForecastTool, args).await
}

/// Runs `tool` once with `args`, returning its result and whether it failed.
async fn call(tool: impl IntoTool, args: serde_json::Value) -> (serde_json::Value, bool) {
    let tool = tool.into_tool();
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", tool.name(), args),
        Turn::text("ok"),
    ]);
    let agent = Agent::builder().model(model).tool(tool).build().unwrap();
    let result = agent.generate("forecast?").await.unwrap();
    let r = &result.tool_results[0];
    (r.result.clone(), r.is_error)
}

#[tokio::test]
async fn b107_the_model_is_sent_the_schema_from_the_parameters_types_and_docs() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(ForecastTool)
        .build()
        .unwrap();
    agent.generate("hi").await.unwrap();
    let spec = &model.requests()[0].tools[0];
    assert_eq!(spec.name, "forecast");
    assert_eq!(spec.description, "The forecast for a place.");
    let p = &spec.parameters;
    assert_eq!(p["type"], "object");
    assert_eq!(p["required"], json!(["place"]));
    assert_eq!(p["additionalProperties"], false);
    assert_eq!(
        p["properties"]["days"]["description"],
        "How many days; 1 when left out."
    );
    assert_eq!(p["properties"]["place"]["description"], "Where.");
    assert_eq!(
        p["properties"]["place"]["properties"]["city"]["type"],
        "string"
    );
    assert_eq!(p["properties"]["place"]["required"], json!(["city"]));
}

#[tokio::test]
async fn b108_the_arguments_are_read_into_the_parameters_before_the_call() {
    let (result, failed) =
        call_forecast(json!({ "place": { "city": "Lyon", "country": "FR" }, "days": 2 })).await;
    assert!(!failed);
    assert_eq!(
        result,
        json!(["Lyon/FR day 0: sunny", "Lyon/FR day 1: sunny"])
    );
    // An `Option` left out is `None`.
    let (result, _) = call_forecast(json!({ "place": { "city": "Oslo" } })).await;
    assert_eq!(result, json!(["Oslo/? day 0: sunny"]));
}

#[tokio::test]
async fn b109_arguments_that_do_not_fit_go_back_to_the_model_naming_the_argument() {
    let cases = [
        (
            json!({ "to": { "city": "Lyon" }, "days": "two" }),
            "argument `days` of `ship`: invalid type: string \"two\", expected u8",
        ),
        (
            json!({ "to": { "city": 7 } }),
            "argument `to.city` of `ship`: invalid type: integer `7`, expected a string",
        ),
        (json!({ "days": 1 }), "`ship` needs the argument `to`"),
        (
            json!({ "to": { "city": "Lyon" }, "dayz": 1 }),
            "`ship` has no argument `dayz`: it takes `to`, `days`",
        ),
        (
            json!(["Lyon"]),
            "the arguments of `ship` must be a JSON object, not an array",
        ),
    ];
    for (args, expected) in cases {
        let (result, failed) = call(ShipTool, args.clone()).await;
        assert!(failed, "{args}");
        assert_eq!(result, json!(expected), "{args}");
    }
    // None of them reached the function; arguments that fit do.
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 0);
    let (result, failed) = call(ShipTool, json!({ "to": { "city": "Lyon" } })).await;
    assert_eq!((result, failed), (json!("Lyon in 1 days"), false));
    assert_eq!(SHIPPED.load(Ordering::SeqCst), 1);
}

/// Says who asks, from the request's context, and writes a progress chunk.
#[tool(name = "who-asks")]
async fn who(cx: ToolContext<'_>) -> Result<String, String> {
    let mut writer = cx.writer;
    writer.write("progress", json!({ "call": cx.tool_call_id }));
    cx.request_context
        .resource_id()
        .map(|r| format!("{r} asks"))
        .ok_or_else(|| "nobody asks".to_owned())
}

#[tokio::test]
async fn b110_b111_a_tool_context_parameter_is_the_calls_context_and_an_err_the_tools_error() {
    let model = || {
        ScriptedModel::new([
            Turn::empty().tool_call("c9", "who-asks", json!({})),
            Turn::text("ok"),
        ])
    };
    let agent = agent! { model: model(), tools: [WhoTool] };
    let options =
        GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "ana"));
    let result = agent.generate_with("who?", options).await.unwrap();
    assert_eq!(result.tool_results[0].result, json!("ana asks"));
    assert!(!result.tool_results[0].is_error);
    assert_eq!(WhoTool.parameters()["properties"], json!({}));

    // Its `Err` is the tool's error, shown to the model.
    let agent = agent! { model: model(), tools: [WhoTool] };
    let result = agent.generate("who?").await.unwrap();
    assert!(result.tool_results[0].is_error);
    assert_eq!(result.tool_results[0].result, json!("nobody asks"));
}

#[tokio::test]
async fn b110_a_tool_context_writer_streams_its_data_chunks() {
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c9", "who-asks", json!(null)),
        Turn::text("ok"),
    ]);
    let agent = agent! { model: model, tools: [WhoTool] };
    let chunks: Vec<Chunk> = agent.stream("who?").collect().await;
    let progress = chunks.iter().find_map(|c| match &c.kind {
        ChunkKind::Data { name, data, .. } if name == "progress" => Some(data.clone()),
        _ => None,
    });
    assert_eq!(progress, Some(json!({ "call": "c9" })));

    // The test kit's call gives the chunks too.
    let cx = RequestContext::new().with_thread("t", "ana");
    let run = run_tool_with(&WhoTool, json!({}), &cx, &MessageList::new()).await;
    assert_eq!(run.result.unwrap(), json!("ana asks"));
    assert!(matches!(&run.data[..], [ChunkKind::Data { name, .. }] if name == "progress"));
}

/// Takes nothing and returns nothing.
#[tool(description = "Rings the bell")]
async fn ring() {}

#[tokio::test]
async fn b111_a_tool_of_no_arguments_and_no_result_answers_null() {
    assert_eq!(RingTool.description(), "Rings the bell");
    assert_eq!(RingTool::NAME, "ring");
    let run = run_tool(&RingTool, json!({})).await;
    assert_eq!(run.result.unwrap(), json!(null));
    // Through `IntoTool`, as the builder takes it.
    let run = run_tool(&*RingTool.into_tool(), json!({ "loud": true })).await;
    assert_eq!(
        run.result.unwrap_err().to_string(),
        "`ring` has no argument `loud`: it takes none"
    );
}

#[tokio::test]
async fn the_builder_takes_a_tool_type_a_shared_tool_or_an_erased_one() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let erased: Arc<dyn Tool> = Arc::new(RingTool);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(ForecastTool)
        .tool(Arc::new(WhoTool))
        .tool(erased)
        .build()
        .unwrap();
    agent.generate("hi").await.unwrap();
    let names: Vec<String> = (model.requests()[0].tools.iter())
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["forecast", "who-asks", "ring"]);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    /// The order to refund.
    order_id: String,
    /// In cents.
    amount: u64,
}

/// Refunds part or all of an order.
#[tool(name = "refund_order")]
async fn refund(#[args] refund: Refund) -> serde_json::Value {
    json!({ "refunded": refund.amount, "order": refund.order_id })
}

#[tokio::test]
async fn b112_an_args_type_takes_the_whole_object_and_its_errors_name_the_field() {
    let schema = RefundTool.parameters();
    let mut required: Vec<&str> = (schema["required"].as_array().unwrap().iter())
        .filter_map(|v| v.as_str())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["amount", "order_id"]);
    assert_eq!(schema["properties"]["amount"]["description"], "In cents.");
    let (result, failed) = call(RefundTool, json!({ "order_id": "A7", "amount": 250 })).await;
    assert_eq!(
        (result, failed),
        (json!({ "refunded": 250, "order": "A7" }), false)
    );
    let (result, failed) = call(RefundTool, json!({ "order_id": "A7", "amount": -1 })).await;
    assert!(failed);
    let error = result.as_str().unwrap();
    assert!(
        error.starts_with("argument `amount` of `refund_order`: invalid value: integer `-1`"),
        "{error}"
    );
    let (result, _) = call(RefundTool, json!({ "amount": 1 })).await;
    assert_eq!(
        result,
        json!("the arguments of `refund_order` do not fit: missing field `order_id`")
    );
}

/// What the conversation says so far, as the tool reads it.
#[tool]
async fn recall(cx: ToolContext<'_>) -> Vec<String> {
    (cx.message_list.all())
        .map(|m| format!("{:?}: {}", m.role, m.text()))
        .collect()
}

#[tokio::test]
async fn b115_a_tool_reads_the_runs_messages_not_a_calls_rewritten_prompt() {
    let store = InMemoryStore::new();
    let earlier = Agent::builder()
        .model(ScriptedModel::new([Turn::text("Hello Ann.")]))
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let ann =
        || GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "ann"));
    earlier.generate_with("I am Ann.", ann()).await.unwrap();

    // Each model call sees only the last message; the tool still reads the whole run.
    let last_only = llm_request_fn("last-only", |a: &mut LlmRequestArgs<'_, ()>| {
        LlmRequestAction::Prompt(a.request.prompt.last().cloned().into_iter().collect())
    });
    let model = ScriptedModel::new([
        Turn::text("Let me look.").tool_call("c1", RecallTool::NAME, json!({})),
        Turn::text("You are Ann."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store))
        .input(last_only)
        .tool(RecallTool)
        .build()
        .unwrap();
    let result = agent.generate_with("Who am I?", ann()).await.unwrap();
    assert_eq!(
        result.tool_results[0].result,
        json!([
            "User: I am Ann.",
            "Assistant: Hello Ann.",
            "User: Who am I?",
            "Assistant: Let me look."
        ])
    );
    assert_eq!(
        model.requests()[0].prompt.len(),
        1,
        "the model's prompt was cut"
    );
}
