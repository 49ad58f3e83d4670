use processors::prelude::*;
use processors::testing::Harness;

/// Redacts an API key as it streams, counting the deltas it changed.
#[processor(output_stream)]
fn redact_keys(chunk: &Chunk, state: &mut usize) -> StreamAction {
    match chunk.text_delta() {
        Some(t) if t.contains("sk-") => {
            *state += 1;
            let redact = |t: &str| t.replace("sk-123", "[key]");
            chunk.clone().map_text(redact).into()
        }
        _ => StreamAction::Pass,
    }
}

#[tokio::test]
async fn redacts_a_key_as_it_streams() {
    let mut h = Harness::new(RedactKeys);
    let deltas = ["Your key is ", "sk-123 and", " it works."];
    let out = h.output_stream(deltas).await.unwrap();
    assert_eq!(out.text(), "Your key is [key] and it works.");
    assert_eq!(*h.state(), 1); // one delta changed
}
