//! An incremental parser of server-sent events (the `text/event-stream` format).
//!
//! Bytes go in as they arrive, cut anywhere; complete events come out. The parser follows
//! the HTML standard's rules: lines end with CRLF, LF or CR; a blank line dispatches the
//! event; `data:` lines accumulate (joined by `\n`); `event:`, `id:` and `retry:` set the
//! event's fields; lines starting with `:` are comments; other fields are ignored. Each
//! complete line is decoded as UTF-8 with invalid sequences replaced by U+FFFD, so a
//! character split across two chunks decodes as if it had arrived whole.
//!
//! ```
//! use processors_providers::sse::{SseEvent, SseParser};
//! let mut parser = SseParser::new();
//! parser.feed(b"event: greet\ndata: hel").unwrap();
//! assert_eq!(parser.next_event(), None);
//! parser.feed(b"lo\ndata: world\n\n: a comment\ndata: last").unwrap();
//! let first = parser.next_event().unwrap();
//! assert_eq!(first.event.as_deref(), Some("greet"));
//! assert_eq!(first.data, "hello\nworld");
//! // A final event without its blank line is delivered at the end of the stream.
//! assert_eq!(parser.next_event(), None);
//! assert_eq!(parser.finish().unwrap().data, "last");
//! ```

use std::borrow::Cow;
use std::collections::VecDeque;

/// The default limit of one line and of one event's data: 8 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
    /// The last `id:` seen so far in the stream, when there was one.
    pub id: Option<String>,
    /// The `retry:` field (milliseconds), when the event had a valid one.
    pub retry: Option<u64>,
}

/// A line or an event exceeded the parser's size limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "an event-stream line or event exceeded {limit} bytes; the stream is not a valid event stream or the limit is too low"
)]
pub struct SseError {
    /// The limit that was exceeded.
    pub limit: usize,
}

/// An incremental event-stream parser; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    /// No line was completed yet (a leading byte-order mark is dropped from the first line).
    first_line: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<u64>,
    ready: VecDeque<SseEvent>,
    max_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the [default size limit](DEFAULT_MAX_EVENT_BYTES).
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser that fails when one line or one event's data exceeds `max_bytes`.
    pub fn with_limit(max_bytes: usize) -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            event: None,
            data: String::new(),
            has_data: false,
            last_id: None,
            retry: None,
            ready: VecDeque::new(),
            max_bytes,
        }
    }

    /// Parses the next bytes of the stream; complete events become available from
    /// [`next_event`](Self::next_event).
    pub fn feed(&mut self, mut bytes: &[u8]) -> Result<(), SseError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let head = &bytes[..end];
            let mut rest = &bytes[end + 1..];
            if bytes[end] == b'\r' {
                match rest.split_first() {
                    Some((b'\n', after)) => rest = after,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() {
                self.check_len(head.len())?;
                self.process_line(head)?;
            } else {
                self.check_len(self.line.len() + head.len())?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.process_line(&line)?;
                line.clear();
                self.line = line;
            }
            bytes = rest;
        }
        self.check_len(self.line.len() + bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// The next complete event, if one is ready.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    /// Ends the stream: an unfinished last line is processed and an event still being built
    /// (one without its closing blank line) is returned, after any ready events (which
    /// [`next_event`](Self::next_event) still yields).
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            // The line fitted when it was fed; only the event's data may overflow here,
            // and then the partial event is dropped.
            if self.process_line(&line).is_err() {
                self.reset_event();
                return None;
            }
        }
        self.after_cr = false;
        self.take_event()
    }

    /// The bytes held for the line and the event being read (each stays within the limit).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn buffered(&self) -> (usize, usize) {
        (self.line.len(), self.data.len())
    }

    fn check_len(&self, len: usize) -> Result<(), SseError> {
        if len > self.max_bytes {
            Err(SseError {
                limit: self.max_bytes,
            })
        } else {
            Ok(())
        }
    }

    fn process_line(&mut self, line: &[u8]) -> Result<(), SseError> {
        let line = if std::mem::take(&mut self.first_line) {
            line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line)
        } else {
            line
        };
        if line.is_empty() {
            if let Some(event) = self.take_event() {
                self.ready.push_back(event);
            }
            return Ok(());
        }
        if line.starts_with(b":") {
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                // The limit holds for the decoded text: each invalid byte becomes a U+FFFD of
                // three bytes.
                // Valid UTF-8 (the rule) is checked a word at a time; only invalid bytes take the
                // slower replacing path.
                let value = match std::str::from_utf8(value) {
                    Ok(text) => Cow::Borrowed(text),
                    Err(_) => String::from_utf8_lossy(value),
                };
                self.check_len(self.data.len() + usize::from(self.has_data) + value.len())?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
            }
            _ => {}
        }
        Ok(())
    }

    /// The event built so far, if it has data (an event without data is not dispatched).
    fn take_event(&mut self) -> Option<SseEvent> {
        if !self.has_data {
            self.reset_event();
            return None;
        }
        let event = SseEvent {
            event: self.event.take(),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry: self.retry.take(),
        };
        self.reset_event();
        Some(event)
    }

    fn reset_event(&mut self) {
        self.event = None;
        self.data.clear();
        self.has_data = false;
        self.retry = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        p.feed(bytes).unwrap();
        let mut out: Vec<_> = std::iter::from_fn(|| p.next_event()).collect();
        out.extend(p.finish());
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn crlf_lf_and_cr_all_end_lines() {
        let events = parse_all(b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r\n\n");
        assert_eq!(data(&events), ["a", "b", "c", "d"]);
    }

    #[test]
    fn cr_at_chunk_end_followed_by_lf_is_one_line_end() {
        let mut p = SseParser::new();
        p.feed(b"data: a\r").unwrap();
        p.feed(b"\n\r").unwrap();
        p.feed(b"\n").unwrap();
        assert_eq!(p.next_event().unwrap().data, "a");
        assert_eq!(p.next_event(), None);
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_keeps_inner_spaces() {
        let events = parse_all(b"data:one\ndata:  two\ndata\n\n");
        assert_eq!(data(&events), ["one\n two\n"]);
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored_and_eventless_blocks_not_dispatched() {
        let events = parse_all(b": ping\n\nevent: x\n\nfoo: bar\ndata: y\n\n");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, None);
        assert_eq!(events[0].data, "y");
    }

    #[test]
    fn id_persists_and_retry_applies_to_one_event() {
        let events = parse_all(b"id: 7\nretry: 150\ndata: a\n\ndata: b\n\n");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry, Some(150));
        assert_eq!(events[1].id.as_deref(), Some("7"));
        assert_eq!(events[1].retry, None);
    }

    #[test]
    fn utf8_split_across_chunks_decodes_whole_and_invalid_bytes_become_replacement() {
        let mut p = SseParser::new();
        let text = "data: é€\n\n".as_bytes();
        for b in text {
            p.feed(std::slice::from_ref(b)).unwrap();
        }
        assert_eq!(p.next_event().unwrap().data, "é€");
        p.feed(b"data: \xff\xe2\x82\n\n").unwrap();
        assert_eq!(p.next_event().unwrap().data, "\u{fffd}\u{fffd}");
    }

    #[test]
    fn leading_byte_order_mark_is_dropped() {
        let events = parse_all("\u{feff}data: a\n\n".as_bytes());
        assert_eq!(data(&events), ["a"]);
    }

    #[test]
    fn oversized_line_is_an_error() {
        let mut p = SseParser::with_limit(8);
        p.feed(b"data: 12").unwrap();
        assert_eq!(p.feed(b"345"), Err(SseError { limit: 8 }));
    }
}
