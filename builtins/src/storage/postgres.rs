//! [`PostgresStore`]: threads, messages and working memory in PostgreSQL, shared by every process that
//! connects.

use deadpool_postgres::{Pool, Runtime};
use futures::future::BoxFuture;
use processors_runtime::memory::{
    MemoryError, MemoryStore, MessageEmbedding, PausedRunRecord, SimilarMessage, Thread,
    top_k_similar,
};
use processors_runtime::message::Message;
use std::sync::Arc;
use tokio_postgres::NoTls;

/// The schema version this build writes (the same numbering as the SQLite store's).
pub const POSTGRES_SCHEMA_VERSION: i32 = 6;

/// The migrations, in order; `{s}` is the schema's quoted name.
const MIGRATIONS: &[&str] = &[
    // 1: threads, and their messages in the order they were first saved.
    "CREATE TABLE {s}.threads (
        id TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL,
        title TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        metadata TEXT
    );
    CREATE INDEX ON {s}.threads (resource_id);
    CREATE TABLE {s}.messages (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        thread_id TEXT,
        resource_id TEXT,
        created_at BIGINT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX ON {s}.messages (thread_id, seq);
    CREATE INDEX ON {s}.messages (resource_id, seq);",
    // 2: working memory, one text per scope key (a resource's or a thread's).
    "CREATE TABLE {s}.working_memory (
        scope_key TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_at BIGINT NOT NULL
    );",
    // 3: message embeddings for semantic recall, searched by resource.
    "CREATE TABLE {s}.message_embeddings (
        seq BIGSERIAL PRIMARY KEY,
        message_id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        vector REAL[] NOT NULL
    );
    CREATE INDEX ON {s}.message_embeddings (resource_id, seq);",
    // 4: runs paused for approval, by run id, as JSON, until they are resumed or expire.
    "CREATE TABLE {s}.paused_runs (
        run_id TEXT PRIMARY KEY,
        expires_at BIGINT NOT NULL,
        body TEXT NOT NULL
    );",
    // 5: paused runs by thread and resource, to list a conversation's (those kept before
    // read from their JSON).
    "ALTER TABLE {s}.paused_runs ADD COLUMN thread_id TEXT, ADD COLUMN resource_id TEXT;
    UPDATE {s}.paused_runs SET thread_id = body::jsonb ->> 'thread_id',
        resource_id = body::jsonb ->> 'resource_id';
    CREATE INDEX ON {s}.paused_runs (thread_id, expires_at);
    CREATE INDEX ON {s}.paused_runs (resource_id, expires_at);",
    // 6: messages listed turn by turn: `turn` is the `seq` of the first message its turn
    // saved, so a resumed turn's answer joins the input it saved when it paused (each
    // message saved before is a turn of its own).
    "ALTER TABLE {s}.messages ADD COLUMN turn BIGINT;
    UPDATE {s}.messages SET turn = seq;
    DROP INDEX IF EXISTS {s}.messages_thread_id_seq_idx;
    DROP INDEX IF EXISTS {s}.messages_resource_id_seq_idx;
    CREATE INDEX ON {s}.messages (thread_id, turn, seq);
    CREATE INDEX ON {s}.messages (resource_id, turn, seq);",
];

/// A paused run's row (`run_id, thread_id, resource_id, expires_at, body`).
fn paused_run(r: &tokio_postgres::Row) -> PausedRunRecord {
    PausedRunRecord {
        run_id: r.get(0),
        thread_id: r.get(1),
        resource_id: r.get(2),
        expires_at: from_sql(r.get(3)),
        data: r.get(4),
    }
}

/// A [`MemoryStore`] in PostgreSQL, for several processes (several machines) sharing
/// conversations. Needs a Tokio runtime.
///
/// - **Pool**: connections come from a pool (16 by default,
///   [`max_connections`](PostgresStoreBuilder::max_connections)); clones share it. A
///   connection is checked before each use, so one the server dropped (a restart, a cut
///   network) fails no call after the one it was serving.
/// - **Schema**: its tables live in a schema of their own (`processors` unless
///   [`schema`](PostgresStoreBuilder::schema) names another), versioned in a
///   `schema_version` table; [`connect`](PostgresStoreBuilder::connect) migrates it under an
///   advisory lock, so processes starting together migrate once, and refuses a schema a newer
///   version wrote.
/// - **Whole turns**: a turn ([`MemoryStore::save_turn`]) is one transaction that locks its
///   thread's row first: two processes saving turns of one thread at once save one after the
///   other, and a thread's messages read as whole turns, never interleaved; a refused message
///   or a lost connection leaves none of the turn.
/// - **Working memory**: one row per scope key ([`MemoryStore::set_working_memory`]),
///   replaced by each write.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use processors::builtins::storage::PostgresStore;
/// use processors::prelude::*;
///
/// let store = PostgresStore::builder("postgres://app@db.internal/app")
///     .max_connections(32)
///     .connect()
///     .await?;
/// let memory = Memory::new(store);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    sql: Arc<Sql>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.sql.schema)
            .field("pool", &self.pool.status())
            .finish()
    }
}

/// Configures a [`PostgresStore`].
#[derive(Debug, Clone)]
#[must_use]
pub struct PostgresStoreBuilder {
    url: String,
    schema: String,
    max_connections: usize,
}

impl PostgresStoreBuilder {
    /// Keeps the tables in this schema (created when missing; default `processors`).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The most connections the pool opens (at least 1; default 16).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Connects, and creates or migrates the schema.
    pub async fn connect(self) -> Result<PostgresStore, MemoryError> {
        let config: tokio_postgres::Config = self
            .url
            .parse()
            .map_err(|e| fail("the connection URL is invalid", e))?;
        let manager = deadpool_postgres::Manager::from_config(
            config,
            NoTls,
            deadpool_postgres::ManagerConfig {
                // A connection the server dropped (a restart, a cut network) is found out
                // when it comes back to the pool, not by the next call that uses it: one
                // round trip per call, for calls that never fail on a dead connection.
                recycling_method: deadpool_postgres::RecyclingMethod::Verified,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(self.max_connections)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| fail("cannot build the connection pool", e))?;
        let store = PostgresStore {
            pool,
            sql: Arc::new(Sql::new(&self.schema)),
        };
        store.migrate().await?;
        Ok(store)
    }
}

/// The statements, with the schema's name in them.
struct Sql {
    schema: String,
    quoted: String,
    get_thread: String,
    upsert_thread: String,
    owner: String,
    update: String,
    insert: String,
    own_turn: String,
    list: String,
    by_resource: String,
    delete: String,
    get_working: String,
    set_working: String,
    save_paused: String,
    take_paused: String,
    list_paused: String,
    embedding_owner: String,
    upsert_embedding: String,
    embeddings: String,
}

impl Sql {
    fn new(schema: &str) -> Self {
        let s = format!("\"{}\"", schema.replace('"', "\"\""));
        Sql {
            schema: schema.to_owned(),
            get_thread: format!(
                "SELECT resource_id, title, created_at, updated_at, metadata FROM {s}.threads WHERE id = $1"
            ),
            upsert_thread: format!(
                "INSERT INTO {s}.threads (id, resource_id, title, created_at, updated_at, metadata)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id,
                     title = excluded.title, updated_at = excluded.updated_at,
                     metadata = excluded.metadata"
            ),
            owner: format!("SELECT thread_id, resource_id, turn FROM {s}.messages WHERE id = $1"),
            update: format!("UPDATE {s}.messages SET created_at = $2, body = $3 WHERE id = $1"),
            insert: format!(
                "INSERT INTO {s}.messages (id, thread_id, resource_id, created_at, body, turn)
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq"
            ),
            own_turn: format!("UPDATE {s}.messages SET turn = seq WHERE seq = $1"),
            list: format!(
                "SELECT id, body FROM (
                     SELECT turn, seq, id, body FROM {s}.messages WHERE thread_id = $1
                     ORDER BY turn DESC, seq DESC LIMIT $2
                 ) AS last ORDER BY turn, seq"
            ),
            by_resource: format!(
                "SELECT id, body FROM {s}.messages WHERE resource_id = $1 ORDER BY turn, seq"
            ),
            delete: format!("DELETE FROM {s}.messages WHERE id = ANY($1)"),
            embedding_owner: format!(
                "SELECT thread_id, resource_id FROM {s}.message_embeddings WHERE message_id = $1"
            ),
            upsert_embedding: format!(
                "INSERT INTO {s}.message_embeddings (message_id, thread_id, resource_id, vector)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (message_id) DO UPDATE SET vector = excluded.vector"
            ),
            embeddings: format!(
                "SELECT message_id, thread_id, vector FROM {s}.message_embeddings
                 WHERE resource_id = $1 ORDER BY seq"
            ),
            get_working: format!("SELECT body FROM {s}.working_memory WHERE scope_key = $1"),
            set_working: format!(
                "INSERT INTO {s}.working_memory (scope_key, body, updated_at) VALUES ($1, $2, $3)
                 ON CONFLICT (scope_key) DO UPDATE SET body = excluded.body,
                     updated_at = excluded.updated_at"
            ),
            save_paused: format!(
                "INSERT INTO {s}.paused_runs (run_id, thread_id, resource_id, expires_at, body)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (run_id) DO UPDATE SET thread_id = excluded.thread_id,
                     resource_id = excluded.resource_id, expires_at = excluded.expires_at,
                     body = excluded.body"
            ),
            take_paused: format!(
                "DELETE FROM {s}.paused_runs WHERE run_id = $1
                 RETURNING run_id, thread_id, resource_id, expires_at, body"
            ),
            list_paused: format!(
                "SELECT run_id, thread_id, resource_id, expires_at, body FROM {s}.paused_runs
                 WHERE ($1::TEXT IS NULL OR thread_id = $1) AND ($2::TEXT IS NULL OR resource_id = $2)
                 ORDER BY expires_at, run_id"
            ),
            quoted: s,
        }
    }
}

/// A failure of the store.
fn fail(doing: &str, e: impl std::fmt::Display) -> MemoryError {
    MemoryError::Backend(format!("PostgreSQL store: {doing}: {e}").into())
}

fn db(e: tokio_postgres::Error) -> MemoryError {
    fail("a query failed", e)
}

fn to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn from_sql(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

impl PostgresStore {
    /// Starts configuring a store on the database at `url`
    /// (`postgres://user:password@host:port/database`).
    pub fn builder(url: impl Into<String>) -> PostgresStoreBuilder {
        PostgresStoreBuilder {
            url: url.into(),
            schema: "processors".to_owned(),
            max_connections: 16,
        }
    }

    /// The schema its tables are in.
    pub fn schema(&self) -> &str {
        &self.sql.schema
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, MemoryError> {
        self.pool
            .get()
            .await
            .map_err(|e| fail("no connection to the database", e))
    }

    async fn migrate(&self) -> Result<(), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let s = &self.sql.quoted;
        // One migration at a time, whichever process gets there first.
        tx.execute("SELECT pg_advisory_xact_lock(7212404512)", &[])
            .await
            .map_err(db)?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {s};
             CREATE TABLE IF NOT EXISTS {s}.schema_version (version INTEGER NOT NULL);"
        ))
        .await
        .map_err(db)?;
        let current: i32 = tx
            .query_one(
                &format!("SELECT COALESCE(MAX(version), 0) FROM {s}.schema_version"),
                &[],
            )
            .await
            .map_err(db)?
            .get(0);
        if current > POSTGRES_SCHEMA_VERSION {
            return Err(fail(
                "cannot use the schema",
                format!(
                    "schema `{}` is version {current}, newer than this build's \
                     {POSTGRES_SCHEMA_VERSION}; use the version of processors-builtins that \
                     wrote it, or a later one",
                    self.sql.schema
                ),
            ));
        }
        let done = usize::try_from(current).unwrap_or(0);
        for (version, sql) in (current + 1..).zip(MIGRATIONS.iter().skip(done)) {
            tx.batch_execute(&sql.replace("{s}", s))
                .await
                .map_err(|e| fail("cannot migrate the schema", e))?;
            tx.execute(
                &format!("INSERT INTO {s}.schema_version (version) VALUES ($1)"),
                &[&version],
            )
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)
    }

    async fn save(&self, thread: Option<&Thread>, messages: &[Message]) -> Result<(), MemoryError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        if let Some(t) = thread {
            // The thread's row first: it is locked until the commit, so turns of one thread
            // are saved one after the other.
            let metadata = t.metadata.as_ref().map(|m| m.to_string());
            tx.execute(
                &self.sql.upsert_thread,
                &[
                    &t.id,
                    &t.resource_id,
                    &t.title,
                    &to_sql(t.created_at),
                    &to_sql(t.updated_at),
                    &metadata,
                ],
            )
            .await
            .map_err(db)?;
        }
        self.save_messages_in(&tx, messages, thread.is_some())
            .await?;
        tx.commit().await.map_err(db)
    }

    /// Saves messages in `tx`; a known id of another thread or resource refuses them all. As
    /// a turn (`turn`), the new messages take the turn of the first known one, or one turn
    /// together when none is known; otherwise each new one is a turn of its own.
    async fn save_messages_in(
        &self,
        tx: &deadpool_postgres::Transaction<'_>,
        messages: &[Message],
        turn: bool,
    ) -> Result<(), MemoryError> {
        let owner = tx.prepare_cached(&self.sql.owner).await.map_err(db)?;
        let update = tx.prepare_cached(&self.sql.update).await.map_err(db)?;
        let insert = tx.prepare_cached(&self.sql.insert).await.map_err(db)?;
        let own_turn = tx.prepare_cached(&self.sql.own_turn).await.map_err(db)?;
        let mut place: Option<i64> = None;
        for m in messages {
            if let Some(row) = tx.query_opt(&owner, &[&m.id]).await.map_err(db)? {
                let (thread, resource): (Option<String>, Option<String>) = (row.get(0), row.get(1));
                if thread != m.thread_id || resource != m.resource_id {
                    return Err(MemoryError::ForeignMessage { id: m.id.clone() });
                }
                if turn && place.is_none() {
                    place = row.get(2);
                }
            }
        }
        for m in messages {
            let body = serde_json::to_string(m).map_err(|e| MemoryError::Backend(Box::new(e)))?;
            let created_at = to_sql(m.created_at);
            if tx
                .execute(&update, &[&m.id, &created_at, &body])
                .await
                .map_err(db)?
                > 0
            {
                continue;
            }
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
                &m.id,
                &m.thread_id,
                &m.resource_id,
                &created_at,
                &body,
                &place,
            ];
            let seq: i64 = tx.query_one(&insert, &params).await.map_err(db)?.get(0);
            if place.is_none() {
                tx.execute(&own_turn, &[&seq]).await.map_err(db)?;
                if turn {
                    place = Some(seq);
                }
            }
        }
        Ok(())
    }

    async fn read(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Message>, MemoryError> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(db)?;
        let rows = client.query(&stmt, params).await.map_err(db)?;
        rows.iter()
            .map(|row| {
                let (id, body): (String, String) = (row.get(0), row.get(1));
                serde_json::from_str(&body).map_err(|e| {
                    MemoryError::Backend(
                        format!("stored message `{id}` is not a valid message: {e}").into(),
                    )
                })
            })
            .collect()
    }
}

impl MemoryStore for PostgresStore {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.get_thread)
                .await
                .map_err(db)?;
            let Some(row) = client.query_opt(&stmt, &[&thread_id]).await.map_err(db)? else {
                return Ok(None);
            };
            let metadata: Option<String> = row.get(4);
            let metadata = match metadata {
                Some(m) => Some(serde_json::from_str(&m).map_err(|e| {
                    MemoryError::Backend(
                        format!("stored thread `{thread_id}` has invalid metadata: {e}").into(),
                    )
                })?),
                None => None,
            };
            Ok(Some(Thread {
                id: thread_id.to_owned(),
                resource_id: row.get(0),
                title: row.get(1),
                created_at: from_sql(row.get(2)),
                updated_at: from_sql(row.get(3)),
                metadata,
            }))
        })
    }

    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move { self.save(Some(&thread), &[]).await })
    }

    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        Box::pin(async move {
            let limit = limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX));
            self.read(&self.sql.list, &[&thread_id, &limit]).await
        })
    }

    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        Box::pin(async move { self.read(&self.sql.by_resource, &[&resource_id]).await })
    }

    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move { self.save(None, &messages).await })
    }

    fn save_turn(
        &self,
        thread: Thread,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move { self.save(Some(&thread), &messages).await })
    }

    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client
                .execute(&self.sql.delete, &[&ids])
                .await
                .map_err(db)?;
            Ok(())
        })
    }

    fn save_paused_run(&self, record: PausedRunRecord) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.save_paused)
                .await
                .map_err(db)?;
            let expires_at = to_sql(record.expires_at);
            client
                .execute(
                    &stmt,
                    &[
                        &record.run_id,
                        &record.thread_id,
                        &record.resource_id,
                        &expires_at,
                        &record.data,
                    ],
                )
                .await
                .map_err(db)?;
            Ok(())
        })
    }

    fn take_paused_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRunRecord>, MemoryError>> {
        // One statement removes and returns the row: of two processes taking it, one gets it.
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.take_paused)
                .await
                .map_err(db)?;
            let row = client.query_opt(&stmt, &[&run_id]).await.map_err(db)?;
            Ok(row.map(|r| paused_run(&r)))
        })
    }

    fn list_paused_runs<'a>(
        &'a self,
        thread_id: Option<&'a str>,
        resource_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRunRecord>, MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.list_paused)
                .await
                .map_err(db)?;
            let rows = client
                .query(&stmt, &[&thread_id, &resource_id])
                .await
                .map_err(db)?;
            Ok(rows.iter().map(paused_run).collect())
        })
    }

    fn get_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.get_working)
                .await
                .map_err(db)?;
            let row = client.query_opt(&stmt, &[&scope_key]).await.map_err(db)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn set_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.set_working)
                .await
                .map_err(db)?;
            let now = to_sql(processors_runtime::message::now_millis());
            client
                .execute(&stmt, &[&scope_key, &text, &now])
                .await
                .map_err(db)?;
            Ok(())
        })
    }

    fn save_embeddings(
        &self,
        embeddings: Vec<MessageEmbedding>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(db)?;
            let owner = tx
                .prepare_cached(&self.sql.embedding_owner)
                .await
                .map_err(db)?;
            let upsert = tx
                .prepare_cached(&self.sql.upsert_embedding)
                .await
                .map_err(db)?;
            for e in &embeddings {
                if let Some(row) = tx.query_opt(&owner, &[&e.message_id]).await.map_err(db)? {
                    let (thread, resource): (String, String) = (row.get(0), row.get(1));
                    if thread != e.thread_id || resource != e.resource_id {
                        return Err(MemoryError::ForeignMessage {
                            id: e.message_id.clone(),
                        });
                    }
                }
                tx.execute(
                    &upsert,
                    &[&e.message_id, &e.thread_id, &e.resource_id, &e.vector],
                )
                .await
                .map_err(db)?;
            }
            tx.commit().await.map_err(db)
        })
    }

    fn search_embeddings<'a>(
        &'a self,
        resource_id: &'a str,
        query: &'a [f32],
        top_k: usize,
    ) -> BoxFuture<'a, Result<Vec<SimilarMessage>, MemoryError>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&self.sql.embeddings)
                .await
                .map_err(db)?;
            let rows = client.query(&stmt, &[&resource_id]).await.map_err(db)?;
            let candidates: Vec<(String, String, Vec<f32>)> = rows
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2)))
                .collect();
            Ok(top_k_similar(
                candidates
                    .iter()
                    .map(|(id, thread, v)| (id.as_str(), thread.as_str(), &v[..])),
                query,
                top_k,
            ))
        })
    }
}
