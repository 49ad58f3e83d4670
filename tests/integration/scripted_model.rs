//! The scripted model's pace: deltas that arrive as a model streams them.

use futures::StreamExt;
use processors::prelude::*;
use std::time::{Duration, Instant};

/// Each delta of a paced turn reaches the consumer after its wait, under Tokio, so an answer
/// is read as it comes; the consumer gets the first delta before the model has sent the last.
#[tokio::test(flavor = "current_thread")]
async fn a_paced_turn_reaches_the_consumer_delta_by_delta() {
    let pace = Duration::from_millis(30);
    let model = ScriptedModel::new([Turn::deltas(["a", "b", "c"]).pace(pace)]);
    let agent = Agent::builder().model(model).build().unwrap();
    let started = Instant::now();
    let mut stream = agent.stream("hi");
    let mut arrivals = Vec::new();
    while let Some(chunk) = stream.next().await {
        if chunk.text_delta().is_some() {
            arrivals.push(started.elapsed());
        }
    }
    assert_eq!(stream.finish().await.unwrap().text, "abc");
    assert_eq!(arrivals.len(), 3);
    for (i, at) in arrivals.iter().enumerate() {
        let waited = pace * u32::try_from(i + 1).unwrap();
        assert!(
            *at >= waited,
            "delta {i} arrived at {at:?}, before {waited:?}"
        );
    }
}
