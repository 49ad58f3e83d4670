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
    /// The environment variable holding a Redis URL: the answers are kept in Redis, shared
    /// by every process that names the same server (feature `redis`).
    redis_url_env: Option<String>,
}

fn response_cache(o: &CacheOptions, cx: &Cx<'_>) -> Result<ResponseCache, Refusal> {
    let mut cache = match &o.redis_url_env {
        None => in_memory(o)?,
        Some(var) => {
            for (option, value) in [("max_entries", o.max_entries), ("max_bytes", o.max_bytes)] {
                if value.is_some() {
                    return Err(Refusal::Option(
                        option,
                        format!(
                            "`{option}` bounds the in-memory store; Redis bounds its own with `maxmemory`: remove it"
                        ),
                    ));
                }
            }
            let Some(url) = (cx.env)(var) else {
                return Err(Refusal::Option(
                    "redis_url_env",
                    format!(
                        "the Redis URL is read from the environment variable {var}, which is not set; set it"
                    ),
                ));
            };
            redis(&url)?
        }
    };
    cache = set(cache, o.ttl_ms, |c, ms| c.ttl(Duration::from_millis(ms)));
    cache = set(cache, o.namespace.clone(), |c, n| c.namespace(n));
    Ok(cache)
}

#[cfg(feature = "redis")]
fn redis(url: &str) -> Result<ResponseCache, Refusal> {
    let store = processors_builtins::response_cache::RedisCache::new(url).map_err(|e| {
        Refusal::Option("redis_url_env", format!("the Redis URL is not valid: {e}"))
    })?;
    Ok(ResponseCache::new(store))
}

#[cfg(not(feature = "redis"))]
fn redis(_: &str) -> Result<ResponseCache, Refusal> {
    Err(Refusal::Option(
        "redis_url_env",
        "a cache in Redis needs the `redis` feature (of `processors`, `processors-config` or `processors-gateway`); turn it on, or remove the option to keep answers in memory".to_owned(),
    ))
}

fn in_memory(o: &CacheOptions) -> Result<ResponseCache, Refusal> {
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
    Ok(ResponseCache::new(store))
}
