//! [`InMemoryCache`]: a bounded LRU cache with expiry, in the process's memory.

use super::{Cache, CacheError};
use futures::future::BoxFuture;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A [`Cache`] in the process's memory: entries expire after their time to live, and past
/// [`max_entries`](Self::max_entries) or [`max_bytes`](Self::max_bytes) the least recently
/// used ones are evicted. Clones share the entries. For one process; several share a
/// `RedisCache` (feature `redis`).
#[derive(Clone)]
pub struct InMemoryCache {
    inner: Arc<Mutex<Lru>>,
}

impl std::fmt::Debug for InMemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lru = self.lock();
        f.debug_struct("InMemoryCache")
            .field("entries", &lru.entries.len())
            .field("bytes", &lru.bytes)
            .field("max_entries", &lru.max_entries)
            .field("max_bytes", &lru.max_bytes)
            .finish()
    }
}

struct Lru {
    entries: HashMap<String, Slot>,
    /// Keys by when they were last used, oldest first.
    order: BTreeMap<u64, String>,
    tick: u64,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

struct Slot {
    value: Arc<[u8]>,
    expires: Option<Instant>,
    used: u64,
}

impl Default for InMemoryCache {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryCache {
    /// An empty cache of at most 1 000 entries and 64 MiB.
    pub fn new() -> Self {
        InMemoryCache {
            inner: Arc::new(Mutex::new(Lru {
                entries: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
                bytes: 0,
                max_entries: 1_000,
                max_bytes: 64 << 20,
            })),
        }
    }

    /// Keeps at most `n` entries (at least 1).
    pub fn max_entries(self, n: usize) -> Self {
        self.lock().max_entries = n.max(1);
        self
    }

    /// Keeps at most `bytes` of values; a value larger than this is not kept at all.
    pub fn max_bytes(self, bytes: usize) -> Self {
        self.lock().max_bytes = bytes;
        self
    }

    /// How many entries it holds (expired ones included until they are looked up or evicted).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Lru {
    fn get(&mut self, key: &str, now: Instant) -> Option<Arc<[u8]>> {
        let slot = self.entries.get(key)?;
        if slot.expires.is_some_and(|t| t <= now) {
            self.remove(key);
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        let slot = self.entries.get_mut(key)?;
        self.order.remove(&slot.used);
        slot.used = tick;
        self.order.insert(tick, key.to_owned());
        Some(Arc::clone(&slot.value))
    }

    fn set(&mut self, key: &str, value: Vec<u8>, expires: Option<Instant>) {
        self.remove(key);
        if value.len() > self.max_bytes {
            return;
        }
        while self.entries.len() >= self.max_entries || self.bytes + value.len() > self.max_bytes {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(slot) = self.entries.remove(&oldest) {
                self.bytes -= slot.value.len();
            }
        }
        self.tick += 1;
        self.bytes += value.len();
        self.order.insert(self.tick, key.to_owned());
        self.entries.insert(
            key.to_owned(),
            Slot {
                value: value.into(),
                expires,
                used: self.tick,
            },
        );
    }

    fn remove(&mut self, key: &str) {
        if let Some(slot) = self.entries.remove(key) {
            self.order.remove(&slot.used);
            self.bytes -= slot.value.len();
        }
    }
}

impl Cache for InMemoryCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        let found = self.lock().get(key, Instant::now()).map(|v| v.to_vec());
        Box::pin(async move { Ok(found) })
    }

    fn set<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        let now = Instant::now();
        let expires = ttl.map(|t| {
            now.checked_add(t)
                .unwrap_or(now + Duration::from_secs(1 << 32))
        });
        self.lock().set(key, value, expires);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    fn get(c: &InMemoryCache, k: &str) -> Option<Vec<u8>> {
        block_on(c.get(k)).unwrap()
    }

    fn set(c: &InMemoryCache, k: &str, v: &[u8], ttl: Option<Duration>) {
        block_on(c.set(k, v.to_vec(), ttl)).unwrap();
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let c = InMemoryCache::new().max_entries(2);
        set(&c, "a", b"1", None);
        set(&c, "b", b"2", None);
        assert_eq!(get(&c, "a").as_deref(), Some(&b"1"[..]));
        set(&c, "c", b"3", None);
        assert_eq!(get(&c, "b"), None, "b was used least recently");
        assert!(get(&c, "a").is_some() && get(&c, "c").is_some());
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn bytes_are_bounded_and_an_oversized_value_is_not_kept() {
        let c = InMemoryCache::new().max_bytes(10);
        set(&c, "a", b"12345", None);
        set(&c, "b", b"12345", None);
        set(&c, "c", b"123", None);
        assert_eq!(get(&c, "a"), None);
        assert!(get(&c, "b").is_some() && get(&c, "c").is_some());
        set(&c, "big", &[0; 11], None);
        assert_eq!(get(&c, "big"), None);
        assert_eq!(c.lock().bytes, 8);
    }

    #[test]
    fn an_entry_expires_after_its_time_to_live() {
        let c = InMemoryCache::new();
        set(&c, "short", b"1", Some(Duration::ZERO));
        set(&c, "long", b"2", Some(Duration::from_secs(3600)));
        set(&c, "forever", b"3", None);
        assert_eq!(get(&c, "short"), None);
        assert!(get(&c, "long").is_some() && get(&c, "forever").is_some());
        assert_eq!(c.len(), 2, "the expired entry was dropped when looked up");
    }

    #[test]
    fn setting_a_key_again_replaces_its_value_and_its_size() {
        let c = InMemoryCache::new();
        set(&c, "a", b"12345", None);
        set(&c, "a", b"12", None);
        assert_eq!(get(&c, "a").as_deref(), Some(&b"12"[..]));
        assert_eq!(c.lock().bytes, 2);
        assert_eq!(c.lock().order.len(), 1);
    }
}
