//! ChatCompression and ConversationCompactor (behaviours 89 and 90 of docs/builtins.md): the
//! oldest turns of a prompt over budget summarised into one message, kept for later runs.

use crate::common;

use common::{Violations, saved, thread};
use futures::executor::block_on;
use processors_builtins::chat_compression::{
    COMPRESSION_TAG, ChatCompression, ChatCompressionBuilder, ConversationCompactor, METADATA_KEY,
};
use processors_builtins::tokenizer::Tokenizer;
use processors_runtime::prelude::*;
use serde_json::json;

/// A 50-token answer (by the estimate: four bytes a token).
fn long(tag: &str) -> String {
    format!("{tag}: {}", "x".repeat(196 - tag.len()))
}

/// Compression with a 100-token budget, counted by the estimate.
fn compression(summariser: &ScriptedModel) -> ChatCompressionBuilder {
    ChatCompression::builder(summariser.clone(), 200)
        .threshold(0.5)
        .tokenizer(Tokenizer::Estimate)
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn call(id: &str) -> Message {
    let call = ToolCall {
        tool_call_id: id.into(),
        tool_name: "lookup".into(),
        args: json!({ "q": id }),
    };
    Message::new(Role::Assistant, vec![Part::ToolCall(call)])
}

fn result(id: &str, value: serde_json::Value) -> Message {
    Message::new(
        Role::Tool,
        vec![Part::ToolResult(ToolResult::new(id, "lookup", value))],
    )
}

#[test]
fn bi_89_a_prompt_over_budget_has_its_oldest_turns_summarised_and_no_call_split() {
    let summariser = ScriptedModel::new([Turn::text("Ada looked up two things.").usage(120, 8)]);
    let model = ScriptedModel::new([Turn::text("Done.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(compression(&summariser).keep_recent(0.5).build().unwrap())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("I am Ada. Look up a."),
        call("c1"),
        result("c1", json!(long("a"))),
        Message::assistant("Found a."),
        Message::user("Look up b."),
        call("c2"),
        result("c2", json!(long("b"))),
        Message::assistant(long("b found")),
        Message::user("Thanks. One more thing?"),
    ];
    let result = block_on(agent.generate(conversation)).unwrap();
    let prompt = &model.requests()[0].prompt;
    // Half the tokens reach back into the second call's result: the cut moves forward to
    // the next user message, so the call and its result stay together (both summarised)
    // and the kept part starts with the user.
    assert_eq!(prompt.len(), 2, "{:?}", texts(prompt));
    assert_eq!(prompt[0].role, Role::System);
    assert!(
        prompt[0]
            .text()
            .starts_with("Summary of the earlier conversation (8 messages")
    );
    assert!(prompt[0].text().ends_with("Ada looked up two things."));
    assert_eq!(prompt[1].text(), "Thanks. One more thing?");
    let asked = summariser.requests()[0].prompt[1].text();
    assert!(
        asked.contains("calls `lookup` with {\"q\":\"c2\"}")
            && asked.contains("`lookup` returned: b: x")
    );
    assert_eq!(result.processor_usage["chat-compression"].total_tokens, 128);
    assert_eq!(result.usage.total_tokens, model_usage(&result));
    // The summariser read the calls, their results and the texts, in order.
    let asked = summariser.requests()[0].prompt[1].text();
    let order = [
        "user: I am Ada",
        "calls `lookup`",
        "`lookup` returned: a: x",
        "Found a.",
    ];
    let at: Vec<usize> = order.iter().map(|s| asked.find(s).unwrap()).collect();
    assert!(at.is_sorted(), "{asked}");
}

fn reasons(violations: &Violations) -> Vec<String> {
    violations.all().into_iter().map(|v| v.reason).collect()
}

fn model_usage(result: &GenerateResult) -> u64 {
    result.steps.iter().map(|s| s.usage.total_tokens).sum()
}

#[test]
fn bi_89_a_prompt_within_budget_is_sent_as_it_is_with_no_call() {
    let summariser = ScriptedModel::new([]);
    let model = ScriptedModel::new([Turn::text("Hi.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(compression(&summariser).build().unwrap())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("Hello."),
        Message::assistant(long("a")),
        Message::user("Again."),
    ];
    block_on(agent.generate(conversation)).unwrap();
    assert_eq!(summariser.calls(), 0);
    assert_eq!(model.requests()[0].prompt.len(), 3);
}

#[test]
fn bi_89_with_memory_later_runs_start_from_the_kept_summary() {
    let store = InMemoryStore::new();
    let memory = Memory::new(store.clone());
    let summariser = ScriptedModel::new([
        Turn::text("Notes on turns 1 and 2."),
        Turn::text("Notes on turns 1 to 4."),
    ]);
    let model = ScriptedModel::cycle([Turn::text(long("answer"))]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(memory.clone())
        .input(compression(&summariser).memory(&memory).build().unwrap())
        .build()
        .unwrap();
    for n in 1..=3 {
        block_on(agent.generate_with(format!("question {n}"), thread())).unwrap();
    }
    // The third run was over budget: turns 1 and 2 were summarised.
    assert_eq!(summariser.calls(), 1);
    let third = texts(&model.requests()[2].prompt);
    assert_eq!(third.len(), 2);
    assert!(third[0].ends_with("Notes on turns 1 and 2."));
    // The thread keeps the summary; the store keeps every message whole.
    let kept = block_on(store.get_thread("thread-1")).unwrap().unwrap();
    let kept = &kept.metadata.unwrap()[METADATA_KEY];
    assert_eq!(kept["summary"], "Notes on turns 1 and 2.");
    assert_eq!(kept["messages"], 4);
    assert_eq!(saved(&store).len(), 6);

    // The fourth starts from the summary, with no call: it fits.
    block_on(agent.generate_with("question 4", thread())).unwrap();
    assert_eq!(summariser.calls(), 1);
    let fourth = texts(&model.requests()[3].prompt);
    assert!(fourth[0].ends_with("Notes on turns 1 and 2."));
    assert_eq!(&fourth[1..], ["question 3", &long("answer"), "question 4"]);

    // The fifth is over again: summarised from the kept summary, not from the whole history.
    block_on(agent.generate_with("question 5", thread())).unwrap();
    assert_eq!(summariser.calls(), 2);
    let asked = summariser.requests()[1].prompt[1].text();
    assert!(asked.contains("<earlier-summary>\nNotes on turns 1 and 2.\n</earlier-summary>"));
    assert!(!asked.contains("question 1") && asked.contains("question 3"));
    let fifth = texts(&model.requests()[4].prompt);
    assert!(fifth[0].contains("(8 messages") && fifth[0].ends_with("Notes on turns 1 to 4."));
    assert_eq!(&fifth[1..], ["question 5"]);
}

#[test]
fn bi_89_a_failed_or_empty_summary_leaves_the_conversation_as_it_was_with_a_warning() {
    let failures = [
        (Turn::error(ApiError::new(503, "overloaded")), "failed"),
        (Turn::text("  "), "answered with no text"),
        (
            Turn::text("Ada asked ab").finish(FinishReason::Length),
            "stopped at `max_summary_tokens` (1024)",
        ),
        (
            Turn::text("Ada").finish(FinishReason::ContentFilter),
            "stopped with `content-filter`",
        ),
    ];
    for (turn, said) in failures {
        let summariser = ScriptedModel::new([turn]);
        let model = ScriptedModel::new([Turn::text("Hi.")]);
        let violations = Violations::new();
        let agent = Agent::builder()
            .model(model.clone())
            .input(compression(&summariser).build().unwrap())
            .on_violation(violations.hook())
            .build()
            .unwrap();
        let conversation = vec![
            Message::user("one"),
            Message::assistant(long("a")),
            Message::user("two"),
            Message::assistant(long("b")),
            Message::user("three"),
        ];
        block_on(agent.generate(conversation)).unwrap();
        assert_eq!(model.requests()[0].prompt.len(), 5);
        let warnings = reasons(&violations);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains(said), "{warnings:?}");
        assert!(warnings[0].contains("the 4 oldest messages are sent without a summary"));
    }
}

#[test]
fn bi_89_one_long_turn_cannot_be_summarised_and_says_so() {
    let summariser = ScriptedModel::new([]);
    let model = ScriptedModel::new([Turn::text("Hi.")]);
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(model.clone())
        .input(compression(&summariser).build().unwrap())
        .on_violation(violations.hook())
        .build()
        .unwrap();
    block_on(agent.generate(long("one").repeat(3))).unwrap();
    assert_eq!(summariser.calls(), 0);
    let warnings = reasons(&violations);
    assert!(
        warnings[0].contains(
            "has nothing to summarise: the part summarised ends where a user turn begins"
        ),
        "{warnings:?}"
    );
}

#[test]
fn bi_89_a_thread_whose_metadata_is_not_an_object_is_left_as_it_is() {
    let store = InMemoryStore::new();
    let memory = Memory::new(store.clone());
    let now = processors_runtime::message::now_millis();
    block_on(store.save_thread(processors_runtime::memory::Thread {
        id: "thread-1".into(),
        resource_id: "user-1".into(),
        title: None,
        created_at: now,
        updated_at: now,
        metadata: Some(json!("the application's")),
    }))
    .unwrap();
    let summariser = ScriptedModel::new([Turn::text("Notes.")]);
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::text("Hi.")]))
        .memory(memory.clone())
        .input(compression(&summariser).memory(&memory).build().unwrap())
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let conversation = vec![
        Message::user("one"),
        Message::assistant(long("a")),
        Message::user("two"),
        Message::assistant(long("b")),
    ];
    block_on(agent.generate_with(conversation, thread())).unwrap();
    block_on(agent.generate_with("three", thread())).unwrap();
    assert_eq!(summariser.calls(), 1);
    let warnings = reasons(&violations);
    assert!(
        warnings.iter().any(|w| w.contains("could not be kept")),
        "{warnings:?}"
    );
    let kept = block_on(store.get_thread("thread-1")).unwrap().unwrap();
    assert_eq!(kept.metadata, Some(json!("the application's")));
    assert_eq!(saved(&store).len(), 7);
}

#[test]
fn bi_89_with_memory_new_input_is_never_summarised_and_is_saved_whole() {
    let store = InMemoryStore::new();
    let memory = Memory::new(store.clone());
    let summariser = ScriptedModel::new([Turn::text("Notes.")]);
    let violations = Violations::new();
    let model = ScriptedModel::cycle([Turn::text("Hi.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(memory.clone())
        .input(compression(&summariser).memory(&memory).build().unwrap())
        .on_violation(violations.hook())
        .build()
        .unwrap();
    // A first run over budget, all of it new: nothing memory loaded, so nothing summarised.
    let conversation = vec![
        Message::user("one"),
        Message::assistant(long("a")),
        Message::user("two"),
        Message::assistant(long("b")),
        Message::user("three"),
    ];
    block_on(agent.generate_with(conversation, thread())).unwrap();
    assert_eq!(summariser.calls(), 0);
    assert_eq!(model.requests()[0].prompt.len(), 5);
    assert!(
        reasons(&violations)[0].contains("nothing to summarise among the messages memory loaded")
    );
    assert_eq!(saved(&store).len(), 6);
    // The next run summarises them from memory; the store keeps them all.
    block_on(agent.generate_with("four", thread())).unwrap();
    assert_eq!(summariser.calls(), 1);
    assert_eq!(
        texts(&model.requests()[1].prompt)[1..],
        ["three", "Hi.", "four"]
    );
    assert_eq!(saved(&store).len(), 8);
}

#[test]
fn bi_89_placed_before_memory_it_leaves_the_kept_summary_out_and_says_so() {
    let store = InMemoryStore::new();
    let memory = Memory::new(store.clone());
    let summariser = ScriptedModel::new([Turn::text("Notes.")]);
    let model = ScriptedModel::cycle([Turn::text(long("answer"))]);
    let violations = Violations::new();
    let compression = compression(&summariser).memory(&memory).build().unwrap();
    let first = Agent::builder()
        .model(model.clone())
        .memory(memory.clone())
        .input(compression.clone())
        .build()
        .unwrap();
    for n in 1..=3 {
        block_on(first.generate_with(format!("question {n}"), thread())).unwrap();
    }
    assert_eq!(summariser.calls(), 1);
    // The same thread, with the compression placed before memory: the summary is left out
    // (memory loads the history after it), and a warning says where it goes.
    let misplaced = Agent::builder()
        .model(model.clone())
        .memory(memory.clone())
        .input(compression)
        .input(memory)
        .on_violation(violations.hook())
        .build()
        .unwrap();
    block_on(misplaced.generate_with("question 4", thread())).unwrap();
    let warnings = reasons(&violations);
    assert!(
        warnings[0].contains("put it after memory in `input`"),
        "{warnings:?}"
    );
    let prompt = texts(&model.requests()[3].prompt);
    assert_eq!(prompt.len(), 7, "{prompt:?}");
    assert!(prompt.iter().all(|m| !m.contains("Notes.")));
}
#[test]
fn bi_90_the_compactor_stubs_old_results_and_drops_old_reasoning_before_it_summarises() {
    let page = json!(long("page").repeat(2));
    let older = || {
        vec![
            Message::user("Fetch the page."),
            call("c1"),
            result("c1", page.clone()),
            Message::new(
                Role::Assistant,
                vec![
                    Part::Reasoning {
                        text: "I should fetch it.".into(),
                    },
                    Part::Text {
                        text: "Fetched.".into(),
                    },
                ],
            ),
            Message::user("And now?"),
        ]
    };
    // Stubbing is enough: no summary.
    let summariser = ScriptedModel::new([]);
    let model = ScriptedModel::new([Turn::text("Hi.")]);
    let compactor = ConversationCompactor::new(compression(&summariser).build().unwrap())
        .stub_results_over(100);
    let agent = Agent::builder()
        .model(model.clone())
        .input(compactor)
        .build()
        .unwrap();
    let result = block_on(agent.generate(older())).unwrap();
    assert_eq!(summariser.calls(), 0);
    let prompt = &model.requests()[0].prompt;
    assert_eq!(prompt.len(), 5);
    let Part::ToolResult(stub) = &prompt[2].content.parts[0] else {
        panic!("{:?}", prompt[2]);
    };
    assert_eq!(
        stub.result,
        json!("[the result of `lookup` is left out here: 398 bytes]")
    );
    assert!(
        prompt[3]
            .content
            .parts
            .iter()
            .all(|p| !matches!(p, Part::Reasoning { .. }))
    );
    let _ = result;

    // With a bigger result kept by the cut: the stubs are not enough, so it summarises.
    let summariser = ScriptedModel::new([Turn::text("Notes.")]);
    let model = ScriptedModel::new([Turn::text("Hi.")]);
    let compactor = ConversationCompactor::new(compression(&summariser).build().unwrap())
        .stub_results_over(100);
    let agent = Agent::builder()
        .model(model.clone())
        .input(compactor)
        .build()
        .unwrap();
    let mut conversation = older();
    conversation.insert(4, Message::assistant(long("more")));
    conversation.insert(5, Message::user(long("question")));
    conversation.insert(6, Message::assistant(long("answer")));
    block_on(agent.generate(conversation)).unwrap();
    assert_eq!(summariser.calls(), 1);
    // The summariser read the stub, not the page, and no reasoning.
    let asked = summariser.requests()[0].prompt[1].text();
    assert!(
        asked.contains("`lookup` returned: [the result of `lookup` is left out here: 398 bytes]"),
        "{asked}"
    );
    assert!(!asked.contains("I should fetch it."));
    let prompt = texts(&model.requests()[0].prompt);
    assert!(prompt[0].ends_with("Notes."), "{prompt:?}");
    assert_eq!(
        prompt[1..],
        [long("question"), long("answer"), "And now?".into()]
    );
}

#[test]
fn bi_90_with_memory_the_store_keeps_results_and_reasoning_whole() {
    let store = InMemoryStore::new();
    let memory = Memory::new(store.clone());
    let page = long("page").repeat(2);
    let model = ScriptedModel::new([
        Turn::empty()
            .reasoning("I should look it up.")
            .tool_call("c1", "lookup", json!({})),
        Turn::text("Found it."),
        Turn::text("Sure."),
    ]);
    let lookup = {
        let page = page.clone();
        tool(
            "lookup",
            "Looks a page up.",
            json!({ "type": "object" }),
            move |_| {
                let page = page.clone();
                async move { Ok(json!(page)) }
            },
        )
    };
    let summariser = ScriptedModel::new([]);
    let compactor = ConversationCompactor::new(compression(&summariser).build().unwrap())
        .stub_results_over(100);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(lookup)
        .memory(memory)
        .input(compactor)
        .build()
        .unwrap();
    block_on(agent.generate_with("Look it up.", thread())).unwrap();
    block_on(agent.generate_with(long("And then?"), thread())).unwrap();
    // The second run's prompt had the stub; the store still has the page and the reasoning.
    let second = &model.requests()[2].prompt;
    let stubbed = second.iter().flat_map(|m| &m.content.parts).any(|p| {
        matches!(p, Part::ToolResult(r) if r.result.as_str().is_some_and(|s| s.starts_with("[the result of `lookup`")))
    });
    assert!(stubbed, "{second:?}");
    let stored = saved(&store);
    let whole = stored
        .iter()
        .flat_map(|m| &m.content.parts)
        .any(|p| matches!(p, Part::ToolResult(r) if r.result == json!(page)));
    assert!(whole);
    assert!(
        stored
            .iter()
            .flat_map(|m| &m.content.parts)
            .any(|p| matches!(p, Part::Reasoning { .. }))
    );
    let _ = COMPRESSION_TAG;
}
