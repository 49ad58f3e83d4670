//! Property tests of the SSE parser: cutting a stream anywhere changes nothing.

use processors_providers::sse::{SseEvent, SseParser};
use proptest::prelude::*;

/// Parses `bytes` fed in pieces cut at `cuts` (byte offsets, any order, may repeat).
fn parse_cut(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for window in cuts.windows(2) {
        parser.feed(&bytes[window[0]..window[1]]).unwrap();
        events.extend(std::iter::from_fn(|| parser.next_event()));
    }
    events.extend(parser.finish());
    events
}

/// One event as a generator knows it, and how to write it.
#[derive(Debug, Clone)]
struct GenEvent {
    name: Option<String>,
    data_lines: Vec<String>,
    comment: Option<String>,
    id: Option<String>,
}

/// Text without line breaks, including multi-byte characters and colons.
fn line_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            proptest::char::range('a', 'z'),
            Just(' '),
            Just(':'),
            Just('é'),
            Just('€'),
            Just('😀'),
            Just('{'),
            Just('"'),
        ],
        0..12,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn gen_event() -> impl Strategy<Value = GenEvent> {
    (
        proptest::option::of("[a-z_]{1,10}"),
        proptest::collection::vec(line_text(), 1..4),
        proptest::option::of(line_text()),
        proptest::option::of("[0-9a-z]{1,6}"),
    )
        .prop_map(|(name, data_lines, comment, id)| GenEvent {
            name,
            data_lines,
            comment,
            id,
        })
}

fn line_end() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
}

/// A valid stream of `events`, each line ended by one of `ends` (cycled), and the events a
/// parser must yield. The last event may lack its blank line (it ends at EOF).
fn write_stream(events: &[GenEvent], ends: &[&str], final_blank: bool) -> (Vec<u8>, Vec<SseEvent>) {
    let mut out = String::new();
    let mut expected = Vec::new();
    let mut ends = ends.iter().cycle();
    let mut last_id = None;
    for (i, e) in events.iter().enumerate() {
        let mut line = |text: String| {
            let mut end = *ends.next().unwrap_or(&"\n");
            // CR then an empty line ended by LF would read as one CRLF: write CRLF instead.
            if text.is_empty() && end == "\n" && out.ends_with('\r') {
                end = "\r\n";
            }
            out.push_str(&text);
            out.push_str(end);
        };
        if let Some(c) = &e.comment {
            line(format!(":{c}"));
        }
        if let Some(n) = &e.name {
            line(format!("event: {n}"));
        }
        if let Some(id) = &e.id {
            line(format!("id:{id}"));
            last_id = Some(id.clone());
        }
        for d in &e.data_lines {
            // The parser drops the one space after the colon, so `d` may start with spaces.
            line(format!("data: {d}"));
        }
        if final_blank || i + 1 < events.len() {
            line(String::new());
        }
        expected.push(SseEvent {
            event: e.name.clone(),
            data: e.data_lines.join("\n"),
            id: last_id.clone(),
            retry: None,
        });
    }
    (out.into_bytes(), expected)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn valid_streams_cut_anywhere_parse_to_the_written_events(
        events in proptest::collection::vec(gen_event(), 0..6),
        ends in proptest::collection::vec(line_end(), 1..5),
        final_blank in any::<bool>(),
        trim_last_line_end in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let (mut bytes, expected) = write_stream(&events, &ends, final_blank);
        if !final_blank && trim_last_line_end {
            // The last line may also lack its line end.
            while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                bytes.pop();
            }
        }
        let whole = parse_cut(&bytes, &[]);
        prop_assert_eq!(&whole, &expected);
        prop_assert_eq!(parse_cut(&bytes, &cuts), whole);
    }

    #[test]
    fn arbitrary_bytes_cut_anywhere_parse_as_they_do_whole(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), Just(b'd'), Just(b'a'),
                Just(b't'), Just(0xe2), Just(0x82), Just(0xac), Just(0xff), any::<u8>(),
            ],
            0..200,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let mut prefixed = b"data: x\n".to_vec();
        prefixed.extend_from_slice(&bytes);
        prop_assert_eq!(parse_cut(&prefixed, &cuts), parse_cut(&prefixed, &[]));
    }

    #[test]
    fn every_single_byte_feed_matches_the_whole_parse(
        events in proptest::collection::vec(gen_event(), 1..4),
        ends in proptest::collection::vec(line_end(), 1..4),
    ) {
        let (bytes, expected) = write_stream(&events, &ends, true);
        let every: Vec<usize> = (0..bytes.len()).collect();
        prop_assert_eq!(parse_cut(&bytes, &every), expected);
    }
}

/// Found by the `sse` fuzz target: invalid bytes decode to U+FFFD (three bytes each), and the
/// limit counted the raw bytes, so an event could hold three times the limit.
#[test]
fn the_limit_bounds_the_decoded_data_of_invalid_utf8() {
    let mut parser = SseParser::with_limit(8);
    assert!(parser.feed(b"data:\xff\xff\xff\xff\n\n").is_err());
    assert_eq!(parser.next_event(), None);

    let mut parser = SseParser::with_limit(8);
    parser.feed(b"data:\xff\xff\n\n").unwrap();
    assert_eq!(parser.next_event().unwrap().data, "\u{fffd}\u{fffd}");
}
