//! [`MemoryInputFilter`]: history a client sends again, while memory also loads it, is sent to
//! the model once.

use processors_macros::processor;
use processors_runtime::message::{Message, MessageList, MessageSource};

/// Removes the history a client sends back with its new message when memory has loaded the
/// same history: without it, a client that sends the whole conversation each call (as chat
/// completion clients do) makes the model see every earlier turn twice, and memory save it
/// twice.
///
/// The history is the longest start of the run's input that ends with the messages memory's
/// history ends with (the same roles and contents, whatever their ids), as many as memory
/// loaded or as the input has: all of it is removed, older turns past memory's window too
/// (memory has them in its store). The last input message always stays, even when it repeats
/// an earlier one (a user who answers "yes" twice means it twice); an input whose history
/// differs from memory's (edited by the client) is kept whole; nothing is removed when memory
/// loaded nothing; memory's own messages stay, even when the client sent them with their ids.
/// Put it after memory in `input` (where memory runs unless placed).
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
        // The longest start of the input (never all of it) that ends as memory's history
        // ends: the conversation so far, which memory has (older turns past its window too).
        let repeated = (1..input.len()).rev().find(|&k| {
            let n = k.min(remembered.len());
            input[k - n..k]
                .iter()
                .zip(&remembered[remembered.len() - n..])
                .all(|(a, b)| same(a, b))
        });
        let Some(k) = repeated else {
            return;
        };
        let ids: Vec<String> = input[..k].iter().map(|m| m.id.clone()).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        list.remove_from(MessageSource::Input, &ids);
    }
}
