//! What both protocols share: errors as the client is told of them, server-sent events, and
//! reading files and tool arguments from a request.

use crate::call::refusal_message;
use bytes::Bytes;
use processors_runtime::message::Part;
use processors_runtime::model::ApiError;
use processors_runtime::tripwire::TripWire;
use serde_json::{Map, Value};

/// What kind of error a client is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The request is malformed or asks for what the gateway does not do.
    InvalidRequest,
    /// No gateway key, or a wrong one.
    Authentication,
    /// The key may not use this model.
    Permission,
    /// No such model alias.
    NotFound,
    /// The body is larger than the gateway accepts.
    TooLarge,
    /// Too many requests at once, here or upstream.
    RateLimit,
    /// A processor refused the request.
    ContentFilter,
    /// The upstream or the gateway failed.
    Api,
    /// The upstream is overloaded.
    Overloaded,
    /// The request ran out of time.
    Timeout,
}

impl Kind {
    /// OpenAI's `error.type`.
    pub(crate) fn openai_type(self) -> &'static str {
        match self {
            Kind::InvalidRequest | Kind::NotFound | Kind::TooLarge | Kind::ContentFilter => {
                "invalid_request_error"
            }
            Kind::Authentication => "authentication_error",
            Kind::Permission => "permission_error",
            Kind::RateLimit => "rate_limit_error",
            Kind::Api | Kind::Overloaded | Kind::Timeout => "api_error",
        }
    }

    /// Anthropic's `error.type`.
    pub(crate) fn anthropic_type(self) -> &'static str {
        match self {
            Kind::InvalidRequest | Kind::ContentFilter => "invalid_request_error",
            Kind::Authentication => "authentication_error",
            Kind::Permission => "permission_error",
            Kind::NotFound => "not_found_error",
            Kind::TooLarge => "request_too_large",
            Kind::RateLimit => "rate_limit_error",
            Kind::Api => "api_error",
            Kind::Overloaded => "overloaded_error",
            Kind::Timeout => "timeout_error",
        }
    }
}

/// An error as a client is told of it: its HTTP status, kind, message, and the parameter,
/// code and the wait before calling again when there are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientError {
    pub(crate) status: u16,
    pub(crate) kind: Kind,
    pub(crate) message: String,
    pub(crate) param: Option<String>,
    pub(crate) code: Option<String>,
    /// The upstream's `Retry-After`, in milliseconds: sent on as `retry-after-ms` and
    /// `Retry-After` (whole seconds, rounded up), which the SDKs wait for before retrying.
    pub(crate) retry_after_ms: Option<u64>,
}

impl ClientError {
    pub(crate) fn new(status: u16, kind: Kind, message: impl Into<String>) -> ClientError {
        ClientError {
            status,
            kind,
            message: message.into(),
            param: None,
            code: None,
            retry_after_ms: None,
        }
    }

    /// A malformed request, at `param`.
    pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> ClientError {
        ClientError {
            param: Some(param.into()),
            ..ClientError::new(400, Kind::InvalidRequest, message)
        }
    }

    /// A processor's refusal of the request: 400, code `content_filter`.
    pub(crate) fn refused(tw: &TripWire) -> ClientError {
        ClientError {
            code: Some("content_filter".into()),
            ..ClientError::new(400, Kind::ContentFilter, refusal_message(tw))
        }
    }

    /// An upstream's failure (or the gateway's own timeout, 504 with code `timeout`), with its
    /// status class: a 4xx as it came (but the upstream's
    /// refusal of the gateway's own credentials, which is the gateway's fault: 502), 429 as a
    /// rate limit, 503 and 529 as overload, 504 as a timeout, other 5xx and failures without
    /// a response as 502.
    pub(crate) fn upstream(e: &ApiError) -> ClientError {
        if crate::call::is_timeout(e) {
            return ClientError {
                code: Some("timeout".into()),
                ..ClientError::new(504, Kind::Timeout, e.message.clone())
            };
        }
        let (status, kind, message) = match e.status {
            Some(401 | 403) => (
                502,
                Kind::Api,
                format!(
                    "the upstream refused the gateway's credentials (status {}); the gateway's operator must fix its upstream key",
                    e.status.unwrap_or_default()
                ),
            ),
            Some(429) => (429, Kind::RateLimit, e.message.clone()),
            Some(413) => (413, Kind::TooLarge, e.message.clone()),
            Some(404) => (404, Kind::NotFound, e.message.clone()),
            Some(s @ 400..=499) => (s, Kind::InvalidRequest, e.message.clone()),
            Some(s @ (503 | 529)) => (s, Kind::Overloaded, e.message.clone()),
            Some(504) => (504, Kind::Timeout, e.message.clone()),
            _ => (502, Kind::Api, e.message.clone()),
        };
        let code = e.status.map(|s| format!("upstream_{s}"));
        ClientError {
            code,
            retry_after_ms: e.retry_after_ms,
            ..ClientError::new(status, kind, format!("upstream error: {message}"))
        }
    }
}

/// Server-sent events, written one after the other into one buffer: what one event of the
/// answer becomes, sent as one piece of the body.
#[derive(Debug, Default)]
pub(crate) struct Sse(Vec<u8>);

impl Sse {
    /// An empty buffer with room for `bytes`.
    pub(crate) fn with_capacity(bytes: usize) -> Sse {
        Sse(Vec::with_capacity(bytes))
    }

    /// The events written.
    pub(crate) fn into_bytes(self) -> Bytes {
        Bytes::from(self.0)
    }

    /// `data: JSON`.
    pub(crate) fn json(&mut self, value: &Value) {
        self.raw("data: ");
        self.value(value);
        self.raw("\n\n");
    }

    /// `event: NAME` with `data: JSON`.
    pub(crate) fn named(&mut self, name: &str, value: &Value) {
        self.raw("event: ");
        self.raw(name);
        self.raw("\ndata: ");
        self.value(value);
        self.raw("\n\n");
    }

    /// Text as it is: a piece of an event written by hand (a text delta's, so that no JSON
    /// tree is built for it).
    pub(crate) fn raw(&mut self, text: &str) {
        self.0.extend_from_slice(text.as_bytes());
    }

    /// `text` as a JSON string.
    pub(crate) fn string(&mut self, text: &str) {
        self.0.reserve(text.len() + 2);
        // Writing into a vector fails only on out-of-memory, which aborts anyway.
        let _ = serde_json::to_writer(&mut self.0, text);
    }

    /// A number.
    pub(crate) fn number(&mut self, n: usize) {
        use std::io::Write;
        let _ = write!(self.0, "{n}");
    }

    fn value(&mut self, value: &Value) {
        let _ = serde_json::to_writer(&mut self.0, value);
    }
}

/// A file part of a URL or `data:` URL (`fallback` is its media type when the URL does not
/// say).
pub(crate) fn file_part(url: &str, fallback: &str) -> Part {
    if let Some((mime, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    {
        return Part::File {
            mime_type: mime.to_owned(),
            data: data.to_owned(),
        };
    }
    Part::File {
        mime_type: fallback.to_owned(),
        data: url.to_owned(),
    }
}

/// The fields of `rest` an upstream of the client's protocol gets: those of `allowed`; any
/// other, or any at all for an upstream of another protocol, is refused by name.
pub(crate) fn passed_on(
    rest: Map<String, Value>,
    allowed: &[&str],
    pass_on: bool,
    protocol: &str,
) -> Result<Map<String, Value>, ClientError> {
    for (field, value) in &rest {
        if value.is_null() {
            continue;
        }
        if !allowed.contains(&field.as_str()) {
            return Err(ClientError::invalid(
                field.clone(),
                format!(
                    "the gateway does not take `{field}`; the fields it passes on: {}",
                    allowed.join(", ")
                ),
            ));
        }
        if !pass_on {
            return Err(ClientError::invalid(
                field.clone(),
                format!(
                    "`{field}` is passed on to an upstream that speaks {protocol} protocol only, and this model's speaks another"
                ),
            ));
        }
    }
    Ok(rest.into_iter().filter(|(_, v)| !v.is_null()).collect())
}

/// A tool call's arguments (no text: none, `{}`), or `None` when the text is not JSON.
pub(crate) fn arguments(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return Some(Value::Object(Default::default()));
    }
    serde_json::from_str(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_errors_keep_their_class() {
        let status = |s| ClientError::upstream(&ApiError::new(s, "x")).status;
        assert_eq!(status(429), 429);
        assert_eq!(status(400), 400);
        assert_eq!(status(401), 502);
        assert_eq!(status(500), 502);
        assert_eq!(status(503), 503);
        assert_eq!(status(529), 529);
        assert_eq!(status(504), 504);
        assert_eq!(
            ClientError::upstream(&ApiError::other("reset", true)).status,
            502
        );
    }

    #[test]
    fn a_text_event_written_by_hand_is_json() {
        let mut sse = Sse::default();
        sse.raw("data: {\"t\":");
        sse.string("a \"quote\"\n and \u{7}");
        sse.raw(",\"n\":");
        sse.number(1_234_567_890);
        sse.raw("}\n\n");
        let bytes = sse.into_bytes();
        let text = std::str::from_utf8(&bytes).unwrap();
        let json = text.strip_prefix("data: ").unwrap().trim_end();
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["t"], "a \"quote\"\n and \u{7}");
        assert_eq!(v["n"], 1_234_567_890);
    }

    #[test]
    fn events_follow_one_another_in_one_buffer() {
        let mut sse = Sse::default();
        sse.named("ping", &serde_json::json!({ "type": "ping" }));
        sse.json(&serde_json::json!([1]));
        assert_eq!(
            &sse.into_bytes()[..],
            b"event: ping\ndata: {\"type\":\"ping\"}\n\ndata: [1]\n\n"
        );
    }

    #[test]
    fn a_data_url_becomes_inline_data() {
        assert_eq!(
            file_part("data:image/png;base64,AAAA", "image/*"),
            Part::File {
                mime_type: "image/png".into(),
                data: "AAAA".into()
            }
        );
        assert_eq!(
            file_part("https://x.example/a.png", "image/*"),
            Part::File {
                mime_type: "image/*".into(),
                data: "https://x.example/a.png".into()
            }
        );
    }
}
