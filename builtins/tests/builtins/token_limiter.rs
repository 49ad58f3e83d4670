//! `TokenLimiter` on an agent: prompts trimmed to the limit (history from the list, the turn
//! from one prompt only), answers cut or aborted at the limit, on both kinds of lists.

use crate::support;

use processors_builtins::token_limiter::{
    CountMode, LimitStrategy, TokenCount, TokenLimiter, Tokenizer, TrimMode,
};
use processors_runtime::memory::Thread;
use processors_runtime::prelude::*;
use processors_runtime::testing::Harness;
use serde_json::json;
use support::*;

fn limiter(limit: usize) -> TokenLimiter {
    TokenLimiter::new(limit).unwrap()
}

fn truncating(limit: usize, mode: CountMode) -> TokenLimiter {
    TokenLimiter::builder(limit)
        .count_mode(mode)
        .build()
        .unwrap()
}

fn aborting(limit: usize) -> TokenLimiter {
    TokenLimiter::builder(limit)
        .strategy(LimitStrategy::Abort)
        .build()
        .unwrap()
}

/// A message of about 25 tokens.
fn long(i: usize) -> String {
    format!("message {i}: {}", "filler ".repeat(20))
}

fn with_thread(thread: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, "user-1"))
}

/// Saves ten alternating messages into `thread`.
fn remember(store: &InMemoryStore, thread: &str) -> Vec<Message> {
    let history: Vec<Message> = (0..10)
        .map(|i| {
            let mut m = match i % 2 {
                0 => Message::user(long(i)),
                _ => Message::assistant(long(i)),
            };
            m.thread_id = Some(thread.into());
            m.resource_id = Some("user-1".into());
            m
        })
        .collect();
    futures::executor::block_on(async {
        store
            .save_thread(Thread {
                id: thread.into(),
                resource_id: "user-1".into(),
                title: None,
                created_at: 0,
                updated_at: 0,
                metadata: None,
            })
            .await
            .unwrap();
        store.save_messages(history.clone()).await.unwrap();
    });
    history
}

fn saved(store: &InMemoryStore, thread: &str) -> Vec<Message> {
    futures::executor::block_on(store.list_messages(thread, None)).unwrap()
}

#[test]
fn remembered_history_is_trimmed_oldest_first_and_stays_in_memory() {
    let store = InMemoryStore::new();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        memory: Memory::new(store.clone()),
        input: [limiter(120)],
    ) {
        let thread = format!("t-{path}");
        let history = remember(&store, &thread);
        let result = generate_with(&*agent, "latest question", with_thread(&thread));
        assert_eq!(result.text, "ok");
        let prompt = &model.requests()[0].prompt;
        let kept: Vec<String> = prompt[1..prompt.len() - 1]
            .iter()
            .map(Message::text)
            .collect();
        let newest: Vec<String> = history[history.len() - kept.len()..]
            .iter()
            .map(Message::text)
            .collect();
        assert!(
            !kept.is_empty() && kept.len() < history.len(),
            "{path}: {kept:?}"
        );
        assert_eq!(kept, newest, "{path}: the newest history stays");
        assert_eq!(prompt.last().unwrap().text(), "latest question");
        assert_eq!(
            saved(&store, &thread).len(),
            12,
            "{path}: memory lost nothing"
        );
    }
}

#[test]
fn the_turn_is_left_out_of_one_prompt_and_still_saved() {
    let store = InMemoryStore::new();
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        memory: Memory::new(store.clone()),
        input: [limiter(90)],
    ) {
        let thread = format!("t-{path}");
        let mut input: Vec<Message> = (0..6)
            .map(|i| match i % 2 {
                0 => Message::user(long(i)),
                _ => Message::assistant(long(i)),
            })
            .collect();
        input.push(Message::user("and now?"));
        generate_with(&*agent, input, with_thread(&thread));
        let prompt = &model.requests()[0].prompt;
        assert!(prompt.len() < 8, "{path}: the prompt was trimmed");
        assert_eq!(prompt.last().unwrap().text(), "and now?");
        assert_eq!(
            saved(&store, &thread).len(),
            8,
            "{path}: the whole turn is saved"
        );
    }
}

#[test]
fn a_tool_call_leaves_the_prompt_with_its_results() {
    let call = |id: &str| {
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall {
                tool_call_id: id.into(),
                tool_name: "search".into(),
                args: json!({ "query": "weather" }),
            })],
        )
    };
    let result = |id: &str| {
        Message::new(
            Role::Tool,
            vec![Part::ToolResult(ToolResult {
                tool_call_id: id.into(),
                tool_name: "search".into(),
                result: json!(long(0)),
                is_error: false,
                model_output: None,
            })],
        )
    };
    for limit in [40, 60, 80, 100, 120] {
        for (path, agent, model) in agents!(
            model: ScriptedModel::new([Turn::text("ok")]),
            input: [limiter(limit)],
        ) {
            let input = vec![
                Message::user("first"),
                call("c1"),
                result("c1"),
                Message::assistant(long(1)),
                Message::user("second"),
                call("c2"),
                result("c2"),
            ];
            generate(&*agent, input);
            let prompt = &model.requests()[0].prompt;
            let calls: Vec<&str> = prompt
                .iter()
                .flat_map(Message::tool_calls)
                .map(|c| c.tool_call_id.as_str())
                .collect();
            for m in prompt {
                for part in &m.content.parts {
                    if let Part::ToolResult(r) = part {
                        assert!(calls.contains(&r.tool_call_id.as_str()), "{path}, {limit}");
                    }
                }
            }
            assert_ne!(
                prompt[0].role,
                Role::Tool,
                "{path}, {limit}: no orphan result first"
            );
            assert!(texts(prompt, Role::User).contains(&"second".to_owned()));
        }
    }
}

#[test]
fn the_tools_offered_count_against_the_limit() {
    let big = tool(
        "lookup",
        "Looks things up. ".repeat(20),
        json!({ "type": "object" }),
        |_| async { Ok(json!(null)) },
    );
    let input = || vec![Message::user(long(0)), Message::user("question")];
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        input: [limiter(120)],
    ) {
        generate(&*agent, input());
        assert_eq!(
            model.requests()[0].prompt.len(),
            2,
            "{path}: fits without tools"
        );
    }
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        tools: [big.clone()],
        input: [limiter(120)],
    ) {
        generate(&*agent, input());
        assert_eq!(
            texts(&model.requests()[0].prompt, Role::User),
            ["question"],
            "{path}: the tool's description pushed the older message out"
        );
    }
}

#[test]
fn each_model_is_counted_with_its_own_encoding() {
    // About 250 tokens in o200k_base, twice as many in cl100k_base.
    let cjk = "漢".repeat(250);
    let input = || vec![Message::user(cjk.clone()), Message::user("question")];
    let kept = |id: &str| {
        let model = ScriptedModel::new([Turn::text("ok")]).named(id);
        let agent = Agent::builder()
            .model(model.clone())
            .input(limiter(400))
            .build()
            .unwrap();
        generate(&agent, input());
        texts(&model.requests()[0].prompt, Role::User).len()
    };
    assert_eq!(kept("gpt-4o"), 2);
    assert_eq!(kept("gpt-4"), 1);
    let fixed = TokenLimiter::builder(400)
        .tokenizer(Tokenizer::O200k)
        .build()
        .unwrap();
    let model = ScriptedModel::new([Turn::text("ok")]).named("gpt-4");
    let agent = Agent::builder()
        .model(model.clone())
        .input(fixed)
        .build()
        .unwrap();
    generate(&agent, input());
    assert_eq!(model.requests()[0].prompt.len(), 2, "a named encoding wins");
}

#[test]
fn with_the_abort_strategy_a_long_prompt_ends_the_run_before_the_model_is_called() {
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        input: [aborting(20)],
    ) {
        let result = generate(&*agent, vec![Message::user(long(0)), Message::user("q")]);
        let tw = result.tripwire.expect("a trip wire");
        assert_eq!(tw.processor_id, "token-limiter");
        assert!(
            tw.reason.contains("over the limit of 20"),
            "{path}: {}",
            tw.reason
        );
        assert_eq!(tw.metadata.unwrap()["limit"], 20);
        assert_eq!(model.calls(), 0);
    }
}

#[test]
fn a_prompt_that_cannot_fit_ends_the_run() {
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([Turn::text("ok")]),
        input: [limiter(10)],
    ) {
        let result = generate(&*agent, long(0).as_str());
        let tw = result.tripwire.expect("a trip wire");
        assert!(
            tw.reason.contains("cannot fit in 10 tokens"),
            "{path}: {}",
            tw.reason
        );
        assert_eq!(model.calls(), 0);
    }
}

#[test]
fn an_answer_past_the_limit_is_cut_and_finishes_with_length() {
    for (path, agent, _) in agents!(
        model: ScriptedModel::new([Turn::deltas(["one two", " three four", " five"])]),
        output: [truncating(3, CountMode::Cumulative)],
    ) {
        let (chunks, result) = stream(&*agent, "count");
        assert_eq!(streamed_text(&chunks), "one two three", "{path}");
        assert_eq!(result.text, "one two three");
        assert_eq!(
            finish_reasons(&chunks),
            [FinishReason::Length, FinishReason::Length]
        );
        assert!(tripwire(&chunks).is_none());
    }
}

#[test]
fn with_the_abort_strategy_an_answer_past_the_limit_ends_the_run() {
    for (path, agent, _) in agents!(
        model: ScriptedModel::new([Turn::deltas(["one two", " three four", " five"])]),
        output: [aborting(3)],
    ) {
        let (chunks, result) = stream(&*agent, "count");
        assert_eq!(
            streamed_text(&chunks),
            "one two",
            "{path}: nothing past the limit"
        );
        let tw = tripwire(&chunks).expect("a trip wire chunk");
        assert_eq!(tw.reason, "the answer reached the limit of 3 output tokens");
        assert_eq!(tw.metadata.as_ref().unwrap()["countMode"], "cumulative");
        assert_eq!(result.tripwire.as_ref(), Some(tw));
        assert_eq!(result.text, "");
    }
}

fn tool_loop() -> ScriptedModel {
    ScriptedModel::new([
        Turn::text("alpha beta gamma").tool_call("c1", "noop", json!({})),
        Turn::text("delta epsilon zeta"),
    ])
}

fn noop() -> std::sync::Arc<dyn Tool> {
    tool(
        "noop",
        "Does nothing.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("done")) },
    )
}

#[test]
fn cumulative_counting_spans_the_steps_of_a_run() {
    for (path, agent, _) in agents!(
        model: tool_loop(),
        tools: [noop()],
        output: [truncating(2, CountMode::Cumulative)],
    ) {
        let (chunks, result) = stream(&*agent, "go");
        assert_eq!(streamed_text(&chunks), "alpha beta", "{path}");
        assert_eq!(result.steps[0].text, "alpha beta");
        assert_eq!(result.steps[1].text, "", "{path}: the limit was spent");
        assert_eq!(
            finish_reasons(&chunks),
            [
                FinishReason::ToolCalls,
                FinishReason::Length,
                FinishReason::Length
            ]
        );
    }
}

#[test]
fn per_step_counting_gives_each_step_the_whole_limit() {
    for (path, agent, _) in agents!(
        model: tool_loop(),
        tools: [noop()],
        output: [truncating(2, CountMode::PerStep)],
    ) {
        let (chunks, result) = stream(&*agent, "go");
        assert_eq!(streamed_text(&chunks), "alpha betadelta epsilon", "{path}");
        assert_eq!(result.steps[1].text, "delta epsilon");
        assert_eq!(result.tool_results.len(), 1, "{path}: tool calls pass");
    }
}

#[test]
fn a_rejected_attempt_does_not_count() {
    let reject_first = || {
        output_step_fn("reject-first", |a: &mut OutputStepArgs<'_, ()>| {
            match a.retry_count {
                0 => Err(a.abort().reason("again").retry(true)),
                _ => Ok(()),
            }
        })
    };
    for (path, agent, _) in agents!(
        model: ScriptedModel::new([Turn::text("one two three"), Turn::text("four five six")]),
        max_processor_retries: 1,
        output: [truncating(3, CountMode::Cumulative), reject_first()],
    ) {
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "four five six", "{path}");
    }
}

#[test]
fn an_answer_replayed_from_a_cache_is_cut_at_the_end() {
    let cache = || {
        llm_request_fn("cache", |_: &mut LlmRequestArgs<'_, ()>| {
            let id: std::sync::Arc<str> = "t".into();
            LlmRequestAction::Respond(LlmResponse {
                chunks: vec![
                    ChunkKind::TextStart { id: id.clone() },
                    ChunkKind::TextDelta {
                        id: id.clone(),
                        text: "one two three four".into(),
                    },
                    ChunkKind::TextEnd { id },
                    ChunkKind::Finish {
                        finish_reason: FinishReason::Stop,
                        usage: Usage::default(),
                    },
                ],
            })
        })
    };
    for (path, agent, model) in agents!(
        model: ScriptedModel::new([]),
        input: [cache()],
        output: [truncating(2, CountMode::Cumulative)],
    ) {
        let result = generate(&*agent, "go");
        assert_eq!(result.text, "one two", "{path}");
        assert_eq!(result.response_messages[0].text(), "one two");
        assert_eq!(model.calls(), 0);
    }
}

#[test]
fn the_estimate_counts_four_bytes_a_token() {
    let estimate = TokenLimiter::builder(2)
        .tokenizer(Tokenizer::Estimate)
        .build()
        .unwrap();
    for (path, agent, _) in agents!(
        model: ScriptedModel::new([Turn::deltas(["abcde", "fghijkl"])]),
        output: [estimate.clone()],
    ) {
        assert_eq!(generate(&*agent, "go").text, "abcdefgh", "{path}");
    }
}

/// `TrimMode::BestFit` keeps the newest messages that fit, skipping a long one, where
/// `Contiguous` (the default) drops the oldest until the rest fits.
#[test]
fn bi_48_best_fit_keeps_an_older_short_message_a_newer_long_one_did_not_fit_around() {
    let input = || {
        vec![
            Message::user("a short one"),
            Message::assistant(long(1)),
            Message::user("and now?"),
        ]
    };
    let t = Tokenizer::O200k;
    let limit = 3 + t.count_message(&input()[0]) + t.count_message(&input()[2]) + 2;
    // The prompt a model would be sent: the input hooks as a run's first step runs them.
    let prompt_with = |mode: TrimMode| {
        let limiter = TokenLimiter::builder(limit)
            .trim_mode(mode)
            .build()
            .unwrap();
        let mut h = Harness::new(limiter);
        futures::executor::block_on(async {
            h.input(input()).await.unwrap();
            h.input_step().await.unwrap();
            h.llm_request().await.unwrap().outcome.prompt_texts()
        })
    };
    assert_eq!(prompt_with(TrimMode::Contiguous), ["and now?"]);
    assert_eq!(prompt_with(TrimMode::BestFit), ["a short one", "and now?"]);
}

/// A counter of your own counts the prompt and the answer, and names itself in the trip
/// wire.
#[test]
fn bi_49_a_custom_counter_counts_the_answer_and_names_itself() {
    use processors_builtins::tokenizer::Counter;
    let words = Tokenizer::Custom(Counter::new("words", |t| t.split_whitespace().count()));
    let model = ScriptedModel::new([Turn::deltas(["one two three ", "four five six seven"])]);
    let cut = TokenLimiter::builder(3).tokenizer(words).build().unwrap();
    let agent = Agent::builder().model(model).output(cut).build().unwrap();
    let result = generate(&agent, "count");
    assert_eq!(result.text.trim_end(), "one two three");
    let model = ScriptedModel::new([Turn::deltas(["one two three ", "four five"])]);
    let stop = TokenLimiter::builder(4)
        .tokenizer(words)
        .strategy(LimitStrategy::Abort)
        .build()
        .unwrap();
    let agent = Agent::builder().model(model).output(stop).build().unwrap();
    let tw = generate(&agent, "count").tripwire.expect("over four words");
    let meta = tw.metadata.unwrap();
    assert_eq!(meta["encoding"], "words");
    assert_eq!(meta["tokens"], 5);
}

static COUNTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Words, counting how often it is asked.
fn counting_words(text: &str) -> usize {
    COUNTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    text.split_whitespace().count()
}

/// A token is at least a byte: an answer of fewer bytes than the limit is never tokenized,
/// neither as it streams nor in the final answer.
#[test]
fn an_answer_far_below_the_limit_is_never_tokenized() {
    use processors_builtins::tokenizer::Counter;
    let words = Tokenizer::Custom(Counter::new("words", counting_words));
    let model = ScriptedModel::new([Turn::deltas(["one two three ", "four five"])]);
    let limiter = TokenLimiter::builder(1_000)
        .tokenizer(words)
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(model)
        .output(limiter)
        .build()
        .unwrap();
    let result = generate(&agent, "count");
    assert_eq!(result.text, "one two three four five");
    assert_eq!(COUNTED.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// A `TokenCount` in the request context reads the limiter's counts: the prompt it let go
/// (after trimming) and the answer it kept (after cutting).
#[test]
fn bi_59_the_counts_are_readable_through_the_request_context() {
    let count = TokenCount::new();
    let t = Tokenizer::O200k;
    let input = || vec![Message::user(long(0)), Message::user("and now?")];
    let limit = 3 + t.count_message(&input()[1]) + 2;
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "one two three ",
            "four five six seven",
        ])]))
        .input(TokenLimiter::new(limit).unwrap())
        .output(truncating(3, CountMode::Cumulative))
        .build()
        .unwrap();
    let options = GenerateOptions::new().request_context(RequestContext::new().with(count.clone()));
    let result = generate_with(&agent, input(), options);
    assert_eq!(result.text, "one two three");
    assert_eq!(count.answer_tokens(), 3);
    assert_eq!(count.prompt_tokens(), 3 + t.count_message(&input()[1]));
}
