use processors::prelude::*;

/// Looks it up.
#[tool(title = "Look up")]
async fn look_up(term: String) -> String {
    term
}

fn main() {}
