use processors::prelude::*;

/// Says hello.
#[tool]
fn hello(name: String) -> String {
    format!("hello {name}")
}

fn main() {}
