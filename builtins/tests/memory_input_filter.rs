//! MemoryInputFilter (behaviour 87 of docs/builtins.md): history sent again while memory
//! loads it reaches the model, and the store, once.

mod common;

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
    // A client's history that differs from memory's is kept from where it differs.
    let edited = vec![
        Message::user("yes"),
        Message::assistant("Sure, edited."),
        Message::user("yes"),
        Message::user("go on"),
    ];
    block_on(agent.generate_with(edited, thread())).unwrap();
    let sent = texts(&model.requests()[2].prompt);
    assert_eq!(
        &sent[sent.len() - 3..],
        ["Sure, edited.", "yes", "go on"],
        "{sent:?}"
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
