//! A processor's type is never guessed from its spelling: a generic struct written as a struct
//! literal, an enum variant imported with `use`, and a unit struct behind a constant are all
//! entries whose type the compiler infers.

use processors::prelude::*;

/// Drops streamed text that contains one of its words.
struct Filter<T> {
    words: Vec<T>,
}

#[processor]
impl<T: AsRef<str> + Send + Sync + 'static> Filter<T> {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) if self.words.iter().any(|w| t.contains(w.as_ref())) => StreamAction::Drop,
            _ => StreamAction::Pass,
        }
    }
}

/// How strictly answers are checked.
enum Mode {
    Lenient,
    Strict,
}

#[processor]
impl Mode {
    fn process_output_step(&self, text: &str, abort: Abort) -> Result<(), ProcessorError> {
        match self {
            Mode::Strict if text.is_empty() => Err(abort.reason("say something").retry(true).into()),
            Mode::Strict | Mode::Lenient => Ok(()),
        }
    }
}

use Mode::Strict;

fn main() {
    let _ = Mode::Lenient;
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("fine")]),
        output: [Filter { words: vec!["secret"] }, Strict],
        max_processor_retries: 1,
    };
    let result = futures::executor::block_on(agent.generate("x")).unwrap();
    assert_eq!(result.text, "fine");
}
