use processors::prelude::*;

#[processor(input)]
async fn check(messages: Vec<Message>) -> Result<StreamAction, ProcessorError> {
    let _ = messages;
    Ok(StreamAction::Pass)
}

fn main() {}
