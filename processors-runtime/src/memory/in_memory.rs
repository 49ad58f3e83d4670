use super::*;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

#[derive(Default)]
struct Data {
    threads: HashMap<String, Thread>,
    /// Every message, in the order they are listed: turn by turn.
    messages: Vec<Message>,
    /// The turn of each message, by id: a number given to each save that placed a new turn.
    turns: HashMap<String, u64>,
    /// The number of turns placed so far.
    placed: u64,
    working: HashMap<String, String>,
    embeddings: Vec<MessageEmbedding>,
    paused: HashMap<String, PausedRunRecord>,
}

impl Data {
    /// Saves messages, or none of them when one is foreign. A known id is replaced in place.
    /// As a turn (`turn`), the new messages go after the messages of the turn of the first
    /// known one, or all together last when none is known; otherwise each new one goes last.
    fn save(&mut self, messages: Vec<Message>, turn: bool) -> Result<(), MemoryError> {
        let foreign = messages.iter().find(|m| {
            self.messages.iter().any(|x| {
                x.id == m.id && (x.thread_id != m.thread_id || x.resource_id != m.resource_id)
            })
        });
        if let Some(m) = foreign {
            return Err(MemoryError::ForeignMessage { id: m.id.clone() });
        }
        let mut place = match turn {
            true => messages.iter().find_map(|m| self.turns.get(&m.id).copied()),
            false => None,
        };
        for m in messages {
            if let Some(slot) = self.messages.iter_mut().find(|x| x.id == m.id) {
                *slot = m;
                continue;
            }
            let at = place.and_then(|t| {
                let last = self
                    .messages
                    .iter()
                    .rposition(|x| self.turns.get(&x.id) == Some(&t));
                last.map(|i| (t, i + 1))
            });
            let (t, at) = at.unwrap_or_else(|| {
                self.placed += 1;
                (self.placed, self.messages.len())
            });
            if turn {
                place = Some(t);
            }
            self.turns.insert(m.id.clone(), t);
            self.messages.insert(at, m);
        }
        Ok(())
    }
}

/// A [`MemoryStore`] in the process's memory: for tests, examples and short-lived agents.
/// Clones share the data.
#[derive(Clone, Default)]
pub struct InMemoryStore {
    data: Arc<Mutex<Data>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Data) -> T) -> T {
        f(&mut self.data.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl MemoryStore for InMemoryStore {
    fn get_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Thread>, MemoryError>> {
        let t = self.with(|d| d.threads.get(thread_id).cloned());
        Box::pin(async move { Ok(t) })
    }

    fn save_thread(&self, thread: Thread) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.with(|d| d.threads.insert(thread.id.clone(), thread));
        Box::pin(async { Ok(()) })
    }

    fn list_messages<'a>(
        &'a self,
        thread_id: &'a str,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        let ms = self.with(|d| {
            let all: Vec<Message> = d
                .messages
                .iter()
                .filter(|m| m.thread_id.as_deref() == Some(thread_id))
                .cloned()
                .collect();
            let skip = limit.map_or(0, |n| all.len().saturating_sub(n));
            all.into_iter().skip(skip).collect()
        });
        Box::pin(async move { Ok(ms) })
    }

    fn list_messages_by_resource<'a>(
        &'a self,
        resource_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Message>, MemoryError>> {
        let ms = self.with(|d| {
            d.messages
                .iter()
                .filter(|m| m.resource_id.as_deref() == Some(resource_id))
                .cloned()
                .collect()
        });
        Box::pin(async move { Ok(ms) })
    }

    fn save_messages(&self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), MemoryError>> {
        let saved = self.with(|d| d.save(messages, false));
        Box::pin(async move { saved })
    }

    fn save_turn(
        &self,
        thread: Thread,
        messages: Vec<Message>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        let saved = self.with(|d| {
            d.save(messages, true)?;
            d.threads.insert(thread.id.clone(), thread);
            Ok(())
        });
        Box::pin(async move { saved })
    }

    fn delete_messages<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.with(|d| {
            d.messages.retain(|m| !ids.contains(&m.id));
            d.turns.retain(|id, _| !ids.contains(id));
        });
        Box::pin(async { Ok(()) })
    }

    fn get_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, MemoryError>> {
        let text = self.with(|d| d.working.get(scope_key).cloned());
        Box::pin(async move { Ok(text) })
    }

    fn set_working_memory<'a>(
        &'a self,
        scope_key: &'a str,
        text: String,
    ) -> BoxFuture<'a, Result<(), MemoryError>> {
        self.with(|d| d.working.insert(scope_key.to_owned(), text));
        Box::pin(async { Ok(()) })
    }

    fn save_embeddings(
        &self,
        embeddings: Vec<MessageEmbedding>,
    ) -> BoxFuture<'_, Result<(), MemoryError>> {
        let saved = self.with(|d| {
            let foreign = embeddings.iter().find(|e| {
                d.embeddings.iter().any(|x| {
                    x.message_id == e.message_id
                        && (x.thread_id != e.thread_id || x.resource_id != e.resource_id)
                })
            });
            if let Some(e) = foreign {
                return Err(MemoryError::ForeignMessage {
                    id: e.message_id.clone(),
                });
            }
            for e in embeddings {
                match d
                    .embeddings
                    .iter_mut()
                    .find(|x| x.message_id == e.message_id)
                {
                    Some(slot) => *slot = e,
                    None => d.embeddings.push(e),
                }
            }
            Ok(())
        });
        Box::pin(async move { saved })
    }

    fn search_embeddings<'a>(
        &'a self,
        resource_id: &'a str,
        query: &'a [f32],
        top_k: usize,
    ) -> BoxFuture<'a, Result<Vec<SimilarMessage>, MemoryError>> {
        let found = self.with(|d| {
            top_k_similar(
                d.embeddings
                    .iter()
                    .filter(|e| e.resource_id == resource_id)
                    .map(|e| (e.message_id.as_str(), e.thread_id.as_str(), &e.vector[..])),
                query,
                top_k,
            )
        });
        Box::pin(async move { Ok(found) })
    }

    fn save_paused_run(&self, record: PausedRunRecord) -> BoxFuture<'_, Result<(), MemoryError>> {
        self.with(|d| d.paused.insert(record.run_id.clone(), record));
        Box::pin(async { Ok(()) })
    }

    fn take_paused_run<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRunRecord>, MemoryError>> {
        let record = self.with(|d| d.paused.remove(run_id));
        Box::pin(async move { Ok(record) })
    }

    fn list_paused_runs<'a>(
        &'a self,
        thread_id: Option<&'a str>,
        resource_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRunRecord>, MemoryError>> {
        let mut records: Vec<PausedRunRecord> = self.with(|d| {
            (d.paused.values())
                .filter(|r| super::paused_run_matches(r, thread_id, resource_id))
                .cloned()
                .collect()
        });
        super::sort_paused_runs(&mut records);
        Box::pin(async move { Ok(records) })
    }
}
