use processors::prelude::*;

#[processor(output_step)]
fn banned(text: &str, #[config] words: &[&str]) {
    let _ = (text, words);
}

fn main() {}
