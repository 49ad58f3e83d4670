//! What the PostgreSQL store adds to the conformance suite, on a real server
//! (`scripts/services.sh` starts it): two pools (two processes) running 32 turns of four
//! threads at once save every turn whole; a schema a newer version wrote is refused; runs
//! paused under schema 4 are listed by their thread after the migration; a
//! connection killed during a run fails the run cleanly, with nothing of the turn written,
//! and the next run works.
#![cfg(feature = "postgres")]

mod services;

use processors_builtins::storage::{POSTGRES_SCHEMA_VERSION, PostgresStore};
use processors_runtime::memory::{MemoryStore, Thread};
use processors_runtime::message::Message;
use processors_runtime::prelude::*;

fn ada(thread: &str) -> GenerateOptions {
    GenerateOptions::new().request_context(RequestContext::new().with_thread(thread, "ada"))
}

async fn store(url: &str, schema: &str) -> PostgresStore {
    PostgresStore::builder(url)
        .schema(schema)
        .max_connections(8)
        .connect()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pools_running_32_turns_at_once_save_every_turn_whole() {
    let Some(url) = services::postgres_url() else {
        return;
    };
    let schema = services::unique("turns");
    let stores = [store(&url, &schema).await, store(&url, &schema).await];
    let mut runs = Vec::new();
    for i in 0..32 {
        let store = stores[i % 2].clone();
        runs.push(tokio::spawn(async move {
            let agent = Agent::builder()
                .model(ScriptedModel::new([Turn::text(format!("answer {i}"))]))
                .memory(Memory::new(store))
                .build()
                .unwrap();
            let thread = format!("t-{}", i % 4);
            agent
                .generate_with(format!("question {i}"), ada(&thread))
                .await
                .unwrap();
        }));
    }
    for run in runs {
        run.await.unwrap();
    }
    for t in 0..4 {
        let messages = stores[1]
            .list_messages(&format!("t-{t}"), None)
            .await
            .unwrap();
        assert_eq!(messages.len(), 16, "thread t-{t}");
        for pair in messages.chunks(2) {
            let n = pair[0].text().strip_prefix("question ").unwrap().to_owned();
            assert_eq!(pair[1].text(), format!("answer {n}"), "thread t-{t}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_paused_under_schema_4_are_listed_by_their_thread_after_the_migration() {
    let Some(url) = services::postgres_url() else {
        return;
    };
    let schema = services::unique("paused-v4");
    drop(store(&url, &schema).await);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // Back to schema 4: the table without its thread and resource, and a run kept then;
    // messages without their turn, and two saved then.
    let message = |id: &str| {
        let mut m = Message::user(id);
        m.id = id.into();
        m.thread_id = Some("t-1".into());
        m.resource_id = Some("ada".into());
        m
    };
    let body = |id: &str| {
        serde_json::to_string(&message(id))
            .unwrap()
            .replace('\'', "''")
    };
    let (p, o) = (body("paused-input"), body("old"));
    client
        .batch_execute(&format!(
            "DROP TABLE \"{schema}\".paused_runs;
             DELETE FROM \"{schema}\".schema_version WHERE version > 4;
             ALTER TABLE \"{schema}\".messages DROP COLUMN turn;
             INSERT INTO \"{schema}\".messages (id, thread_id, resource_id, created_at, body)
                 VALUES ('paused-input', 't-1', 'ada', 1, '{p}'), ('old', 't-1', 'ada', 1, '{o}');
             CREATE TABLE \"{schema}\".paused_runs (run_id TEXT PRIMARY KEY,
                 expires_at BIGINT NOT NULL, body TEXT NOT NULL);
             INSERT INTO \"{schema}\".paused_runs VALUES ('run-1', 5,
                 '{{\"thread_id\": \"t-1\", \"resource_id\": \"ada\"}}');"
        ))
        .await
        .unwrap();
    let store = store(&url, &schema).await;
    let listed = store
        .list_paused_runs(Some("t-1"), Some("ada"))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, "run-1");
    assert_eq!(listed[0].resource_id.as_deref(), Some("ada"));
    let thread = Thread {
        id: "t-1".into(),
        resource_id: "ada".into(),
        title: None,
        created_at: 1,
        updated_at: 1,
        metadata: None,
    };
    store
        .save_turn(thread, vec![message("paused-input"), message("answer")])
        .await
        .unwrap();
    let texts: Vec<String> = store
        .list_messages("t-1", None)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["paused-input", "answer", "old"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_of_a_newer_version_is_refused_and_one_migration_is_recorded() {
    let Some(url) = services::postgres_url() else {
        return;
    };
    let schema = services::unique("newer");
    drop(store(&url, &schema).await);
    drop(store(&url, &schema).await);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let versions: Vec<i32> = client
        .query(
            &format!("SELECT version FROM \"{schema}\".schema_version ORDER BY version"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=POSTGRES_SCHEMA_VERSION).collect::<Vec<_>>());
    client
        .execute(
            &format!("INSERT INTO \"{schema}\".schema_version (version) VALUES (99)"),
            &[],
        )
        .await
        .unwrap();
    let err = PostgresStore::builder(&url)
        .schema(&schema)
        .connect()
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "schema `{schema}` is version 99, newer than this build's {POSTGRES_SCHEMA_VERSION}"
        )),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_killed_in_the_middle_of_saving_a_turn_leaves_none_of_it_and_the_next_run_works()
 {
    let Some(url) = services::postgres_url() else {
        return;
    };
    let schema = services::unique("killed");
    let store = store(&url, &schema).await;
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // The server kills the connection that inserts an answer saying "self-destruct": after
    // the thread and the question were written in the same transaction, as a crash or a cut
    // network would.
    admin
        .batch_execute(&format!(
            "CREATE FUNCTION \"{schema}\".die() RETURNS trigger AS $$
             BEGIN
                 IF NEW.body LIKE '%self-destruct%' THEN
                     PERFORM pg_terminate_backend(pg_backend_pid());
                 END IF;
                 RETURN NEW;
             END $$ LANGUAGE plpgsql;
             CREATE TRIGGER die BEFORE INSERT ON \"{schema}\".messages
                 FOR EACH ROW EXECUTE FUNCTION \"{schema}\".die();"
        ))
        .await
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::text("self-destruct"),
            Turn::text("all good"),
        ]))
        .memory(Memory::new(store.clone()))
        .build()
        .unwrap();
    let err = agent.generate_with("hi", ada("t-1")).await.unwrap_err();
    assert!(err.to_string().contains("PostgreSQL store"), "{err}");
    assert_eq!(store.get_thread("t-1").await.unwrap(), None);
    assert!(store.list_messages("t-1", None).await.unwrap().is_empty());

    // The pool replaces the dead connection: the next run saves its turn.
    agent.generate_with("hi again", ada("t-1")).await.unwrap();
    let saved: Vec<String> = store
        .list_messages("t-1", None)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(saved, ["hi again", "all good"]);
}
