//! `response-cache`: one cache for the file, whose entry in `input` answers calls
//! (`process_llm_request`) and whose entry in `output` keeps answers (`process_llm_response`,
//! `process_output_result`). The first entry's options build it; the other entry names it
//! alone, or repeats them.

use super::set;
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::response_cache::{InMemoryCache, ResponseCache};
use serde::Deserialize;
use std::time::Duration;

pub(super) fn register(registry: Registry) -> Registry {
    registry.builtin_shared("response-cache", response_cache)
}

#[derive(Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct CacheOptions {
    /// How long an answer is kept.
    ttl_ms: Option<u64>,
    /// Keys are kept apart from other caches' in one store.
    namespace: Option<String>,
    /// The in-memory store's bounds: entries, and bytes of answers.
    max_entries: Option<usize>,
    max_bytes: Option<usize>,
}

fn response_cache(o: &CacheOptions, _: &Cx<'_>) -> Result<ResponseCache, Refusal> {
    for (option, value) in [("max_entries", o.max_entries), ("max_bytes", o.max_bytes)] {
        if value == Some(0) {
            return Err(Refusal::Option(
                option,
                format!("`{option}` is 0: the cache could keep nothing; give at least 1"),
            ));
        }
    }
    let mut store = InMemoryCache::new();
    store = set(store, o.max_entries, |s, n| s.max_entries(n));
    store = set(store, o.max_bytes, |s, n| s.max_bytes(n));
    let mut cache = ResponseCache::new(store);
    cache = set(cache, o.ttl_ms, |c, ms| c.ttl(Duration::from_millis(ms)));
    cache = set(cache, o.namespace.clone(), |c, n| c.namespace(n));
    Ok(cache)
}
