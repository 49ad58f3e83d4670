//! A configured processor shared between agents: `Arc<P>` and `&'static P` are processors,
//! with `P`'s hooks, id and state, in `agent!` and in the builder.

use processors::prelude::*;
use std::sync::Arc;

/// Drops streamed text that contains one of its words.
struct BannedWords {
    words: Vec<String>,
}

#[processor]
impl BannedWords {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) if self.words.iter().any(|w| t.contains(w.as_str())) => StreamAction::Drop,
            _ => StreamAction::Pass,
        }
    }
}

static NO_SECRETS: BannedWords = BannedWords { words: Vec::new() };

fn main() {
    let banned = Arc::new(BannedWords { words: vec!["secret".to_owned()] });
    let support = agent! {
        model: ScriptedModel::new([Turn::text("a secret")]),
        output: [Arc::clone(&banned)],
    };
    let sales = Agent::builder()
        .model(ScriptedModel::new([Turn::text("a secret")]))
        .output(Arc::clone(&banned))
        .build()
        .unwrap();
    let open = agent! {
        model: ScriptedModel::new([Turn::text("a secret")]),
        output: [&NO_SECRETS],
    };
    let run = |agent: &dyn Fn() -> String| agent();
    let texts = [
        run(&|| futures::executor::block_on(support.generate("hi")).unwrap().text.into()),
        run(&|| futures::executor::block_on(sales.generate("hi")).unwrap().text.into()),
        run(&|| futures::executor::block_on(open.generate("hi")).unwrap().text.into()),
    ];
    assert_eq!(texts, ["", "", "a secret"]);
}
