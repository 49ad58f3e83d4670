//! StructuredOutput: answers that fit the type, retries with the schema as feedback, a
//! structuring call, a structuring call that fails, tool steps left alone.

use crate::common;
use crate::judges;

use common::*;
use futures::executor::block_on;
use judges::*;
use processors_builtins::detector::{Judge, JudgeLedger, OnJudgeError, StructuredOutput};
use processors_runtime::prelude::*;
use serde_json::json;

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema, Debug, PartialEq)]
struct Ticket {
    title: String,
    priority: u8,
}

fn ticket() -> Ticket {
    Ticket {
        title: "Printer on fire".into(),
        priority: 1,
    }
}

const JSON: &str = r#"{"title": "Printer on fire", "priority": 1}"#;

#[test]
fn an_answer_that_fits_is_recorded_typed_and_its_text_kept() {
    let answer = format!("Here it is:\n```json\n{JSON}\n```");
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text(answer.clone())]))
        .output(StructuredOutput::<Ticket>::retry())
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
    assert_eq!(result.text, answer);
}

#[test]
fn retry_sends_the_schema_and_the_error_as_feedback_and_takes_the_next_answer() {
    let model = ScriptedModel::new([
        Turn::text(r#"{"title": "Printer on fire"}"#),
        Turn::text(JSON),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .output(StructuredOutput::<Ticket>::retry())
        .max_processor_retries(2)
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert_eq!(model.calls(), 2);
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
    assert_eq!(result.text, JSON);
    let feedback: String = model.requests()[1]
        .prompt
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .collect();
    assert!(feedback.contains("[Processor Feedback]"), "{feedback}");
    assert!(feedback.contains("\"priority\""), "{feedback}");
    assert!(feedback.contains("missing field `priority`"), "{feedback}");
}

#[test]
fn retry_without_retries_allowed_ends_in_a_trip_wire() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("no JSON at all")]))
        .output(StructuredOutput::<Ticket>::retry())
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    let tw = result.tripwire.clone().expect("rejected");
    assert_eq!(tw.processor_id, "structured-output");
    assert!(tw.reason.contains("it holds no JSON"), "{}", tw.reason);
    assert!(StructuredOutput::<Ticket>::value(&result).is_none());
}

#[test]
fn a_structuring_call_converts_the_answer_and_its_cost_is_recorded() {
    let structurer = answers([format!("```\n{JSON}\n```")]);
    let ledger = JudgeLedger::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text(
            "Title: Printer on fire. Priority one.",
        )]))
        .output(StructuredOutput::<Ticket>::structuring(Judge::new(
            structurer.clone(),
        )))
        .build()
        .unwrap();
    let options =
        GenerateOptions::new().request_context(RequestContext::new().with(ledger.clone()));
    let result = block_on(agent.generate_with("file it", options)).unwrap();
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result.text).unwrap(),
        json!({ "title": "Printer on fire", "priority": 1 })
    );
    let request = &structurer.requests()[0];
    assert!(request.prompt[0].text().contains("\"priority\""));
    assert_eq!(content(request), "Title: Printer on fire. Priority one.");
    assert_eq!(ledger.records()[0].at, "output-step");
    assert_eq!(ledger.usage().total_tokens, 110);
}

#[test]
fn a_failed_structuring_warns_by_default_and_blocks_when_asked() {
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("prose only")]))
        .output(StructuredOutput::<Ticket>::structuring(Judge::new(
            answers(["still prose"]),
        )))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert_eq!(result.text, "prose only");
    assert!(StructuredOutput::<Ticket>::value(&result).is_none());
    let v = violations.all();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, ViolationKind::Warn);
    assert!(
        v[0].reason.contains("could not be structured"),
        "{}",
        v[0].reason
    );

    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("prose only")]))
        .output(StructuredOutput::<Ticket>::structuring(
            Judge::new(answers(["{\"title\": 3}"])).on_error(OnJudgeError::Block),
        ))
        .build()
        .unwrap();
    let tw = block_on(agent.generate("file it"))
        .unwrap()
        .tripwire
        .expect("blocked");
    assert!(tw.reason.contains("does not fit"), "{}", tw.reason);
}

#[test]
fn steps_that_call_tools_are_not_checked() {
    let lookup = tool(
        "lookup",
        "looks up",
        json!({ "type": "object" }),
        |_| async { Ok(json!({ "found": true })) },
    );
    let model = ScriptedModel::new([
        Turn::text("Let me look.").tool_call("c1", "lookup", json!({})),
        Turn::text(JSON),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(lookup)
        .output(StructuredOutput::<Ticket>::retry())
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert!(result.tripwire.is_none());
    assert_eq!(model.calls(), 2);
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
}

#[test]
fn the_schema_and_instructions_come_from_the_type() {
    let so = StructuredOutput::<Ticket>::retry();
    assert_eq!(so.schema()["properties"]["priority"]["type"], "integer");
    assert!(so.instructions().contains("\"title\""));
}

#[test]
fn it_is_declared_in_agent_macro_with_retries() {
    let model = ScriptedModel::new([Turn::text("nope"), Turn::text(JSON)]);
    let agent = processors_macros::agent! {
        crate: processors_runtime,
        model: model.clone(),
        output: [StructuredOutput::<Ticket>::retry()],
        max_processor_retries: 1,
    };
    let result = block_on(agent.generate("file it")).unwrap();
    assert_eq!(model.calls(), 2);
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
}

/// The structuring call is given the run's work, each piece marked: reasoning, the tools
/// called and what they returned, and the answer; not the answer's text alone.
#[test]
fn bi_52_the_structuring_call_sees_reasoning_tool_calls_and_results() {
    let lookup = tool(
        "lookup",
        "Finds a ticket's priority.",
        json!({ "type": "object" }),
        |_| async { Ok(json!({ "priority": 1 })) },
    );
    let structurer = answers([JSON]);
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::empty().tool_call("c1", "lookup", json!({ "title": "Printer on fire" })),
            Turn::text("Filed: Printer on fire.").reasoning("The lookup says priority 1."),
        ]))
        .tool(lookup)
        .output(StructuredOutput::<Ticket>::structuring(Judge::new(
            structurer.clone(),
        )))
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        ticket()
    );
    let work = content(&structurer.requests()[0]);
    for piece in [
        r#"[tool call] lookup({"title":"Printer on fire"})"#,
        r#"[tool result] lookup: {"priority":1}"#,
        "[reasoning] The lookup says priority 1.",
        "[answer] Filed: Printer on fire.",
    ] {
        assert!(work.contains(piece), "{piece:?} not in {work:?}");
    }
}

/// Under `structuring`, an answer that cannot be structured gets the fallback value: its
/// text, and its structured value; the run goes on.
#[test]
fn bi_53_a_fallback_value_replaces_an_answer_that_cannot_be_structured() {
    let fallback = Ticket {
        title: "unknown".into(),
        priority: 3,
    };
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("prose only")]))
        .output(
            StructuredOutput::<Ticket>::structuring(Judge::new(answers(["still prose"])))
                .fallback(&fallback),
        )
        .build()
        .unwrap();
    let result = block_on(agent.generate("file it")).unwrap();
    assert!(result.tripwire.is_none());
    assert_eq!(
        StructuredOutput::<Ticket>::value(&result).unwrap().unwrap(),
        fallback
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&result.text).unwrap(),
        json!({ "title": "unknown", "priority": 3 })
    );
}

/// `structuring_instructions` are what the structuring call is told to do; the schema is
/// still in its prompt.
#[test]
fn bi_54_custom_structuring_instructions_reach_the_structuring_call() {
    let structurer = answers([JSON]);
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("Printer on fire, urgent.")]))
        .output(
            StructuredOutput::<Ticket>::structuring(Judge::new(structurer.clone()))
                .structuring_instructions("Urgent means priority 1."),
        )
        .build()
        .unwrap();
    block_on(agent.generate("file it")).unwrap();
    let system = structurer.requests()[0].prompt[0].text();
    assert!(system.starts_with("Urgent means priority 1."), "{system}");
    assert!(system.contains("\"priority\""), "{system}");
    assert!(!system.contains("invent nothing"), "{system}");
}
