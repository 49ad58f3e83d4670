//! The `memory` of a file: where the agent keeps its conversations.

use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

/// `memory = { store = "in-memory" }`, or `{ store = "sqlite", path = "agent.db" }`, with
/// `last_messages` (how many recent messages a run loads; 40 by default).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemorySpec {
    pub store: Spanned<Store>,
    pub path: Option<Spanned<PathBuf>>,
    #[serde(default = "default_last_messages")]
    pub last_messages: usize,
}

fn default_last_messages() -> usize {
    40
}

/// The stores a file can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Store {
    InMemory,
    Sqlite,
}
