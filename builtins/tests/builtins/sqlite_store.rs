//! What the SQLite store adds to the conformance suite: the file outlives the store, its
//! schema is versioned, bad files and bad rows are clear errors, and two stores on one file
//! (two processes, say) running many turns at once save every turn whole.

use futures::executor::block_on;
use processors_builtins::storage::{SCHEMA_VERSION, SqliteMemory, SqliteStore};
use processors_runtime::memory::{MemoryStore, Thread};
use processors_runtime::message::{Message, Role};
use processors_runtime::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh database path in the temporary directory.
fn temp_db() -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("processors-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{}.db", N.fetch_add(1, Ordering::Relaxed)))
}

fn ada(thread: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, "ada"))
}

#[test]
fn a_conversation_outlives_the_store_and_is_there_when_the_file_is_opened_again() {
    let path = temp_db();
    {
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::text("Noted: blue.")]))
            .memory(Memory::sqlite(&path).unwrap())
            .build()
            .unwrap();
        block_on(agent.generate_with("My favourite colour is blue.", ada("t-1"))).unwrap();
    }
    let model = ScriptedModel::new([Turn::text("Blue.")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::sqlite(&path).unwrap())
        .build()
        .unwrap();
    block_on(agent.generate_with("What is my favourite colour?", ada("t-1"))).unwrap();
    let prompt: Vec<String> = model.requests()[0]
        .prompt
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        prompt,
        [
            "My favourite colour is blue.",
            "Noted: blue.",
            "What is my favourite colour?"
        ]
    );
}

#[test]
fn the_schema_version_is_recorded_once_and_opening_again_migrates_nothing() {
    let path = temp_db();
    drop(SqliteStore::open(&path).unwrap());
    drop(SqliteStore::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<i64> = raw
        .prepare("SELECT version FROM schema_version ORDER BY version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

#[test]
fn a_version_1_database_is_migrated_and_keeps_its_conversations() {
    let path = temp_db();
    {
        // A database as version 1 wrote it: threads and messages, no working memory.
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version (version) VALUES (1);
             CREATE TABLE threads (id TEXT PRIMARY KEY, resource_id TEXT NOT NULL, title TEXT,
                 created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, metadata TEXT);
             CREATE TABLE messages (seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 id TEXT NOT NULL UNIQUE, thread_id TEXT, resource_id TEXT,
                 created_at INTEGER NOT NULL, body TEXT NOT NULL);
             INSERT INTO threads VALUES ('t-1', 'ada', NULL, 1, 1, NULL);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert!(block_on(store.get_thread("t-1")).unwrap().is_some());
    assert_eq!(
        block_on(store.get_working_memory("resource:ada")).unwrap(),
        None
    );
    block_on(store.set_working_memory("resource:ada", "- name: Ada".into())).unwrap();
    assert_eq!(
        block_on(store.get_working_memory("resource:ada"))
            .unwrap()
            .as_deref(),
        Some("- name: Ada")
    );
}

/// Takes the messages table back to its shape before schema 6: no `turn`.
const TO_VERSION_5_MESSAGES: &str = "DROP INDEX messages_by_thread;
     DROP INDEX messages_by_resource;
     ALTER TABLE messages DROP COLUMN turn;
     CREATE INDEX messages_by_thread ON messages (thread_id, seq);
     CREATE INDEX messages_by_resource ON messages (resource_id, seq);";

#[test]
fn a_version_5_database_keeps_its_order_and_places_a_resumed_turn_with_its_input() {
    let path = temp_db();
    {
        drop(SqliteStore::open(&path).unwrap());
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(&format!(
            "DELETE FROM schema_version WHERE version > 5; {TO_VERSION_5_MESSAGES}"
        ))
        .unwrap();
    }
    let message = |id: &str| {
        let mut m = Message::user(id);
        m.id = id.into();
        m.thread_id = Some("t-1".into());
        m.resource_id = Some("ada".into());
        m
    };
    {
        // Messages saved as version 5 saved them.
        let raw = rusqlite::Connection::open(&path).unwrap();
        for id in ["old-1", "paused-input", "old-2"] {
            let body = serde_json::to_string(&message(id)).unwrap();
            raw.execute(
                "INSERT INTO messages (id, thread_id, resource_id, created_at, body)
                 VALUES (?1, 't-1', 'ada', 1, ?2)",
                [id, body.as_str()],
            )
            .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    let thread = Thread {
        id: "t-1".into(),
        resource_id: "ada".into(),
        title: None,
        created_at: 1,
        updated_at: 1,
        metadata: None,
    };
    let resumed = vec![message("paused-input"), message("answer")];
    block_on(store.save_turn(thread.clone(), resumed)).unwrap();
    block_on(store.save_turn(thread, vec![message("new")])).unwrap();
    let listed: Vec<String> = block_on(store.list_messages("t-1", None))
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(listed, ["old-1", "paused-input", "answer", "old-2", "new"]);
}

#[test]
fn a_version_4_database_lists_the_runs_it_paused_by_their_thread() {
    let path = temp_db();
    {
        // Opened at version 4, then a run kept as version 4 kept it: no thread column.
        drop(SqliteStore::open(&path).unwrap());
        let raw = rusqlite::Connection::open(&path).unwrap();
        raw.execute_batch(&format!(
            "DROP TABLE paused_runs;
             DELETE FROM schema_version WHERE version > 4;
             {TO_VERSION_5_MESSAGES}
             CREATE TABLE paused_runs (run_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL,
                 body TEXT NOT NULL);
             INSERT INTO paused_runs VALUES ('run-1', 5,
                 '{{\"thread_id\": \"t-1\", \"resource_id\": \"ada\"}}');"
        ))
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let listed = block_on(store.list_paused_runs(Some("t-1"), Some("ada"))).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, "run-1");
    assert_eq!(listed[0].thread_id.as_deref(), Some("t-1"));
}

#[test]
fn the_database_is_in_wal_mode() {
    let path = temp_db();
    let _store = SqliteStore::open(&path).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_database_of_a_newer_schema_is_refused_with_a_clear_error() {
    let path = temp_db();
    drop(SqliteStore::open(&path).unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute("INSERT INTO schema_version (version) VALUES (99)", [])
        .unwrap();
    drop(raw);
    let err = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        err.contains(&format!(
            "its schema is version 99, newer than this build's {SCHEMA_VERSION}"
        )),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let path = temp_db();
    std::fs::write(&path, "these are not the pages of a database ".repeat(200)).unwrap();
    let err = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("not a database"), "{err}");
}

#[test]
fn a_stored_message_that_no_longer_parses_is_an_error_naming_it() {
    let path = temp_db();
    let store = SqliteStore::open(&path).unwrap();
    let mut m = Message::user("hello");
    m.thread_id = Some("t-1".into());
    m.resource_id = Some("ada".into());
    let id = m.id.clone();
    block_on(store.save_messages(vec![m])).unwrap();
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute(
        "UPDATE messages SET body = '{\"id\": 3' WHERE id = ?1",
        [&id],
    )
    .unwrap();
    let err = block_on(store.list_messages("t-1", None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("stored message `{id}` is not a valid message")),
        "{err}"
    );
}

#[test]
fn two_stores_on_one_file_running_32_turns_at_once_save_every_turn_whole() {
    let path = temp_db();
    // Two connections to one file, as two processes would have.
    let stores = [
        SqliteStore::open(&path).unwrap(),
        SqliteStore::open(&path).unwrap(),
    ];
    let runs: Vec<_> = (0..32)
        .map(|i| {
            let store = stores[i % 2].clone();
            std::thread::spawn(move || {
                let agent = Agent::builder()
                    .model(ScriptedModel::new([Turn::text(format!("answer {i}"))]))
                    .memory(Memory::new(store))
                    .build()
                    .unwrap();
                // Four threads of conversation, eight turns each, from both stores.
                let thread = format!("t-{}", i % 4);
                block_on(agent.generate_with(format!("question {i}"), ada(&thread))).unwrap();
            })
        })
        .collect();
    for run in runs {
        run.join().unwrap();
    }
    for t in 0..4 {
        let messages = block_on(stores[0].list_messages(&format!("t-{t}"), None)).unwrap();
        assert_eq!(messages.len(), 16, "thread t-{t}");
        // Whole turns, one after another: a question, then its own answer.
        for pair in messages.chunks(2) {
            let question = pair[0].text();
            let n = question.strip_prefix("question ").unwrap();
            assert_eq!(pair[1].text(), format!("answer {n}"), "thread t-{t}");
        }
    }
}
