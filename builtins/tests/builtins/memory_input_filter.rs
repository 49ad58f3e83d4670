//! MemoryInputFilter (behaviour 87 of docs/builtins.md): history sent again while memory
//! loads it reaches the model, and the store, once.

use crate::common;

use common::{saved, thread};
use futures::executor::block_on;
use processors_builtins::MemoryInputFilter;
use processors_runtime::prelude::*;

fn agent(model: &ScriptedModel, store: &InMemoryStore, filter: bool) -> Agent {
    let builder = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()));
    match filter {
        true => builder.input(MemoryInputFilter::new()),
        false => builder,
    }
    .build()
    .unwrap()
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

#[test]
fn bi_87_history_sent_again_is_sent_to_the_model_and_saved_once() {
    for filter in [true, false] {
        let (model, store) = (
            ScriptedModel::cycle([Turn::text("Paris.")]),
            InMemoryStore::new(),
        );
        let agent = agent(&model, &store, filter);
        block_on(agent.generate_with("Capital of France?", thread())).unwrap();
        let again = vec![
            Message::user("Capital of France?"),
            Message::assistant("Paris."),
            Message::user("And of Italy?"),
        ];
        block_on(agent.generate_with(again, thread())).unwrap();
        let sent = texts(&model.requests()[1].prompt);
        let stored = texts(&saved(&store));
        match filter {
            true => {
                assert_eq!(sent, ["Capital of France?", "Paris.", "And of Italy?"]);
                assert_eq!(
                    stored,
                    ["Capital of France?", "Paris.", "And of Italy?", "Paris."]
                );
            }
            // Without it, each earlier turn twice: what the filter is for.
            false => assert_eq!(sent.len(), 5, "{sent:?}"),
        }
    }
}

#[test]
fn the_new_message_stays_even_when_it_repeats_one_and_only_a_repeated_start_goes() {
    let (model, store) = (
        ScriptedModel::cycle([Turn::text("Sure.")]),
        InMemoryStore::new(),
    );
    let agent = agent(&model, &store, true);
    block_on(agent.generate_with("yes", thread())).unwrap();
    // The same word again, alone: a new message.
    block_on(agent.generate_with("yes", thread())).unwrap();
    assert_eq!(texts(&model.requests()[1].prompt), ["yes", "Sure.", "yes"]);
    // A client's history that differs from memory's (edited) is kept whole.
    let edited = vec![
        Message::user("yes"),
        Message::assistant("Sure, edited."),
        Message::user("yes"),
        Message::user("go on"),
    ];
    block_on(agent.generate_with(edited, thread())).unwrap();
    let sent = texts(&model.requests()[2].prompt);
    assert_eq!(
        &sent[4..],
        ["yes", "Sure, edited.", "yes", "go on"],
        "{sent:?}"
    );
}

#[test]
fn a_history_longer_than_memorys_window_goes_whole() {
    let (model, store) = (
        ScriptedModel::cycle([Turn::text("ok")]),
        InMemoryStore::new(),
    );
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()).last_messages(Some(4)))
        .input(MemoryInputFilter::new())
        .build()
        .unwrap();
    let mut history = Vec::new();
    for i in 0..5 {
        let question = format!("question {i}");
        block_on(agent.generate_with(question.as_str(), thread())).unwrap();
        history.push(Message::user(question));
        history.push(Message::assistant("ok"));
    }
    // The client sends all ten earlier messages; memory loads the last four.
    history.push(Message::user("question 5"));
    block_on(agent.generate_with(history, thread())).unwrap();
    let sent = texts(&model.requests()[5].prompt);
    assert_eq!(sent, ["question 3", "ok", "question 4", "ok", "question 5"]);
    assert_eq!(saved(&store).len(), 12, "each turn saved once");
}

#[test]
fn memorys_messages_stay_when_the_client_sends_them_with_their_ids() {
    let (model, store) = (
        ScriptedModel::cycle([Turn::text("Paris.")]),
        InMemoryStore::new(),
    );
    let agent = agent(&model, &store, true);
    block_on(agent.generate_with("Capital of France?", thread())).unwrap();
    let mut again = saved(&store);
    again.push(Message::user("And of Italy?"));
    block_on(agent.generate_with(again, thread())).unwrap();
    assert_eq!(
        texts(&model.requests()[1].prompt),
        ["Capital of France?", "Paris.", "And of Italy?"]
    );
}

#[test]
fn without_memory_loaded_nothing_is_removed() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(MemoryInputFilter::new())
        .build()
        .unwrap();
    let history = vec![
        Message::user("a"),
        Message::assistant("b"),
        Message::user("c"),
    ];
    block_on(agent.generate(history)).unwrap();
    assert_eq!(texts(&model.requests()[0].prompt), ["a", "b", "c"]);
}
