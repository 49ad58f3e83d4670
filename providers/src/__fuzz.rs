//! The stream decoders, for the fuzz targets in `fuzz/`. Not a stable API: it exists only
//! with the `fuzzing` feature and may change in any release.

use crate::anthropic::MessagesDecoder;
use crate::openai::ChatDecoder;
use crate::sse::SseParser;
use crate::transport::{Decoder, EventDecoder, replayed};
use processors_runtime::chunk::ChunkKind;
use processors_runtime::model::ApiError;
use serde_json::Value;
use std::collections::VecDeque;

/// A provider protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI-compatible chat completions.
    OpenAi,
    /// Anthropic messages.
    Anthropic,
}

/// A protocol's decoder of one response, as a provider's stream drives it.
#[derive(Debug)]
pub struct Stream(Inner);

#[derive(Debug)]
enum Inner {
    OpenAi(EventDecoder<ChatDecoder>),
    Anthropic(EventDecoder<MessagesDecoder>),
}

impl Stream {
    /// A decoder at the start of a response.
    pub fn new(protocol: Protocol) -> Self {
        Stream(match protocol {
            Protocol::OpenAi => Inner::OpenAi(EventDecoder::new(ChatDecoder::default())),
            Protocol::Anthropic => Inner::Anthropic(EventDecoder::new(MessagesDecoder::default())),
        })
    }

    /// The next piece of the body; `Ok(true)` once the provider finished.
    pub fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<ChunkKind>) -> Result<bool, ApiError> {
        match &mut self.0 {
            Inner::OpenAi(d) => d.feed(bytes, out),
            Inner::Anthropic(d) => d.feed(bytes, out),
        }
    }

    /// The end of the body.
    pub fn end(&mut self, out: &mut VecDeque<ChunkKind>) -> Result<(), ApiError> {
        match &mut self.0 {
            Inner::OpenAi(d) => d.end(out),
            Inner::Anthropic(d) => d.end(out),
        }
    }
}

/// The chunks of a whole JSON answer, as a provider streams them; `None` when `answer` is not
/// one.
pub fn answer(protocol: Protocol, answer: &Value) -> Option<Vec<Result<ChunkKind, ApiError>>> {
    fn run<D: Decoder + Default>(answer: &Value) -> Option<Vec<Result<ChunkKind, ApiError>>> {
        D::answer_events(answer).map(|events| replayed(D::default(), events).collect())
    }
    match protocol {
        Protocol::OpenAi => run::<ChatDecoder>(answer),
        Protocol::Anthropic => run::<MessagesDecoder>(answer),
    }
}

/// The bytes `parser` holds for the line and for the event being read.
pub fn sse_buffered(parser: &SseParser) -> (usize, usize) {
    parser.buffered()
}
