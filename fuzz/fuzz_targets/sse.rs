//! The event-stream parser on arbitrary bytes cut at arbitrary points: it never panics, never
//! holds more than its limit, and cutting the stream changes nothing.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use processors_providers::__fuzz::sse_buffered;
use processors_providers::sse::{SseError, SseEvent, SseParser};

#[derive(Arbitrary, Debug)]
struct Input {
    /// 0 for the default limit, else a small one the input can reach.
    limit: u8,
    /// Where the stream is cut (offsets taken modulo its length).
    cuts: Vec<u16>,
    bytes: Vec<u8>,
}

/// What a parser made of the stream: its events, then the error or the final event.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<SseEvent>,
    end: Result<Option<SseEvent>, SseError>,
}

fn parse(bytes: &[u8], cuts: &[usize], limit: usize) -> Outcome {
    let mut parser = if limit == 0 {
        SseParser::new()
    } else {
        SseParser::with_limit(limit)
    };
    let max = if limit == 0 {
        processors_providers::sse::DEFAULT_MAX_EVENT_BYTES
    } else {
        limit
    };
    let mut events = Vec::new();
    for window in cuts.windows(2) {
        let fed = parser.feed(&bytes[window[0]..window[1]]);
        let (line, data) = sse_buffered(&parser);
        assert!(
            line <= max && data <= max,
            "{line} and {data} bytes held, limit {max}"
        );
        events.extend(std::iter::from_fn(|| parser.next_event()));
        if let Err(e) = fed {
            return Outcome {
                events,
                end: Err(e),
            };
        }
    }
    let last = parser.finish();
    assert_eq!(parser.next_event(), None, "an event left after finish");
    Outcome {
        events,
        end: Ok(last),
    }
}

fuzz_target!(|input: Input| {
    let bytes = &input.bytes;
    let limit = usize::from(input.limit);
    let whole = parse(bytes, &[0, bytes.len()], limit);
    let mut cuts: Vec<usize> = input
        .cuts
        .iter()
        .map(|&c| usize::from(c) % (bytes.len() + 1))
        .chain([0, bytes.len()])
        .collect();
    cuts.sort_unstable();
    let pieces = parse(bytes, &cuts, limit);
    assert_eq!(whole, pieces, "cut at {cuts:?}");
    for event in whole.events.iter().chain(whole.end.iter().flatten()) {
        if limit != 0 {
            assert!(event.data.len() <= limit, "an event larger than the limit");
        }
    }
});
