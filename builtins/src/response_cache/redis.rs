//! [`RedisCache`]: a [`Cache`] in Redis, shared by every process that connects.

use super::{Cache, CacheError};
use futures::future::BoxFuture;
use redis::AsyncCommands;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// A [`Cache`] in Redis (feature `redis`), for several processes sharing cached answers.
/// Needs a Tokio runtime.
///
/// One multiplexed connection carries every call at once (Redis answers in order on one
/// connection, so a pool would only add sockets); it reconnects by itself after the server
/// restarts or the network drops. A call that gets no answer within the
/// [timeout](RedisCacheBuilder::timeout) (1 s by default) fails, which
/// [`ResponseCache`](super::ResponseCache) takes as a miss with a warning: Redis being down
/// slows no run by more than that.
///
/// Entries expire in Redis (`SET … PX`); their size is bounded by Redis's own `maxmemory`
/// policy.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use processors::builtins::response_cache::{RedisCache, ResponseCache};
/// use std::time::Duration;
///
/// let cache = ResponseCache::new(RedisCache::new("redis://cache.internal:6379/")?)
///     .ttl(Duration::from_secs(600));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisCache {
    conn: ConnectionManager,
}

impl std::fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCache").finish_non_exhaustive()
    }
}

/// Configures a [`RedisCache`].
#[derive(Debug, Clone)]
#[must_use]
pub struct RedisCacheBuilder {
    url: String,
    timeout: Duration,
}

impl RedisCacheBuilder {
    /// How long a call, or a connection attempt, may take (default 1 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The cache; it connects on its first call (a server that is down is a miss, not an
    /// error here).
    pub fn build(self) -> Result<RedisCache, CacheError> {
        let client = redis::Client::open(self.url.as_str())?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1)
            .set_max_delay(self.timeout);
        let conn = client.get_connection_manager_lazy(config)?;
        Ok(RedisCache { conn })
    }
}

impl RedisCache {
    /// A cache on the server at `url` (`redis://host:port/db`), with the default timeout.
    pub fn new(url: &str) -> Result<Self, CacheError> {
        Self::builder(url).build()
    }

    /// Starts configuring a cache on the server at `url`.
    pub fn builder(url: impl Into<String>) -> RedisCacheBuilder {
        RedisCacheBuilder {
            url: url.into(),
            timeout: Duration::from_secs(1),
        }
    }
}

impl Cache for RedisCache {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        let mut conn = self.conn.clone();
        Box::pin(async move { Ok(conn.get::<_, Option<Vec<u8>>>(key).await?) })
    }

    fn set<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        let mut conn = self.conn.clone();
        Box::pin(async move {
            match ttl {
                // Redis refuses a time to live of zero; the entry would be gone at once, and
                // so is any older one.
                Some(t) if t.is_zero() => conn.del::<_, ()>(key).await?,
                Some(t) => {
                    let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
                    conn.pset_ex::<_, _, ()>(key, value, ms).await?;
                }
                None => conn.set::<_, _, ()>(key, value).await?,
            }
            Ok(())
        })
    }
}
