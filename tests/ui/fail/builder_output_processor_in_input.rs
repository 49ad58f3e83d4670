use processors::prelude::*;

#[processor(output_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| t.to_uppercase()).into()
}

fn main() {
    let _ = Agent::builder()
        .model(ScriptedModel::new([]))
        .input(Shout)
        .build();
}
