//! Messages and chunks from arbitrary JSON: what deserialises serialises, and deserialises
//! back to an equal value, and serialises to the same JSON again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use processors_runtime::chunk::{Chunk, ChunkKind};
use processors_runtime::message::{Message, Part};
use processors_runtime::model::ApiError;
use processors_runtime::tripwire::TripWire;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(bytes: &[u8]) {
    let Ok(value) = serde_json::from_slice::<T>(bytes) else {
        return;
    };
    let json = serde_json::to_string(&value).expect("what deserialises serialises");
    let back: T = match serde_json::from_str(&json) {
        Ok(back) => back,
        Err(e) => panic!("{json} does not deserialise back ({e}); from {value:?}"),
    };
    assert_eq!(back, value, "through {json}");
    let again = serde_json::to_string(&back).expect("what deserialises serialises");
    assert_eq!(again, json);
}

fuzz_target!(|bytes: &[u8]| {
    round_trip::<Message>(bytes);
    round_trip::<Vec<Message>>(bytes);
    round_trip::<Part>(bytes);
    round_trip::<Chunk>(bytes);
    round_trip::<ChunkKind>(bytes);
    round_trip::<TripWire>(bytes);
    round_trip::<ApiError>(bytes);
});
