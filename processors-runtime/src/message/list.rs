use super::{Message, Part, Role, ToolCall};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Where a message of the list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageSource {
    /// The new input of this run.
    Input,
    /// Produced during this run (model answers, tool results).
    Response,
    /// Loaded from memory (remembered history).
    Memory,
    /// Added as context by a processor or the caller.
    Context,
}

/// Why a returned message set could not be merged into the list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReconcileError {
    /// Two returned messages share one id.
    #[error("returned messages contain the id `{0}` twice; every message needs its own id")]
    DuplicateId(String),
    /// A returned system-message set contains a message of another role.
    #[error(
        "returned system messages contain `{id}` with role {role:?}; only system messages belong there"
    )]
    NotSystem {
        /// The offending message's id.
        id: String,
        /// Its role.
        role: Role,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entry {
    message: Message,
    source: MessageSource,
}

/// The live conversation of one run.
///
/// Non-system messages are kept in order with their [`MessageSource`]. System messages are kept
/// apart: untagged ones (the agent's instructions and per-step edits, reset before every step)
/// and tagged ones (retry feedback, memory notes), which persist for the run.
///
/// ```
/// use processors_runtime::message::{Message, MessageList, MessageSource};
/// let mut list = MessageList::new();
/// list.add(Message::user("hi"), MessageSource::Input);
/// list.add_system(Message::system("be brief"), None);
/// assert_eq!(list.input().count(), 1);
/// assert_eq!(list.to_prompt().len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageList {
    entries: Vec<Entry>,
    system: Vec<Message>,
    tagged: Vec<(String, Message)>,
}

impl MessageList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a message at the end. A system-role message goes to the untagged system messages.
    pub fn add(&mut self, message: Message, source: MessageSource) {
        if message.role == Role::System {
            self.system.push(message);
        } else {
            self.entries.push(Entry { message, source });
        }
    }

    /// Adds several messages in order.
    pub fn add_all(&mut self, messages: impl IntoIterator<Item = Message>, source: MessageSource) {
        for m in messages {
            self.add(m, source);
        }
    }

    /// Removes the messages with these ids (system ones included) and returns them.
    pub fn remove(&mut self, ids: &[&str]) -> Vec<Message> {
        let hit = |m: &Message| ids.contains(&m.id.as_str());
        let mut removed: Vec<Message> = self
            .entries
            .extract_if(.., |e| hit(&e.message))
            .map(|e| e.message)
            .collect();
        removed.extend(self.system.extract_if(.., |m| hit(m)));
        removed.extend(self.tagged.extract_if(.., |(_, m)| hit(m)).map(|(_, m)| m));
        removed
    }

    /// Removes the conversation messages of `source` with these ids, and returns them: a
    /// message of another source with the same id (memory's copy of a message a client sent
    /// again, say) stays.
    pub fn remove_from(&mut self, source: MessageSource, ids: &[&str]) -> Vec<Message> {
        self.entries
            .extract_if(.., |e| {
                e.source == source && ids.contains(&e.message.id.as_str())
            })
            .map(|e| e.message)
            .collect()
    }

    /// Replaces the message with the same id in place, keeping its source. Returns whether one
    /// was found.
    ///
    /// System messages stay apart from the conversation: a conversation message replaced by a
    /// system message leaves it for the untagged system messages, and an untagged system
    /// message replaced by one of another role joins the end of the conversation as
    /// [`MessageSource::Context`].
    pub fn replace(&mut self, message: Message) -> bool {
        if let Some(i) = self.entries.iter().position(|e| e.message.id == message.id) {
            if message.role == Role::System {
                self.entries.remove(i);
                self.system.push(message);
            } else {
                self.entries[i].message = message;
            }
            return true;
        }
        if let Some(i) = self.system.iter().position(|m| m.id == message.id) {
            if message.role == Role::System {
                self.system[i] = message;
            } else {
                self.system.remove(i);
                self.entries.push(Entry {
                    message,
                    source: MessageSource::Context,
                });
            }
            return true;
        }
        false
    }

    /// Adds a system message: untagged with `None`, else under `tag`.
    pub fn add_system(&mut self, message: Message, tag: Option<&str>) {
        match tag {
            None => self.system.push(message),
            Some(tag) => self.tagged.push((tag.to_owned(), message)),
        }
    }

    /// Replaces every untagged system message.
    pub fn replace_all_system(&mut self, messages: Vec<Message>) {
        self.system = messages;
    }

    /// Removes the system messages under `tag`.
    pub fn clear_tag(&mut self, tag: &str) {
        self.tagged.retain(|(t, _)| t != tag);
    }

    /// The untagged system messages.
    pub fn system_messages(&self) -> &[Message] {
        &self.system
    }

    /// The system messages under `tag`.
    pub fn tagged_system_messages<'a>(&'a self, tag: &'a str) -> impl Iterator<Item = &'a Message> {
        self.tagged
            .iter()
            .filter(move |(t, _)| t == tag)
            .map(|(_, m)| m)
    }

    /// Every system message: untagged first, then tagged.
    pub fn all_system_messages(&self) -> impl Iterator<Item = &Message> {
        self.system.iter().chain(self.tagged.iter().map(|(_, m)| m))
    }

    /// Every non-system message, in order.
    pub fn all(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().map(|e| &e.message)
    }

    /// Every non-system message with its source, in order.
    ///
    /// ```
    /// use processors_runtime::message::{Message, MessageList, MessageSource};
    /// let mut list = MessageList::new();
    /// list.add(Message::user("new"), MessageSource::Input);
    /// list.add_remembered([Message::user("old")]);
    /// let sources: Vec<MessageSource> = list.sourced().map(|(_, s)| s).collect();
    /// assert_eq!(sources, [MessageSource::Memory, MessageSource::Input]);
    /// ```
    pub fn sourced(&self) -> impl Iterator<Item = (&Message, MessageSource)> {
        self.entries.iter().map(|e| (&e.message, e.source))
    }

    /// The messages of one source, in order.
    pub fn view(&self, source: MessageSource) -> impl Iterator<Item = &Message> {
        self.entries
            .iter()
            .filter(move |e| e.source == source)
            .map(|e| &e.message)
    }

    /// The new input messages of this run.
    pub fn input(&self) -> impl Iterator<Item = &Message> {
        self.view(MessageSource::Input)
    }

    /// The messages produced during this run.
    pub fn response(&self) -> impl Iterator<Item = &Message> {
        self.view(MessageSource::Response)
    }

    /// Takes the response messages out of the list, in order (the end of a run, when the
    /// list is no longer needed).
    pub(crate) fn take_response(&mut self) -> Vec<Message> {
        self.entries
            .extract_if(.., |e| e.source == MessageSource::Response)
            .map(|e| e.message)
            .collect()
    }

    /// The messages loaded from memory.
    pub fn remembered(&self) -> impl Iterator<Item = &Message> {
        self.view(MessageSource::Memory)
    }

    /// The message with this id, if present.
    pub fn get(&self, id: &str) -> Option<&Message> {
        self.entries
            .iter()
            .map(|e| &e.message)
            .chain(self.system.iter())
            .find(|m| m.id == id)
    }

    /// The source of the message with this id.
    pub fn source_of(&self, id: &str) -> Option<MessageSource> {
        self.entries
            .iter()
            .find(|e| e.message.id == id)
            .map(|e| e.source)
    }

    /// Number of non-system messages.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no non-system message.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Merges a returned message set into a view (the messages whose ids are in `view`).
    ///
    /// Messages of the view whose ids are missing from `returned` are removed; returned messages
    /// with a known id replace the original in place and keep its source; system-role messages
    /// are added as untagged system messages; the others are appended with `new_source`. A
    /// message whose role changes to or from system moves between the conversation and the
    /// system messages, so no id is ever held twice.
    pub fn reconcile(
        &mut self,
        view: &[String],
        returned: Vec<Message>,
        new_source: MessageSource,
    ) -> Result<(), ReconcileError> {
        let mut seen = HashSet::with_capacity(returned.len());
        for m in &returned {
            if !seen.insert(m.id.as_str()) {
                return Err(ReconcileError::DuplicateId(m.id.clone()));
            }
        }
        self.entries
            .retain(|e| !view.contains(&e.message.id) || seen.contains(e.message.id.as_str()));
        for m in returned {
            if m.role == Role::System {
                // A message turned into a system message leaves the conversation.
                self.entries.retain(|e| e.message.id != m.id);
                if let Some(s) = self.system.iter_mut().find(|s| s.id == m.id) {
                    *s = m;
                } else if let Some((_, s)) = self.tagged.iter_mut().find(|(_, s)| s.id == m.id) {
                    *s = m;
                } else {
                    self.system.push(m);
                }
            } else if let Some(e) = self.entries.iter_mut().find(|e| e.message.id == m.id) {
                e.message = m;
            } else {
                // A system message turned into another role joins the conversation.
                self.system.retain(|s| s.id != m.id);
                self.tagged.retain(|(_, s)| s.id != m.id);
                self.entries.push(Entry {
                    message: m,
                    source: new_source,
                });
            }
        }
        Ok(())
    }

    /// Inserts remembered messages after those already remembered, before the rest.
    pub fn add_remembered(&mut self, messages: impl IntoIterator<Item = Message>) {
        let mut at = self
            .entries
            .iter()
            .rposition(|e| e.source == MessageSource::Memory)
            .map_or(0, |i| i + 1);
        for m in messages {
            if m.role == Role::System {
                self.system.push(m);
                continue;
            }
            self.entries.insert(
                at,
                Entry {
                    message: m,
                    source: MessageSource::Memory,
                },
            );
            at += 1;
        }
    }

    /// Checks that a returned system set holds only system messages, then makes it the untagged
    /// system messages. A message of the conversation (or a tagged system message) whose id
    /// is returned here became a system message: it leaves its old place.
    pub fn reconcile_system(&mut self, returned: Vec<Message>) -> Result<(), ReconcileError> {
        let mut seen = HashSet::with_capacity(returned.len());
        for m in &returned {
            if m.role != Role::System {
                return Err(ReconcileError::NotSystem {
                    id: m.id.clone(),
                    role: m.role,
                });
            }
            if !seen.insert(m.id.as_str()) {
                return Err(ReconcileError::DuplicateId(m.id.clone()));
            }
        }
        self.entries
            .retain(|e| !seen.contains(e.message.id.as_str()));
        self.tagged.retain(|(_, m)| !seen.contains(m.id.as_str()));
        self.system = returned;
        Ok(())
    }

    /// The prompt sent to a model: untagged system messages, tagged ones, then the
    /// conversation, each tool result as the model reads it
    /// ([`ToolResult::for_model`](super::ToolResult::for_model)).
    pub fn to_prompt(&self) -> Vec<Message> {
        self.all_system_messages()
            .chain(self.all())
            .map(|m| {
                let mut m = m.clone();
                if m.role == Role::Tool {
                    for part in &mut m.content.parts {
                        if let Part::ToolResult(r) = part
                            && let Some(copy) = r.model_output.take()
                        {
                            r.result = copy;
                        }
                    }
                }
                m
            })
            .collect()
    }

    /// The call `tool_call_id` in the response's messages, newest first.
    pub(crate) fn response_tool_call_mut(&mut self, tool_call_id: &str) -> Option<&mut ToolCall> {
        self.entries
            .iter_mut()
            .rev()
            .filter(|e| e.source == MessageSource::Response)
            .flat_map(|e| e.message.content.parts.iter_mut())
            .find_map(|p| match p {
                Part::ToolCall(c) if c.tool_call_id == tool_call_id => Some(c),
                _ => None,
            })
    }
}
