//! The benchmarks' hand-written `generate()` (`generate_adapter` in `benches/support`) makes
//! what an agent's call makes: the yardstick of a call's fixed costs (BENCHMARKS.md, "Round
//! 7") is only fair while it does the same work. Everything but the fresh ids and times is
//! compared with the agent's result, on both dispatch paths.

use crate::support;

use futures::executor::block_on;
use processors::prelude::*;
use support::{DELTA, Dispatch};

/// A message without what every run makes fresh (its id and time).
fn shape(m: &Message) -> Message {
    Message {
        id: String::new(),
        created_at: 0,
        ..m.clone()
    }
}

/// A result without its fresh ids and times.
fn without_fresh(r: &GenerateResult) -> GenerateResult {
    GenerateResult {
        run_id: String::new(),
        response_messages: r.response_messages.iter().map(shape).collect(),
        ..r.clone()
    }
}

#[test]
fn the_hand_written_generate_makes_what_the_agent_makes() {
    for k in [0, 5] {
        let by_hand = block_on(support::generate_adapter(
            &support::model(Turn::text(DELTA)),
            k,
            DELTA.len(),
        ));
        for dispatch in [Dispatch::Static, Dispatch::Dynamic] {
            let agent = support::agent(dispatch, k, Turn::text(DELTA));
            let options = GenerateOptions::default();
            let result = match block_on(agent.generate_with("go".into(), options)) {
                Ok(r) => r,
                Err(e) => panic!("the call failed: {e}"),
            };
            support::take_counted();
            assert_eq!(
                without_fresh(&by_hand),
                without_fresh(&result),
                "K = {k}, {}",
                dispatch.name()
            );
            // The fresh parts are made all the same: a run id, and an id and a time for the
            // answer.
            for r in [&by_hand, &result] {
                assert!(r.run_id.starts_with("run-"), "{}", r.run_id);
                let answer = &r.response_messages[0];
                assert!(answer.id.starts_with("msg-"), "{}", answer.id);
                assert!(answer.created_at > 0);
            }
        }
    }
}
