use processors::prelude::*;

/// Looks it up.
#[tool(name = "look up")]
async fn look_up(term: String) -> String {
    term
}

fn main() {}
