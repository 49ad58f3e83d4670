//! Classifier and ModelSelection: the class in the request context, the model routed by it
//! for every step, unclassified requests, the threshold, a failing judge.

use crate::common;
use crate::judges;

use common::*;
use futures::executor::block_on;
use judges::*;
use processors_builtins::detector::{
    Classification, Classifier, Judge, JudgeLedger, ModelSelection, OnJudgeError,
};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn scores(code: f64, chat: f64) -> impl Fn(&str) -> Value + Send + Sync + 'static {
    move |_| json!({ "categories": { "code": code, "chat": chat } })
}

fn classifier(judge: impl LanguageModel) -> Classifier {
    Classifier::builder(Judge::new(judge))
        .class("code", "writing or fixing code")
        .class("chat", "small talk")
        .build()
        .unwrap()
}

/// Records the classification the processors after the classifier see.
fn seen() -> (Arc<Mutex<Option<Classification>>>, impl InputProcessor) {
    let slot = Arc::new(Mutex::new(None));
    let out = slot.clone();
    let p = input_fn("seen", move |a: &mut InputArgs<'_, ()>| {
        *out.lock().unwrap() = a.request_context.get::<Classification>().cloned();
    });
    (slot, p)
}

#[test]
fn the_class_is_in_the_request_context_and_routes_every_step_of_the_run() {
    let default = ScriptedModel::new([]).named("default");
    let coder = ScriptedModel::new([
        Turn::empty().tool_call("c1", "run", json!({})),
        Turn::text("done"),
    ])
    .named("coder");
    let run = tool("run", "runs", json!({ "type": "object" }), |_| async {
        Ok(json!("ok"))
    });
    let (slot, probe) = seen();
    let judge = judge(scores(0.8, 0.1));
    let agent = Agent::builder()
        .model(default.clone())
        .tool(run)
        .input(classifier(judge.clone()))
        .input(probe)
        .input(ModelSelection::new().route("code", coder.clone()))
        .build()
        .unwrap();
    let result = block_on(agent.generate("fix my loop")).unwrap();
    assert_eq!(result.text, "done");
    assert_eq!((default.calls(), coder.calls()), (0, 2));
    assert_eq!(judge.calls(), 1, "classified once per run");
    let c = slot.lock().unwrap().clone().unwrap();
    assert_eq!(c.class.as_deref(), Some("code"));
    assert_eq!(c.scores["chat"], 0.1);
    assert!(
        judge.requests()[0].prompt[0]
            .text()
            .contains("- code: writing or fixing code\n")
    );
}

#[test]
fn a_score_equal_to_the_threshold_classifies_and_below_leaves_it_unclassified() {
    for (score, routed) in [(0.5, true), (0.49, false)] {
        let default = ScriptedModel::new([Turn::text("default")]);
        let coder = ScriptedModel::new([Turn::text("coder")]);
        let agent = Agent::builder()
            .model(default)
            .input(classifier(judge(scores(score, 0.0))))
            .input(ModelSelection::new().route("code", coder))
            .build()
            .unwrap();
        let text = block_on(agent.generate("hm")).unwrap().text;
        assert_eq!(text == "coder", routed, "{score}");
    }
}

#[test]
fn the_highest_class_wins_and_otherwise_takes_unrouted_classes() {
    let chat = ScriptedModel::new([Turn::text("chat")]);
    let fallback = ScriptedModel::new([Turn::text("fallback")]);
    let agent = Agent::builder()
        .model(ScriptedModel::new([]))
        .input(classifier(judge(scores(0.6, 0.9))))
        .input(
            ModelSelection::new()
                .route("code", ScriptedModel::new([]))
                .otherwise(fallback.clone()),
        )
        .build()
        .unwrap();
    assert_eq!(
        block_on(agent.generate("hi there")).unwrap().text,
        "fallback"
    );
    let agent = Agent::builder()
        .model(ScriptedModel::new([]))
        .input(classifier(judge(scores(0.6, 0.9))))
        .input(ModelSelection::new().route("chat", chat))
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("hi there")).unwrap().text, "chat");
}

#[test]
fn a_failing_judge_leaves_the_request_unclassified_with_a_warning() {
    let violations = Violations::new();
    let (slot, probe) = seen();
    let default = ScriptedModel::new([Turn::text("default")]);
    let ledger = JudgeLedger::new();
    let agent = Agent::builder()
        .model(default.clone())
        .input(classifier(answers(["no idea"])))
        .input(probe)
        .input(ModelSelection::new().route("code", ScriptedModel::new([])))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let options =
        GenerateOptions::new().request_context(RequestContext::new().with(ledger.clone()));
    let result = block_on(agent.generate_with("fix it", options)).unwrap();
    assert_eq!(result.text, "default");
    assert_eq!(slot.lock().unwrap().clone().unwrap().class, None);
    assert_eq!(violations.all()[0].kind, ViolationKind::Warn);
    assert_eq!(ledger.records()[0].detector, "classifier");

    let agent = Agent::builder()
        .model(ScriptedModel::new([]))
        .input(
            Classifier::builder(Judge::new(answers(["no idea"])).on_error(OnJudgeError::Block))
                .class("code", "code")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    assert!(
        block_on(agent.generate("fix it"))
            .unwrap()
            .tripwire
            .is_some()
    );
}

#[test]
fn without_a_classification_model_selection_changes_nothing() {
    let default = ScriptedModel::new([Turn::text("default")]);
    let agent = Agent::builder()
        .model(default.clone())
        .input(ModelSelection::new().route("code", ScriptedModel::new([])))
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("x")).unwrap().text, "default");
}
