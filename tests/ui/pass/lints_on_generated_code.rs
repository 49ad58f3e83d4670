//! Generated code is clean under the compiler's lints, including on the user's tokens it is
//! spanned at: parentheses around a list entry, configuration, state, every kind of entry.
#![deny(warnings, unused, unused_parens, unused_qualifications, unused_results)]
#![deny(unreachable_pub, trivial_casts, unused_lifetimes, unused_import_braces)]

use processors::prelude::*;
use std::sync::Arc;

/// Rejects empty answers.
#[processor(output_step)]
fn guard(text: &str, abort: Abort) -> Result<(), ProcessorError> {
    match text.is_empty() {
        true => Err(abort.reason("say something").retry(true).into()),
        false => Ok(()),
    }
}

/// Counts chunks up to a limit.
#[processor(output_stream)]
async fn count(state: &mut usize, #[config] limit: usize) {
    *state = (*state + 1).min(limit);
}

/// Keeps the input.
#[processor(input)]
fn keep(list: &MessageList, history: Vec<Message>) {
    let _ = (list, history);
}

const RETRIES: u32 = 1;

fn main() {
    let store = InMemoryStore::new();
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("ok")]),
        memory: Memory::new(store),
        input: [(Keep), memory],
        output: [(Guard), Arc::new(Count::new(3)), memory],
        max_processor_retries: RETRIES,
        max_steps: 2,
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "ok");
}
