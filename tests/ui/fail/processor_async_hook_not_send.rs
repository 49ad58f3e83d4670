use processors::prelude::*;
use std::rc::Rc;

async fn lookup() {}

#[processor(output_step)]
async fn remember(text: &str) {
    let kept = Rc::new(text.to_owned());
    lookup().await;
    let _ = kept;
}

fn main() {}
