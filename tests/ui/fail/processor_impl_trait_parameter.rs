use processors::prelude::*;

#[processor(output_step)]
fn check(text: impl AsRef<str>) {
    let _ = text.as_ref();
}

fn main() {}
