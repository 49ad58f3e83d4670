use processors::prelude::*;

mod filters {
    use processors::prelude::*;

    /// Drops every chunk.
    #[processor(output_stream)]
    pub fn redact(chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Drop
    }
}

fn main() {
    let _agent = agent! {
        model: ScriptedModel::new([]),
        output: [filters::redact],
    };
}
