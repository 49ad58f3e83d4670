//! EditorContext (behaviour 85 of docs/builtins.md): the editor's state with the user's
//! message, only when it changed, from a typed value or JSON, and its limits.

use crate::common;

use common::{saved, thread};
use futures::executor::block_on;
use processors_builtins::EditorContext;
use processors_builtins::editor_context::{Cursor, EDITOR_KEY, EditorState};
use processors_runtime::prelude::*;
use serde_json::json;

fn state(file: &str, line: u32) -> EditorState {
    EditorState {
        active_file: Some(file.into()),
        cursor: Some(Cursor { line, column: 1 }),
        ..EditorState::default()
    }
}

fn with_state(state: EditorState) -> GenerateOptions {
    let cx = RequestContext::new()
        .with_thread("thread-1", "user-1")
        .with(state);
    GenerateOptions::new().request_context(cx)
}

#[test]
fn bi_85_the_state_is_given_when_it_changed_and_saved_with_the_message() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(EditorContext::new())
        .build()
        .unwrap();
    let last_sent = || {
        let requests = model.requests();
        requests.last().unwrap().prompt.last().unwrap().text()
    };
    block_on(agent.generate_with("what is this?", with_state(state("a.rs", 3)))).unwrap();
    let first = "<editor>\nactive file: a.rs\ncursor: line 3, column 1\n</editor>";
    assert_eq!(last_sent(), format!("{first}\n\nwhat is this?"));

    // The same state: the model has it in the history.
    block_on(agent.generate_with("and this?", with_state(state("a.rs", 3)))).unwrap();
    assert_eq!(last_sent(), "and this?");

    // Moved: the new state, whole.
    block_on(agent.generate_with("now?", with_state(state("a.rs", 9)))).unwrap();
    assert_eq!(
        last_sent(),
        "<editor>\nactive file: a.rs\ncursor: line 9, column 1\n</editor>\n\nnow?"
    );
    // No state this time: nothing added.
    block_on(agent.generate_with("bye", thread())).unwrap();
    assert_eq!(last_sent(), "bye");

    let texts: Vec<String> = saved(&store)
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect();
    assert_eq!(texts[0], format!("{first}\n\nwhat is this?"));
    assert_eq!(texts[1], "and this?");
}

#[test]
fn a_client_that_sends_the_history_itself_is_read_the_same_way() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(EditorContext::new())
        .build()
        .unwrap();
    let given = "<editor>\nactive file: a.rs\ncursor: line 3, column 1\n</editor>";
    let history = vec![
        Message::user(format!("{given}\n\nwhat is this?")),
        Message::assistant("a file"),
        Message::user("and this?"),
    ];
    block_on(agent.generate_with(history, with_state(state("a.rs", 3)))).unwrap();
    assert_eq!(model.requests()[0].prompt[2].text(), "and this?");
}

#[test]
fn the_state_may_come_as_json_in_either_case() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(EditorContext::new())
        .build()
        .unwrap();
    let send = |value: serde_json::Value| {
        let cx = RequestContext::new().with_value(EDITOR_KEY, value);
        block_on(agent.generate_with("hi", GenerateOptions::new().request_context(cx))).unwrap();
        model.requests().last().unwrap().prompt[0].text()
    };
    let expected = "<editor>\nactive file: b.rs\ncursor: line 2, column 5\nselected text:\nlet x\nopen files: c.rs\n</editor>\n\nhi";
    assert_eq!(
        send(
            json!({ "activeFile": "b.rs", "cursor": { "line": 2, "character": 5 }, "selectedText": "let x", "openFiles": ["c.rs"] })
        ),
        expected
    );
    assert_eq!(
        send(
            json!({ "active_file": "b.rs", "cursor": { "line": 2, "column": 5 }, "selected_text": "let x\n", "open_files": ["c.rs"] })
        ),
        expected
    );
    // Not a state (an unknown field, a wrong type), or an empty one: nothing is added.
    assert_eq!(send(json!({ "file": "b.rs" })), "hi");
    assert_eq!(send(json!({ "cursor": "top" })), "hi");
    assert_eq!(send(json!({})), "hi");
}

#[test]
fn a_long_selection_is_cut_and_many_open_files_are_counted() {
    let editor = EditorContext::new().max_selection(5);
    let state = EditorState {
        selected_text: Some("abcdefgh".into()),
        open_files: (0..23).map(|i| format!("f{i}")).collect(),
        ..EditorState::default()
    };
    let text = editor.render(&state).unwrap();
    let files: Vec<String> = (0..20).map(|i| format!("f{i}")).collect();
    assert_eq!(
        text,
        format!(
            "<editor>\nselected text:\nabcde\n[3 more characters selected]\nopen files: {} and 3 more\n</editor>",
            files.join(", ")
        )
    );
    let without = EditorContext::new()
        .max_selection(0)
        .render(&state)
        .unwrap();
    assert!(!without.contains("selected"), "{without}");
    assert_eq!(EditorContext::new().render(&EditorState::default()), None);
}

#[test]
fn a_message_without_text_gets_the_state_as_its_first_part() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(EditorContext::new())
        .build()
        .unwrap();
    let mut message = Message::user("");
    message.content.parts = vec![Part::File {
        mime_type: "image/png".into(),
        data: "aGk=".into(),
    }];
    block_on(agent.generate_with(vec![message], with_state(state("a.rs", 1)))).unwrap();
    let parts = &model.requests()[0].prompt[0].content.parts;
    assert!(matches!(&parts[0], Part::Text { text } if text.starts_with("<editor>")));
    assert!(matches!(&parts[1], Part::File { .. }));
}

#[test]
fn a_selection_that_holds_the_closing_tag_is_still_recognised() {
    let model = ScriptedModel::cycle([Turn::text("ok")]);
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store))
        .input(EditorContext::new())
        .build()
        .unwrap();
    let editing = EditorState {
        active_file: Some("editor_context.rs".into()),
        selected_text: Some("const CLOSING: &str = \"</editor>\";\nmore".into()),
        ..EditorState::default()
    };
    block_on(agent.generate_with("what is this?", with_state(editing.clone()))).unwrap();
    block_on(agent.generate_with("and now?", with_state(editing))).unwrap();
    let requests = model.requests();
    assert_eq!(requests[1].prompt.last().unwrap().text(), "and now?");
}
