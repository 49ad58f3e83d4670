//! `#[config]` parameters make a configurable processor from a function: each is a field of
//! the generated struct, built with `new`, read by reference (`&T`, `&str` for a `String`
//! field, `&[T]` for a `Vec<T>` one) or as a copy (`T: Copy`).

use processors::prelude::*;

/// Cuts streamed text after `limit` characters, then appends `marker` once.
#[processor(output_stream)]
fn max_len(
    chunk: &Chunk,
    state: &mut usize,
    #[config] limit: usize,
    #[config] marker: &str,
) -> StreamAction {
    let Some(text) = chunk.text_delta() else {
        return StreamAction::Pass;
    };
    if *state >= limit {
        return StreamAction::Drop;
    }
    let kept: String = text.chars().take(limit - *state).collect();
    *state += text.chars().count();
    let cut = *state > limit;
    chunk
        .clone()
        .map_text(|_| if cut { format!("{kept}{marker}") } else { kept })
        .into()
}

/// Rejects answers that contain one of `words`.
#[processor(output_step, id = "banned")]
pub fn banned_words(text: &str, abort: Abort, #[config] words: &[String]) -> Result<(), ProcessorError> {
    match words.iter().find(|w| text.contains(w.as_str())) {
        Some(w) => Err(abort.reason(format!("`{w}` is banned")).into()),
        None => Ok(()),
    }
}

const SHORT: MaxLen = MaxLen::new(5, String::new());

fn main() {
    let marker = "…".to_owned();
    let agent = agent! {
        model: ScriptedModel::new([Turn::text("hello world")]),
        output: [MaxLen::new(3, marker), BannedWords::new(vec!["darn".to_owned()])],
    };
    let result = futures::executor::block_on(agent.generate("hi")).unwrap();
    assert_eq!(result.text, "hel…");
    assert_eq!(SHORT.limit, 5);
    assert_eq!((MaxLen::ID, BannedWords::ID), ("max-len", "banned"));
    // The function stays a function, with its parameters.
    let _: fn(&Chunk, &mut usize, usize, &str) -> StreamAction = max_len;
}
