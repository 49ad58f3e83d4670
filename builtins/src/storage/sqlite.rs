//! [`SqliteStore`]: threads, messages and working memory in a SQLite file.

use futures::channel::oneshot;
use futures::future::BoxFuture;
use processors_runtime::memory::{
    MemoryError, MemoryStore, MessageEmbedding, PausedRunRecord, SimilarMessage, Thread,
};
use processors_runtime::message::Message;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

/// The schema version this build writes; [`SqliteStore::open`] migrates older databases to
/// it and refuses newer ones.
pub const SCHEMA_VERSION: i64 = 6;

/// The migrations, in order: the database at version `n` has run the first `n`.
const MIGRATIONS: &[&str] = &[
    // 1: threads, and their messages in the order they were first saved.
    "CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        resource_id TEXT NOT NULL,
        title TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        metadata TEXT
    );
    CREATE INDEX threads_by_resource ON threads (resource_id);
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        thread_id TEXT,
        resource_id TEXT,
        created_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX messages_by_thread ON messages (thread_id, seq);
    CREATE INDEX messages_by_resource ON messages (resource_id, seq);",
    // 2: working memory, one text per scope key (a resource's or a thread's).
    "CREATE TABLE working_memory (
        scope_key TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );",
    // 3: message embeddings for semantic recall, searched by resource (vectors are
    // little-endian f32s).
    "CREATE TABLE message_embeddings (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        vector BLOB NOT NULL
    );
    CREATE INDEX message_embeddings_by_resource ON message_embeddings (resource_id, seq);",
    // 4: runs paused for approval, by run id, as JSON, until they are resumed or expire.
    "CREATE TABLE paused_runs (
        run_id TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL,
        body TEXT NOT NULL
    );",
    // 5: paused runs by thread and resource, to list a conversation's (those kept before
    // read from their JSON).
    "ALTER TABLE paused_runs ADD COLUMN thread_id TEXT;
    ALTER TABLE paused_runs ADD COLUMN resource_id TEXT;
    UPDATE paused_runs SET thread_id = json_extract(body, '$.thread_id'),
        resource_id = json_extract(body, '$.resource_id');
    CREATE INDEX paused_runs_by_thread ON paused_runs (thread_id, expires_at);
    CREATE INDEX paused_runs_by_resource ON paused_runs (resource_id, expires_at);",
    // 6: messages listed turn by turn: `turn` is the `seq` of the first message its turn
    // saved, so a resumed turn's answer joins the input it saved when it paused (each
    // message saved before is a turn of its own).
    "ALTER TABLE messages ADD COLUMN turn INTEGER;
    UPDATE messages SET turn = seq;
    DROP INDEX IF EXISTS messages_by_thread;
    DROP INDEX IF EXISTS messages_by_resource;
    CREATE INDEX messages_by_thread ON messages (thread_id, turn, seq);
    CREATE INDEX messages_by_resource ON messages (resource_id, turn, seq);",
];

/// How long a write waits for another connection's (another process's) write to end.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A [`MemoryStore`] in a SQLite database file: conversations survive restarts, and several
/// processes on one machine can share the file.
///
/// - **Schema**: a `schema_version` table records the migrations run; opening an older
///   database migrates it, in one transaction; a database written by a newer version is
///   refused rather than misread.
/// - **Durability**: the database is in WAL mode (readers never block the writer, and
///   another process's connection reads while this one writes). A run's turn, its thread
///   and its messages, is written in one transaction ([`MemoryStore::save_turn`]): a crash,
///   a refused message or a failed write leaves none of it. With `synchronous = NORMAL`, a
///   power cut may lose the last turns committed, never part of one.
/// - **Off the executor**: the connection lives on a thread of its own and every call is
///   sent to it, so no async task ever blocks on disk; it works under any executor. Clones
///   share the connection; a store opened again on the same file (in this process or another)
///   has its own, and SQLite serialises their writes (a write waits up to 10 s for another).
/// - **Bad data**: a stored message that no longer parses is an error naming it, never a
///   panic or a silently shorter history.
///
/// Messages are stored as the JSON of [`Message`], listed in the order they were first saved,
/// a turn's messages together (a resumed turn's answer joins the input it saved when it
/// paused, [`MemoryStore::save_turn`]); saving a known id again replaces it in place. Working memory
/// ([`MemoryStore::set_working_memory`]) is one row per scope key, replaced by each write.
#[derive(Clone)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
    path: Arc<PathBuf>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens the database at `path`, creating it when missing, and migrates it to
    /// [`SCHEMA_VERSION`]. Opening is blocking (it reads the file): do it at start-up, or in
    /// a blocking task.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open(&path).map_err(|e| failed(&path, "cannot open it", e))?;
        Self::start(conn, path)
    }

    /// A database in memory, gone with the store: for tests.
    pub fn in_memory() -> Result<Self, MemoryError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| failed(&path, "cannot open it", e))?;
        Self::start(conn, path)
    }

    /// The database's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn start(mut conn: Connection, path: PathBuf) -> Result<Self, MemoryError> {
        configure(&conn).map_err(|e| failed(&path, "cannot use it as a database", e))?;
        migrate(&mut conn, &path)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("processors-sqlite".into())
            .spawn(move || {
                // Ends when the last clone of the store is dropped.
                while let Ok(job) = queue.recv() {
                    // A job that panics drops its reply (its caller gets an error) and the
                    // connection serves the next one.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
                }
            })
            .map_err(|e| MemoryError::Backend(Box::new(e)))?;
        Ok(SqliteStore {
            jobs,
            path: Arc::new(path),
        })
    }

    /// Runs `f` on the connection's thread.
    fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, MemoryError>> {
        let (reply, answer) = oneshot::channel();
        let path = Arc::clone(&self.path);
        let at = Arc::clone(&self.path);
        let sent = self.jobs.send(Box::new(move |conn: &mut Connection| {
            let _ = reply.send(f(conn).map_err(|e| e.at(&at, "a query failed")));
        }));
        Box::pin(async move {
            if sent.is_err() {
                return Err(backend(&path, "its connection thread has stopped"));
            }
            answer.await.unwrap_or_else(|_| {
                Err(backend(&path, "the call panicked on its connection thread"))
            })
        })
    }
}

/// WAL, `synchronous = NORMAL`, and a wait for other writers.
fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

/// Runs the migrations the database lacks, in one transaction.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), MemoryError> {
    let run = |conn: &mut Connection| -> Result<(), Fail> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
        let current: i64 = tx.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM schema_version",
            [],
            |r| r.get(0),
        )?;
        if current > SCHEMA_VERSION {
            return Err(Fail::Store(backend(
                path,
                &format!(
                    "its schema is version {current}, newer than this build's {SCHEMA_VERSION}; \
                     open it with the version of processors-builtins that wrote it, or a later one"
                ),
            )));
        }
        for (done, sql) in (current..).zip(&MIGRATIONS[usize::try_from(current).unwrap_or(0)..]) {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [done + 1],
            )?;
        }
        tx.commit()?;
        Ok(())
    };
    run(conn).map_err(|e| e.at(path, "cannot migrate its schema"))
}

/// What a call on the connection fails with, before it becomes a [`MemoryError`] naming the
/// database.
enum Fail {
    Sql(rusqlite::Error),
    Store(MemoryError),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Fail::Sql(e)
    }
}

impl From<MemoryError> for Fail {
    fn from(e: MemoryError) -> Self {
        Fail::Store(e)
    }
}

impl Fail {
    fn at(self, path: &Path, doing: &str) -> MemoryError {
        match self {
            Fail::Sql(e) => failed(path, doing, e),
            Fail::Store(e) => e,
        }
    }
}

/// A failure of the store at `path`, with what it was doing.
fn failed(path: &Path, doing: &str, e: rusqlite::Error) -> MemoryError {
    MemoryError::Backend(format!("SQLite store `{}`: {doing}: {e}", path.display()).into())
}

/// A failure of the store at `path`.
fn backend(path: &Path, what: &str) -> MemoryError {
    MemoryError::Backend(format!("SQLite store `{}`: {what}", path.display()).into())
}

/// Milliseconds as SQLite stores them.
fn to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn from_sql(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

/// A paused run's row (`run_id, thread_id, resource_id, expires_at, body`).
fn paused_run(r: &rusqlite::Row<'_>) -> rusqlite::Result<PausedRunRecord> {
    Ok(PausedRunRecord {
        run_id: r.get(0)?,
        thread_id: r.get(1)?,
        resource_id: r.get(2)?,
        expires_at: from_sql(r.get(3)?),
        data: r.get(4)?,
    })
}

/// A stored message, parsed.
fn parse_message(id: &str, body: &str) -> Result<Message, MemoryError> {
    serde_json::from_str(body).map_err(|e| {
        MemoryError::Backend(format!("stored message `{id}` is not a valid message: {e}").into())
    })
}

/// Creates or updates a thread.
fn upsert_thread(tx: &Transaction<'_>, t: &Thread) -> Result<(), Fail> {
    let metadata = t.metadata.as_ref().map(|m| m.to_string());
    tx.prepare_cached(
        "INSERT INTO threads (id, resource_id, title, created_at, updated_at, metadata)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (id) DO UPDATE SET resource_id = excluded.resource_id,
             title = excluded.title, updated_at = excluded.updated_at,
             metadata = excluded.metadata",
    )?
    .execute(params![
        t.id,
        t.resource_id,
        t.title,
        to_sql(t.created_at),
        to_sql(t.updated_at),
        metadata
    ])?;
    Ok(())
}

/// Saves messages; a known id of another thread or resource refuses the whole transaction.
/// As a turn (`turn`), the new messages take the turn of the first known one, or one turn
/// together when none is known; otherwise each new one is a turn of its own.
fn save_messages_in(tx: &Transaction<'_>, messages: &[Message], turn: bool) -> Result<(), Fail> {
    let mut owner =
        tx.prepare_cached("SELECT thread_id, resource_id, turn FROM messages WHERE id = ?1")?;
    let mut update =
        tx.prepare_cached("UPDATE messages SET created_at = ?2, body = ?3 WHERE id = ?1")?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO messages (id, thread_id, resource_id, created_at, body, turn)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut own_turn = tx.prepare_cached("UPDATE messages SET turn = seq WHERE seq = ?1")?;
    let mut place = None;
    for m in messages {
        let row = owner
            .query_row([&m.id], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            })
            .optional()?;
        match row {
            Some((thread, resource, _)) if thread != m.thread_id || resource != m.resource_id => {
                return Err(MemoryError::ForeignMessage { id: m.id.clone() }.into());
            }
            Some((_, _, known)) if turn && place.is_none() => place = known,
            _ => {}
        }
    }
    for m in messages {
        let body = serde_json::to_string(m).map_err(|e| MemoryError::Backend(Box::new(e)))?;
        if update.execute(params![m.id, to_sql(m.created_at), body])? > 0 {
            continue;
        }
        insert.execute(params![
            m.id,
            m.thread_id,
            m.resource_id,
            to_sql(m.created_at),
            body,
            place
        ])?;
        if place.is_none() {
            let seq = tx.last_insert_rowid();
            own_turn.execute([seq])?;
            if turn {
                place = Some(seq);
            }
        }
    }
    Ok(())
}

/// Reads `(id, body)` rows into messages.
fn read_messages(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Message>, Fail> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(params, |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, body) = row?;
        out.push(parse_message(&id, &body)?);
    }
    Ok(out)
}

/// A write transaction: it takes the write lock at once, so two connections never both read
/// and then both try to write.
fn write(conn: &mut Connection) -> Result<Transaction<'_>, Fail> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

impl MemoryStore for SqliteStore {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        let id = thread_id.to_owned();
        self.run(move |conn| {
            let row = conn
                .prepare_cached(
                    "SELECT resource_id, title, created_at, updated_at, metadata
                     FROM threads WHERE id = ?1",
                )?
                .query_row([&id], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .optional()?;
            let Some((resource_id, title, created_at, updated_at, metadata)) = row else {
                return Ok(None);
            };
            let metadata = match metadata {
                Some(m) => Some(serde_json::from_str(&m).map_err(|e| {
                    Fail::Store(MemoryError::Backend(
                        format!("stored thread `{id}` has invalid metadata: {e}").into(),
                    ))
                })?),
                None => None,
            };
            Ok(Some(Thread {
                id,
                resource_id,
                title,
                created_at: from_sql(created_at),
                updated_at: from_sql(updated_at),
                metadata,
            }))
        })
    }

    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.run(move |conn| {
            let tx = write(conn)?;
            upsert_thread(&tx, &thread)?;
            tx.commit()?;
            Ok(())
        })
    }

    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        let id = thread_id.to_owned();
        // SQLite reads a negative limit as none.
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        self.run(move |conn| {
            read_messages(
                conn,
                "SELECT id, body FROM (
                     SELECT turn, seq, id, body FROM messages WHERE thread_id = ?1
                     ORDER BY turn DESC, seq DESC LIMIT ?2
                 ) ORDER BY turn, seq",
                params![id, limit],
            )
        })
    }

    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        let id = resource_id.to_owned();
        self.run(move |conn| {
            read_messages(
                conn,
                "SELECT id, body FROM messages WHERE resource_id = ?1 ORDER BY turn, seq",
                [id],
            )
        })
    }

    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.run(move |conn| {
            let tx = write(conn)?;
            save_messages_in(&tx, &messages, false)?;
            tx.commit()?;
            Ok(())
        })
    }

    fn save_turn(
        &self,
        thread: Thread,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.run(move |conn| {
            let tx = write(conn)?;
            upsert_thread(&tx, &thread)?;
            save_messages_in(&tx, &messages, true)?;
            tx.commit()?;
            Ok(())
        })
    }

    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        let ids = ids.to_vec();
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut delete = tx.prepare_cached("DELETE FROM messages WHERE id = ?1")?;
                for id in &ids {
                    delete.execute([id])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn save_paused_run(&self, record: PausedRunRecord) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO paused_runs (run_id, thread_id, resource_id, expires_at, body)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (run_id) DO UPDATE SET thread_id = excluded.thread_id,
                     resource_id = excluded.resource_id, expires_at = excluded.expires_at,
                     body = excluded.body",
            )?
            .execute(params![
                record.run_id,
                record.thread_id,
                record.resource_id,
                to_sql(record.expires_at),
                record.data
            ])?;
            Ok(())
        })
    }

    fn take_paused_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRunRecord>, MemoryError>> {
        let run_id = run_id.to_owned();
        // One statement removes and returns the row: of two connections taking it, one
        // gets it.
        self.run(move |conn| {
            Ok(conn
                .prepare_cached(
                    "DELETE FROM paused_runs WHERE run_id = ?1
                     RETURNING run_id, thread_id, resource_id, expires_at, body",
                )?
                .query_row([&run_id], paused_run)
                .optional()?)
        })
    }

    fn list_paused_runs<'a>(
        &'a self,
        thread_id: Option<&'a str>,
        resource_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRunRecord>, MemoryError>> {
        let (thread_id, resource_id) =
            (thread_id.map(str::to_owned), resource_id.map(str::to_owned));
        self.run(move |conn| {
            let mut query = conn.prepare_cached(
                "SELECT run_id, thread_id, resource_id, expires_at, body FROM paused_runs
                 WHERE (?1 IS NULL OR thread_id = ?1) AND (?2 IS NULL OR resource_id = ?2)
                 ORDER BY expires_at, run_id",
            )?;
            let rows = query.query_map(params![thread_id, resource_id], paused_run)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn get_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, MemoryError>> {
        let key = scope_key.to_owned();
        self.run(move |conn| {
            Ok(conn
                .prepare_cached("SELECT body FROM working_memory WHERE scope_key = ?1")?
                .query_row([&key], |r| r.get::<_, String>(0))
                .optional()?)
        })
    }

    fn set_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        let key = scope_key.to_owned();
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO working_memory (scope_key, body, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope_key) DO UPDATE SET body = excluded.body,
                     updated_at = excluded.updated_at",
            )?
            .execute(params![
                key,
                text,
                to_sql(processors_runtime::message::now_millis())
            ])?;
            Ok(())
        })
    }

    fn save_embeddings(
        &self,
        embeddings: Vec<MessageEmbedding>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.run(move |conn| {
            let tx = write(conn)?;
            {
                let mut owner = tx.prepare_cached(
                    "SELECT thread_id, resource_id FROM message_embeddings WHERE message_id = ?1",
                )?;
                let mut upsert = tx.prepare_cached(
                    "INSERT INTO message_embeddings (message_id, thread_id, resource_id, vector)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (message_id) DO UPDATE SET vector = excluded.vector",
                )?;
                for e in &embeddings {
                    let known = owner
                        .query_row([&e.message_id], |r| {
                            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                        })
                        .optional()?;
                    if let Some((thread, resource)) = known
                        && (thread != e.thread_id || resource != e.resource_id)
                    {
                        return Err(MemoryError::ForeignMessage {
                            id: e.message_id.clone(),
                        }
                        .into());
                    }
                    let bytes: Vec<u8> = e.vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                    upsert.execute(params![e.message_id, e.thread_id, e.resource_id, bytes])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn search_embeddings<'a>(
        &'a self,
        resource_id: &'a str,
        query: &'a [f32],
        top_k: usize,
    ) -> BoxFuture<'a, Result<Vec<SimilarMessage>, MemoryError>> {
        let resource = resource_id.to_owned();
        let query = query.to_vec();
        self.run(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT message_id, thread_id, vector FROM message_embeddings
                 WHERE resource_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([&resource], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Vec<u8>>(2)?,
                ))
            })?;
            let mut candidates = Vec::new();
            for row in rows {
                let (id, thread, bytes) = row?;
                let vector: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                candidates.push((id, thread, vector));
            }
            Ok(processors_runtime::memory::top_k_similar(
                candidates
                    .iter()
                    .map(|(id, thread, v)| (id.as_str(), thread.as_str(), &v[..])),
                &query,
                top_k,
            ))
        })
    }
}
