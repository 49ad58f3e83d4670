use processors::prelude::*;

/// Echoes.
#[tool]
async fn echo<T: serde::Serialize>(value: T) -> T {
    value
}

fn main() {}
