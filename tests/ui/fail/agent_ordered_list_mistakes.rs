use processors::builtins::UnicodeNormalizer;
use processors::prelude::*;

struct NoPasswords;

#[processor]
impl NoPasswords {
    fn process_input(&self, messages: Vec<Message>) -> Vec<Message> {
        messages
    }
}

fn main() {
    let _ = agent! {
        model: ScriptedModel::new([]),
        input: ordered[UnicodeNormalizer::new(), NoPasswords beside UnicodeNormalizer],
    };
    let _ = agent! {
        model: ScriptedModel::new([]),
        memory: Memory::new(InMemoryStore::new()),
        input: ordered[memory, UnicodeNormalizer::new()],
        tools: ordered[],
    };
}
