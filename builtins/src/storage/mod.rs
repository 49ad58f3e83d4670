//! Storage backends for memory: with the feature `sqlite` (on by default), `SqliteStore`, an
//! embedded database in one file, the default for an agent that keeps its conversations
//! across restarts; and, with the feature `postgres`, `PostgresStore`, for several processes
//! sharing conversations.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # futures::executor::block_on(async {
//! use processors::builtins::storage::SqliteMemory;
//! use processors::prelude::*;
//!
//! # let dir = std::env::temp_dir().join(format!("processors-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let path = dir.join("agent.db");
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([Turn::text("Noted."), Turn::text("Your name is Ada.")]))
//!     .memory(Memory::sqlite(&path)?)
//!     .build()?;
//! let ada = || GenerateOptions::new().request_context(RequestContext::new().with_thread("t-1", "ada"));
//! agent.generate_with("My name is Ada.", ada()).await?;
//!
//! // Another agent over the same file (another process, after a restart) remembers.
//! let model = ScriptedModel::new([Turn::text("Your name is Ada.")]);
//! let later = Agent::builder().model(model.clone()).memory(Memory::sqlite(&path)?).build()?;
//! later.generate_with("What is my name?", ada()).await?;
//! let prompt = &model.requests()[0].prompt;
//! assert!(prompt.iter().any(|m| m.text() == "My name is Ada."));
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::{POSTGRES_SCHEMA_VERSION, PostgresStore, PostgresStoreBuilder};
#[cfg(feature = "sqlite")]
pub use sqlite::{SCHEMA_VERSION, SqliteStore};

#[cfg(feature = "sqlite")]
use processors_runtime::memory::{Memory, MemoryError};
#[cfg(feature = "sqlite")]
use std::path::Path;

/// `Memory::sqlite(path)`: memory in a SQLite file (with `use processors::prelude::*`, or this
/// trait in scope). Feature `sqlite`.
#[cfg(feature = "sqlite")]
pub trait SqliteMemory {
    /// Memory over the SQLite database at `path`, created when missing; see [`SqliteStore`].
    fn sqlite(path: impl AsRef<Path>) -> Result<Memory, MemoryError>;
}

#[cfg(feature = "sqlite")]
impl SqliteMemory for Memory {
    fn sqlite(path: impl AsRef<Path>) -> Result<Memory, MemoryError> {
        SqliteStore::open(path).map(Memory::new)
    }
}
