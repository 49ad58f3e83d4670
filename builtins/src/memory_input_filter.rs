//! [`MemoryInputFilter`]: history a client sends again, while memory also loads it, is sent to
//! the model once.

use processors_macros::processor;
use processors_runtime::message::{Message, MessageList};

/// Removes the history a client sends back with its new message when memory has loaded the
/// same history: without it, a client that sends the whole conversation each call (as chat
/// completion clients do) makes the model see every earlier turn twice, and memory save it
/// twice.
///
/// The run's input is read from its start: each message that is also among the messages
/// memory loaded (the same role and the same content, whatever its id) is removed, up to the
/// first that is not. The last input message always stays, even when it repeats an earlier
/// one (a user who answers "yes" twice means it twice), and nothing is removed when memory
/// loaded nothing. Put it after memory in `input` (where memory runs unless placed).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::MemoryInputFilter;
/// use processors::prelude::*;
///
/// let store = InMemoryStore::new();
/// let model = ScriptedModel::cycle([Turn::text("Paris.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .memory(Memory::new(store))
///     .input(MemoryInputFilter::new())
///     .build()
///     .unwrap();
/// let thread = || {
///     GenerateOptions::new().request_context(RequestContext::new().with_thread("t", "ada"))
/// };
/// agent.generate_with("Capital of France?", thread()).await.unwrap();
/// // The client sends the conversation so far with its new question.
/// let again = vec![
///     Message::user("Capital of France?"),
///     Message::assistant("Paris."),
///     Message::user("And of Italy?"),
/// ];
/// agent.generate_with(again, thread()).await.unwrap();
/// let sent: Vec<String> = model.requests()[1].prompt.iter().map(Message::text).collect();
/// assert_eq!(sent, ["Capital of France?", "Paris.", "And of Italy?"]);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryInputFilter;

impl MemoryInputFilter {
    /// The filter.
    pub fn new() -> Self {
        Self
    }
}

/// Whether `a` and `b` say the same thing (ids and times aside).
fn same(a: &Message, b: &Message) -> bool {
    a.role == b.role && a.content == b.content
}

#[processor(crate = processors_runtime, id = "memory-input-filter")]
impl MemoryInputFilter {
    fn process_input(&self, list: &mut MessageList) {
        let remembered: Vec<&Message> = list.remembered().collect();
        if remembered.is_empty() {
            return;
        }
        let input: Vec<&Message> = list.input().collect();
        let Some((_, earlier)) = input.split_last() else {
            return;
        };
        let repeated: Vec<String> = earlier
            .iter()
            .take_while(|m| remembered.iter().any(|r| same(m, r)))
            .map(|m| m.id.clone())
            .collect();
        if !repeated.is_empty() {
            let ids: Vec<&str> = repeated.iter().map(String::as_str).collect();
            list.remove(&ids);
        }
    }
}
