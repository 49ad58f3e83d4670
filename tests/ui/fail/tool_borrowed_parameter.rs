use processors::prelude::*;

/// Counts the letters.
#[tool]
async fn letters(word: &str) -> usize {
    word.len()
}

fn main() {}
