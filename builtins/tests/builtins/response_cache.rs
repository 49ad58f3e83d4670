//! `ResponseCache` on agents: hits skip the model on both dispatch paths and replay what the
//! client got (redactions included, streamed or not); scopes keep tenants apart; per-call
//! key, scope, bust, time to live and skip; nothing of a failed run or a rejected step is
//! stored; a failing backend or a corrupt entry is a miss with a warning.

use crate::support;

use futures::future::BoxFuture;
use processors_builtins::response_cache::{
    Cache, CacheControl, CacheError, InMemoryCache, ResponseCache,
};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::*;

/// Answers the n-th call (from 0) with "answer n".
fn counting_model() -> ScriptedModel {
    ScriptedModel::responder(|_, i| Turn::deltas(["answer ", &i.to_string()]).usage(10, 2))
}

fn cache() -> ResponseCache {
    ResponseCache::new(InMemoryCache::new())
}

fn as_user(user: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(
        RequestContext::new().with_thread(format!("t-{user}-{}", rand_suffix()), user),
    )
}

/// A thread id of its own per call, so memory plays no part.
fn rand_suffix() -> usize {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn with_control(control: CacheControl) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with(control))
}

#[test]
fn a_repeated_call_is_answered_from_the_cache_without_the_model() {
    let c = cache();
    for (path, agent, model) in agents!(
        model: counting_model(),
        input: [c.clone()],
        output: [c.clone()],
    ) {
        // Both agents share the cache: each asks its own questions.
        let first = generate(&*agent, format!("{path}: Capital of France?"));
        let second = generate(&*agent, format!("{path}: Capital of France?"));
        let other = generate(&*agent, format!("{path}: Capital of Spain?"));
        assert_eq!(first.text, "answer 0", "{path}");
        assert_eq!(second.text, "answer 0", "{path}: replayed");
        assert_eq!(
            other.text, "answer 1",
            "{path}: another prompt is another entry"
        );
        assert_eq!(model.calls(), 2, "{path}");
        assert_eq!(second.finish_reason, FinishReason::Stop);
    }
}

#[test]
fn a_hit_streams_the_answer_as_the_client_got_it_redactions_included() {
    let store = InMemoryCache::new();
    let redact = output_stream_fn("redact", |a: &mut OutputStreamArgs<'_, ()>| {
        match a.chunk.text_delta() {
            Some(t) if t.contains("sk-") => a.chunk.clone().map_text(|_| "[key]".into()).into(),
            _ => StreamAction::Pass,
        }
    });
    let model = ScriptedModel::responder(|_, _| Turn::deltas(["your key: ", "sk-123", "."]));
    let c = ResponseCache::new(store.clone());
    let first = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(redact)
        .output(c)
        .build()
        .unwrap();
    let (chunks, r) = stream(&*Box::new(first) as &dyn AnyAgent, "my key?");
    assert_eq!(streamed_text(&chunks), "your key: [key].");
    assert_eq!(r.text, "your key: [key].");

    // Another agent on the same cache, without the redactor: the replay is redacted.
    let c = ResponseCache::new(store);
    let later = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(c)
        .build()
        .unwrap();
    let (chunks, r) = stream(&*Box::new(later) as &dyn AnyAgent, "my key?");
    assert_eq!(model.calls(), 1);
    assert_eq!(streamed_text(&chunks), "your key: [key].");
    assert_eq!(r.text, "your key: [key].");
    assert!(!format!("{chunks:?}").contains("sk-123"));
}

#[test]
fn two_tenants_never_share_an_entry() {
    let c = cache();
    for (path, agent, model) in agents!(
        model: counting_model(),
        input: [c.clone()],
        output: [c.clone()],
    ) {
        let ada = generate_with(&*agent, path, as_user("ada"));
        let bob = generate_with(&*agent, path, as_user("bob"));
        let ada_again = generate_with(&*agent, path, as_user("ada"));
        assert_eq!(
            (ada.text.as_str(), bob.text.as_str()),
            ("answer 0", "answer 1"),
            "{path}"
        );
        assert_eq!(ada_again.text, "answer 0", "{path}");
        assert_eq!(model.calls(), 2, "{path}");
    }
}

#[test]
fn per_call_key_scope_bust_and_skip() {
    let c = cache();
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(c)
        .build()
        .unwrap();
    // One key for two prompts: the second is a hit.
    let keyed = || with_control(CacheControl::new().key("faq-hours"));
    assert_eq!(
        generate_with(&agent, "When are you open?", keyed()).text,
        "answer 0"
    );
    assert_eq!(
        generate_with(&agent, "Opening hours?", keyed()).text,
        "answer 0"
    );
    // Bust: the model answers again, and its answer replaces the entry.
    let busted = with_control(CacheControl::new().key("faq-hours").bust(true));
    assert_eq!(
        generate_with(&agent, "Opening hours?", busted).text,
        "answer 1"
    );
    assert_eq!(generate_with(&agent, "Hours?", keyed()).text, "answer 1");
    // A global scope shares an entry between resources that ask the same thing.
    let global = |user: &str| {
        GenerateOptions::new().request_context(
            RequestContext::new()
                .with_thread(format!("t-{user}"), user)
                .with(CacheControl::new().scope("global")),
        )
    };
    assert_eq!(
        generate_with(&agent, "Terms?", global("ada")).text,
        "answer 2"
    );
    assert_eq!(
        generate_with(&agent, "Terms?", global("bob")).text,
        "answer 2"
    );
    // Skip: no lookup, no write.
    let skip = || with_control(CacheControl::new().skip(true));
    assert_eq!(generate_with(&agent, "Terms?", skip()).text, "answer 3");
    assert_eq!(generate_with(&agent, "Privacy?", skip()).text, "answer 4");
    assert_eq!(generate(&agent, "Privacy?").text, "answer 5");
    assert_eq!(model.calls(), 6);
}

#[test]
fn an_entry_lives_for_its_time_to_live() {
    let c = ResponseCache::new(InMemoryCache::new()).ttl(Duration::from_secs(3600));
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(c)
        .build()
        .unwrap();
    let expired = || with_control(CacheControl::new().ttl(Duration::ZERO));
    assert_eq!(generate_with(&agent, "a", expired()).text, "answer 0");
    assert_eq!(
        generate(&agent, "a").text,
        "answer 1",
        "the entry had expired"
    );
    assert_eq!(
        generate(&agent, "a").text,
        "answer 1",
        "the cache's own hour"
    );
}

#[test]
fn a_rejected_step_is_not_stored_and_its_accepted_retry_is() {
    let guard = output_step_fn(
        "no-zero",
        |a: &mut OutputStepArgs<'_, ()>| -> Result<(), ProcessorError> {
            if a.text.ends_with('0') {
                return Err(a.abort().reason("not that one").retry(true).into());
            }
            Ok(())
        },
    );
    let c = cache();
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(guard)
        .output(c)
        .max_processor_retries(1)
        .build()
        .unwrap();
    assert_eq!(generate(&agent, "hi").text, "answer 1");
    assert_eq!(model.calls(), 2);
    // The first attempt's request is the one a new run sends: "answer 0" was never stored.
    let again = generate(&agent, "hi");
    assert_eq!(
        again.text, "answer 2",
        "a miss: the rejected answer was never stored"
    );
    assert_eq!(model.calls(), 3);
}

#[test]
fn a_run_ended_by_a_trip_wire_stores_nothing() {
    let guard = output_result_fn(
        "veto",
        |a: &mut OutputResultArgs<'_, ()>| -> Result<(), ProcessorError> {
            if a.result.text == "answer 0" {
                return Err(a.abort().reason("vetoed").into());
            }
            Ok(())
        },
    );
    let c = cache();
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(guard)
        .output(c)
        .build()
        .unwrap();
    assert!(generate(&agent, "hi").tripwire.is_some());
    assert_eq!(generate(&agent, "hi").text, "answer 1");
}

#[test]
fn each_step_of_a_tool_loop_is_its_own_entry_and_a_replay_runs_the_tools_again() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let weather = tool(
        "weather",
        "Weather.",
        json!({"type": "object"}),
        move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!("sunny")) }
        },
    );
    let model = ScriptedModel::responder(|request, i| {
        let answered = request.prompt.iter().any(|m| m.role == Role::Tool);
        match answered {
            false => Turn::empty().tool_call(format!("c{i}"), "weather", json!({})),
            true => Turn::text(format!("sunny ({i})")),
        }
    });
    let c = cache();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(weather)
        .input(c.clone())
        .output(c)
        .build()
        .unwrap();
    assert_eq!(generate(&agent, "weather?").text, "sunny (1)");
    assert_eq!(generate(&agent, "weather?").text, "sunny (1)");
    assert_eq!(model.calls(), 2, "both steps replayed");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the replayed tool call ran again"
    );
}

/// A backend that fails every call.
struct Down;

impl Cache for Down {
    fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        Box::pin(async { Err("connection refused".into()) })
    }
    fn set<'a>(
        &'a self,
        _: &'a str,
        _: Vec<u8>,
        _: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        Box::pin(async { Err("connection refused".into()) })
    }
}

#[test]
fn a_cache_that_is_down_is_a_miss_with_a_warning_and_the_run_goes_on() {
    let log: Violations = Arc::default();
    let c = ResponseCache::new(Down);
    let model = counting_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(c.clone())
        .output(c)
        .on_violation(recorder(&log))
        .build()
        .unwrap();
    let r = generate(&agent, "hi");
    assert_eq!(r.text, "answer 0");
    let reasons: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|v| v.reason.clone())
        .collect();
    assert_eq!(
        reasons,
        [
            "the response cache failed to look the call up: connection refused",
            "the response cache failed to store an answer: connection refused"
        ]
    );
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .all(|v| v.kind == ViolationKind::Warn)
    );
}

/// An in-memory cache that remembers the keys it was given.
#[derive(Clone, Default)]
struct Spy {
    store: InMemoryCache,
    keys: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Cache for Spy {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        self.store.get(key)
    }
    fn set<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        self.keys.lock().unwrap().push(key.to_owned());
        self.store.set(key, value, ttl)
    }
}

#[test]
fn a_corrupt_entry_is_a_miss_with_a_warning() {
    let spy = Spy::default();
    let log: Violations = Arc::default();
    let c = ResponseCache::new(spy.clone());
    let agent = Agent::builder()
        .model(counting_model())
        .input(c.clone())
        .output(c)
        .on_violation(recorder(&log))
        .build()
        .unwrap();
    generate(&agent, "hi");
    let key = spy.keys.lock().unwrap()[0].clone();
    assert!(key.starts_with("processors:response:"), "{key}");
    futures::executor::block_on(spy.store.set(&key, b"{not json".to_vec(), None)).unwrap();
    assert_eq!(generate(&agent, "hi").text, "answer 1");
    let reasons: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|v| v.reason.clone())
        .collect();
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].starts_with("the response cache failed to read an entry"),
        "{reasons:?}"
    );
    assert_eq!(
        generate(&agent, "hi").text,
        "answer 1",
        "the new answer replaced it"
    );
}
