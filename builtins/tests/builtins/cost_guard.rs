//! `CostGuard` on an agent: budgets in tokens and money, per run and shared through a ledger.

use crate::support;

use processors_builtins::cost_guard::{
    Budget, CostGuard, CostLedger, CostScope, Price, PriceTable,
};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::*;

fn counting(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    tool("work", "Works.", json!({ "type": "object" }), move |_| {
        runs.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!("done")) }
    })
}

/// Each call uses 100 input and 50 output tokens, and asks for a tool.
fn busy() -> ScriptedModel {
    ScriptedModel::responder(|_, i| {
        Turn::empty()
            .tool_call(format!("c{i}"), "work", json!({ "n": i }))
            .usage(100, 50)
    })
}

fn tokens(n: u64) -> CostGuard {
    CostGuard::new(Budget::Tokens(n)).unwrap()
}

fn as_user(user: &str) -> GenerateOptions {
    GenerateOptions::new()
        .request_context(RequestContext::new().with_thread(format!("t-{user}"), user))
}

#[test]
fn a_run_past_its_budget_stops_before_the_step_s_tools() {
    let runs = Arc::new(AtomicUsize::new(0));
    for (path, agent, model) in agents!(
        model: busy(),
        tools: [counting(&runs)],
        max_steps: 10,
        input: [tokens(400)],
        output: [tokens(400)],
    ) {
        runs.store(0, Ordering::SeqCst);
        let result = generate(&*agent, "go");
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(tw.processor_id, "cost-guard");
        assert_eq!(
            tw.reason, "the budget is spent (450 of 400 tokens); the run stops here",
            "{path}"
        );
        let meta = tw.metadata.unwrap();
        assert_eq!(
            (meta["scope"].clone(), meta["spent"].clone()),
            (json!("run"), json!(450))
        );
        assert_eq!(model.calls(), 3);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "{path}: the third step's tool never ran"
        );
    }
}

#[test]
fn a_final_answer_past_the_budget_is_delivered_with_a_warning() {
    let log: Violations = Arc::default();
    let runs = Arc::new(AtomicUsize::new(0));
    let guard = CostGuard::builder(Budget::Tokens(400))
        .warn_at_percent(50)
        .build()
        .unwrap();
    for (path, agent, _) in agents!(
        model: ScriptedModel::new([
            Turn::empty().tool_call("c1", "work", json!({})).usage(200, 50),
            Turn::text("the answer").usage(200, 50),
        ]),
        tools: [counting(&runs)],
        on_violation: recorder(&log),
        input: [guard.clone()],
        output: [guard.clone()],
    ) {
        log.lock().unwrap().clear();
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "the answer", "{path}");
        let log = log.lock().unwrap();
        let reasons: Vec<&str> = log.iter().map(|v| v.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "spending reached 50% of the budget (250 of 400 tokens)",
                "the budget is spent (500 of 400 tokens) by the final answer"
            ],
            "{path}"
        );
        assert!(log.iter().all(|v| v.kind == ViolationKind::Warn));
    }
}

#[test]
fn spending_warns_once_at_the_threshold() {
    let log: Violations = Arc::default();
    let guard = CostGuard::builder(Budget::Tokens(1_000))
        .warn_at_percent(25)
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let model = || {
        ScriptedModel::responder(|_, i| match i {
            0..=3 => Turn::empty()
                .tool_call(format!("c{i}"), "work", json!({ "n": i }))
                .usage(100, 50),
            _ => Turn::text("done").usage(100, 50),
        })
    };
    for (path, agent, _) in agents!(
        model: model(),
        tools: [counting(&runs)],
        max_steps: 10,
        on_violation: recorder(&log),
        input: [guard.clone()],
        output: [guard.clone()],
    ) {
        log.lock().unwrap().clear();
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "done", "{path}");
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1, "{path}: once per run");
        assert_eq!(log[0].kind, ViolationKind::Warn);
        assert_eq!(
            log[0].reason,
            "spending reached 25% of the budget (300 of 1000 tokens)"
        );
        assert_eq!(log[0].metadata.as_ref().unwrap()["budget"], 1_000);
    }
}

#[test]
fn a_money_budget_prices_each_model() {
    let prices = PriceTable::new().with("cheap", Price::per_million(1.0, 2.0));
    let guard = CostGuard::builder(Budget::Cost(0.001))
        .prices(prices)
        .build()
        .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    // Each call costs 100 * 1 / 1M + 50 * 2 / 1M = 0.0002.
    for (path, agent, model) in agents!(
        model: busy().named("cheap-v2"),
        tools: [counting(&runs)],
        max_steps: 10,
        input: [guard.clone()],
        output: [guard.clone()],
    ) {
        let result = generate(&*agent, "go");
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(
            tw.reason, "the budget is spent (0.0010 of 0.0010); the run stops here",
            "{path}"
        );
        assert_eq!(tw.metadata.unwrap()["unit"], "cost");
        assert_eq!(model.calls(), 5);
    }
}

#[test]
fn a_model_without_a_price_fails_the_run_before_the_call() {
    let guard = CostGuard::new(Budget::Cost(1.0)).unwrap();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("hi")]).named("homemade-llm"),
        input: [guard.clone()],
        output: [guard.clone()],
    ) {
        let err =
            futures::executor::block_on(agent.generate_with("go".into(), GenerateOptions::new()))
                .unwrap_err();
        assert!(
            err.to_string()
                .contains("no price for model `homemade-llm`"),
            "{path}: {err}"
        );
        assert_eq!(model.calls(), 0);
    }
    let priced = CostGuard::builder(Budget::Cost(1.0))
        .fallback_price(Price::per_million(1.0, 1.0))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("hi")]).named("homemade-llm"))
        .input(priced.clone())
        .output(priced)
        .build()
        .unwrap();
    assert_eq!(generate(&agent, "go").text, "hi");
}

#[test]
fn a_money_budget_in_the_output_list_alone_needs_a_fallback_price() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("hi").usage(1, 1)]).named("gpt-4o"))
        .output(CostGuard::new(Budget::Cost(1.0)).unwrap())
        .build()
        .unwrap();
    let err = futures::executor::block_on(agent.generate("go")).unwrap_err();
    assert!(
        err.to_string()
            .contains("place it in the input list as well"),
        "{err}"
    );
    let tokens_only = Agent::builder()
        .model(ScriptedModel::new([Turn::text("hi").usage(1, 1)]))
        .output(tokens(10))
        .build()
        .unwrap();
    assert_eq!(generate(&tokens_only, "go").text, "hi");
}

#[test]
fn a_resource_budget_spans_runs_and_stops_at_the_next_call() {
    let ledger = CostLedger::new();
    let guard = CostGuard::builder(Budget::Tokens(1_000))
        .scope(CostScope::Resource(ledger.clone()))
        .build()
        .unwrap();
    for (path, agent, model) in agents!(
        model: ScriptedModel::cycle([Turn::text("hi").usage(400, 200)]),
        input: [guard.clone()],
        output: [guard.clone()],
    ) {
        let user = format!("u-{path}");
        assert_eq!(generate_with(&*agent, "one", as_user(&user)).text, "hi");
        assert_eq!(generate_with(&*agent, "two", as_user(&user)).text, "hi");
        assert_eq!(ledger.spent(&user).tokens(), 1_200, "{path}");
        let refused = generate_with(&*agent, "three", as_user(&user));
        let tw = refused.tripwire.expect("refused");
        assert_eq!(
            tw.reason,
            "the budget is spent (1200 of 1000 tokens); no more model calls"
        );
        assert_eq!(tw.metadata.unwrap()["scope"], "resource");
        assert_eq!(
            model.calls(),
            2,
            "{path}: the third run never called the model"
        );
        let other = format!("other-{path}");
        assert_eq!(generate_with(&*agent, "hi", as_user(&other)).text, "hi");
        ledger.reset(&user);
        assert_eq!(generate_with(&*agent, "again", as_user(&user)).text, "hi");
    }
}

#[test]
fn a_thread_budget_is_keyed_by_thread() {
    let ledger = CostLedger::new();
    let guard = CostGuard::builder(Budget::Tokens(100))
        .scope(CostScope::Thread(ledger.clone()))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::text("hi").usage(60, 60)]))
        .input(guard.clone())
        .output(guard)
        .build()
        .unwrap();
    let in_thread = |t: &str| {
        GenerateOptions::new().request_context(RequestContext::new().with_thread(t, "same-user"))
    };
    generate_with(&agent, "a", in_thread("t1"));
    assert!(
        generate_with(&agent, "b", in_thread("t1"))
            .tripwire
            .is_some()
    );
    assert!(
        generate_with(&agent, "c", in_thread("t2"))
            .tripwire
            .is_none()
    );
    assert_eq!(ledger.spent("t1").tokens(), 120);
    assert_eq!(ledger.spent("same-user").tokens(), 0);
}

#[test]
fn a_shared_scope_without_its_id_fails_the_run() {
    let guard = CostGuard::builder(Budget::Tokens(100))
        .scope(CostScope::Resource(CostLedger::new()))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("hi")]))
        .input(guard)
        .build()
        .unwrap();
    let err = futures::executor::block_on(agent.generate("go")).unwrap_err();
    assert!(
        err.to_string()
            .contains("the request context has no resource id"),
        "{err}"
    );
}
