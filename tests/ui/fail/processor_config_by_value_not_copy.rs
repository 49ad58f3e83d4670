use processors::prelude::*;

#[processor(output_step)]
fn banned(text: &str, #[config] words: Vec<String>) {
    let _ = (text, words);
}

fn main() {}
