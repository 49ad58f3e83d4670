//! `WorkingMemory` on an agent: the model updates the scratchpad through its tool, the next
//! step and the next runs see it, and no resource ever sees another's.

use futures::executor::block_on;
use futures::future::BoxFuture;
use processors_builtins::storage::SqliteStore;
use processors_builtins::working_memory::{
    UPDATE_WORKING_MEMORY, WORKING_MEMORY_TAG, WorkingMemory,
};
use processors_runtime::memory::{
    MemoryError, MemoryStore, Thread, WorkingMemoryScope, working_memory_key,
};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;

fn as_(thread: &str, resource: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, resource))
}

fn update(call: &str, memory: &str) -> Turn {
    Turn::empty().tool_call(call, UPDATE_WORKING_MEMORY, json!({ "memory": memory }))
}

/// The system messages of the model's `i`-th request.
fn system(model: &ScriptedModel, i: usize) -> String {
    model.requests()[i]
        .prompt
        .iter()
        .filter(|m| m.role == Role::System)
        .map(Message::text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn offered(model: &ScriptedModel, i: usize) -> Vec<String> {
    model.requests()[i]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect()
}

fn bi_31_the_models_update_reaches_the_next_step_and_the_next_run(store: Arc<dyn MemoryStore>) {
    let model = ScriptedModel::new([
        update("c1", "- name: Ada\n- drinks: tea"),
        Turn::text("Noted, Ada."),
        Turn::text("You drink tea."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::shared(store.clone()))
        .input(WorkingMemory::shared(store.clone()))
        .build()
        .unwrap();
    let r = block_on(agent.generate_with("I am Ada and I drink tea.", as_("t-1", "ada"))).unwrap();
    assert!(!r.tool_results[0].is_error, "{:?}", r.tool_results[0]);
    assert_eq!(offered(&model, 0), [UPDATE_WORKING_MEMORY]);
    assert!(!system(&model, 0).contains("drinks: tea"));
    // The step after the call sees the new memory.
    assert!(system(&model, 1).contains("<working_memory>\n- name: Ada\n- drinks: tea\n"));
    let key = working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1");
    assert_eq!(
        block_on(store.get_working_memory(&key)).unwrap().as_deref(),
        Some("- name: Ada\n- drinks: tea")
    );

    // The next run, in the same thread, carries it; the memory is never saved as a message.
    block_on(agent.generate_with("What do I drink?", as_("t-1", "ada"))).unwrap();
    assert!(system(&model, 2).contains("- drinks: tea"));
    let saved = block_on(store.list_messages("t-1", None)).unwrap();
    assert!(saved.iter().all(|m| m.role != Role::System));
    assert!(saved.iter().all(|m| !m.text().contains("working memory")));
}

#[test]
fn bi_31_the_models_update_reaches_the_next_step_and_the_next_run_in_memory() {
    bi_31_the_models_update_reaches_the_next_step_and_the_next_run(Arc::new(InMemoryStore::new()));
}

#[test]
fn bi_31_the_models_update_reaches_the_next_step_and_the_next_run_sqlite() {
    bi_31_the_models_update_reaches_the_next_step_and_the_next_run(Arc::new(
        SqliteStore::in_memory().unwrap(),
    ));
}

#[test]
fn bi_32_a_resources_working_memory_spans_its_threads_and_no_other_resource_sees_it() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([
        update("c1", "- name: Ada"),
        Turn::text("Hello Ada."),
        Turn::text("You are Ada."),
        Turn::text("I do not know you."),
        update("c2", "- name: Bob"),
        Turn::text("Hello Bob."),
        Turn::text("You are Ada."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(WorkingMemory::new(store.clone()))
        .build()
        .unwrap();
    block_on(agent.generate_with("I am Ada.", as_("t-1", "ada"))).unwrap();
    // Another thread of Ada's.
    block_on(agent.generate_with("Who am I?", as_("t-2", "ada"))).unwrap();
    assert!(system(&model, 2).contains("- name: Ada"));
    // Bob, even in a thread of the same id, sees none of it.
    block_on(agent.generate_with("Who am I?", as_("t-1", "bob"))).unwrap();
    assert!(!system(&model, 3).contains("Ada"), "{}", system(&model, 3));
    assert!(system(&model, 3).contains("Nothing is kept yet."));
    // Bob's update leaves Ada's memory as it was.
    block_on(agent.generate_with("I am Bob.", as_("t-1", "bob"))).unwrap();
    block_on(agent.generate_with("Who am I?", as_("t-1", "ada"))).unwrap();
    let ada = system(&model, 6);
    assert!(ada.contains("- name: Ada") && !ada.contains("Bob"), "{ada}");
    let key = |r| working_memory_key(WorkingMemoryScope::Resource, r, "t-1");
    assert_eq!(
        block_on(store.get_working_memory(&key("bob")))
            .unwrap()
            .as_deref(),
        Some("- name: Bob")
    );
}

#[test]
fn bi_33_with_thread_scope_each_thread_has_its_own_working_memory() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([
        update("c1", "- topic: invoices"),
        Turn::text("Noted."),
        Turn::text("Which topic?"),
        Turn::text("Invoices."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(WorkingMemory::new(store.clone()).scope(WorkingMemoryScope::Thread))
        .build()
        .unwrap();
    block_on(agent.generate_with("Let us talk invoices.", as_("t-1", "ada"))).unwrap();
    block_on(agent.generate_with("What is the topic?", as_("t-2", "ada"))).unwrap();
    assert!(!system(&model, 2).contains("invoices"));
    assert!(system(&model, 2).contains("notes about this conversation"));
    block_on(agent.generate_with("What is the topic?", as_("t-1", "ada"))).unwrap();
    assert!(system(&model, 3).contains("- topic: invoices"));
    let resource = working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1");
    assert_eq!(block_on(store.get_working_memory(&resource)).unwrap(), None);
}

#[test]
fn bi_34_the_template_is_shown_while_the_memory_is_empty() {
    let template = "# User\n- Name:\n- Favourite drink:";
    let model = ScriptedModel::new([
        update("c1", "# User\n- Name: Ada\n- Favourite drink:"),
        Turn::text("Hello Ada."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(WorkingMemory::new(InMemoryStore::new()).template(template))
        .build()
        .unwrap();
    block_on(agent.generate_with("I am Ada.", as_("t-1", "ada"))).unwrap();
    let first = system(&model, 0);
    assert!(
        first.contains(&format!(
            "<working_memory_template>\n{template}\n</working_memory_template>"
        )),
        "{first}"
    );
    let second = system(&model, 1);
    assert!(second.contains("- Name: Ada"), "{second}");
    assert!(!second.contains("<working_memory_template>"), "{second}");
    // One working-memory message per step, never one per step so far.
    let tagged = model.requests()[1]
        .prompt
        .iter()
        .filter(|m| m.text().contains("You have a working memory"))
        .count();
    assert_eq!(tagged, 1);
}

#[test]
fn bi_35_without_a_thread_nothing_is_added_and_the_agents_tools_are_kept() {
    let clock = tool(
        "clock",
        "The time.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("12:00")) },
    );
    let model = ScriptedModel::new([Turn::text("hi"), Turn::text("hi")]);
    let agent = Agent::builder()
        .model(model.clone())
        .instructions("Be brief.")
        .tool(clock)
        .input(WorkingMemory::new(InMemoryStore::new()))
        .build()
        .unwrap();
    block_on(agent.generate("hello")).unwrap();
    assert_eq!(offered(&model, 0), ["clock"]);
    assert_eq!(system(&model, 0), "Be brief.");

    block_on(agent.generate_with("hello", as_("t-1", "ada"))).unwrap();
    assert_eq!(offered(&model, 1), ["clock", UPDATE_WORKING_MEMORY]);
    let prompt = &model.requests()[1].prompt;
    assert_eq!(prompt[0].text(), "Be brief.");
    assert!(prompt[1].text().starts_with("You have a working memory"));
    assert_eq!(WORKING_MEMORY_TAG, "working-memory");
}

#[test]
fn bi_36_an_update_without_text_is_a_tool_error_and_keeps_nothing() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", UPDATE_WORKING_MEMORY, json!({ "notes": "x" })),
        Turn::text("Sorry."),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(WorkingMemory::new(store.clone()))
        .build()
        .unwrap();
    let r = block_on(agent.generate_with("I am Ada.", as_("t-1", "ada"))).unwrap();
    assert!(r.tool_results[0].is_error);
    assert!(
        r.tool_results[0]
            .result
            .to_string()
            .contains("give `memory`"),
        "{}",
        r.tool_results[0].result
    );
    let key = working_memory_key(WorkingMemoryScope::Resource, "ada", "t-1");
    assert_eq!(block_on(store.get_working_memory(&key)).unwrap(), None);
}

/// A store that keeps threads and messages but no working memory (the trait's default).
struct NoWorkingMemory(InMemoryStore);

impl MemoryStore for NoWorkingMemory {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        self.0.get_thread(thread_id)
    }
    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.0.save_thread(thread)
    }
    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.0.list_messages(thread_id, limit)
    }
    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        self.0.list_messages_by_resource(resource_id)
    }
    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.0.save_messages(messages)
    }
    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.0.delete_messages(ids)
    }
}

#[test]
fn bi_37_a_store_without_working_memory_fails_the_run_with_a_clear_error() {
    let store = NoWorkingMemory(InMemoryStore::new());
    let err = block_on(store.set_working_memory("resource:ada", "x".into())).unwrap_err();
    assert!(
        err.to_string().contains("does not keep working memory"),
        "{err}"
    );
    let model = ScriptedModel::new([Turn::text("hi")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(WorkingMemory::new(store))
        .build()
        .unwrap();
    let err = block_on(agent.generate_with("hello", as_("t-1", "ada"))).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("working-memory"), "{text}");
    assert!(model.requests().is_empty());
}
