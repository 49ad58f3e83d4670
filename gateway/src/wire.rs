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

/// One server-sent event.
#[derive(Debug, Clone)]
pub(crate) struct Sse(pub(crate) Bytes);

impl Sse {
    /// `data: TEXT`.
    pub(crate) fn data(text: &str) -> Sse {
        Sse(Bytes::from(format!("data: {text}\n\n")))
    }

    /// `data: JSON`.
    pub(crate) fn json(value: &Value) -> Sse {
        Sse::data(&value.to_string())
    }

    /// `head`, `text` as a JSON string, then `tail`: a text delta's event, written without
    /// building its JSON tree (the events around it are written the plain way).
    pub(crate) fn text(head: &str, text: &str, tail: &str) -> Sse {
        let mut out = Vec::with_capacity(head.len() + text.len() + tail.len() + 8);
        out.extend_from_slice(head.as_bytes());
        // Writing a string into a vector fails only on out-of-memory, which aborts anyway.
        let _ = serde_json::to_writer(&mut out, text);
        out.extend_from_slice(tail.as_bytes());
        Sse(Bytes::from(out))
    }

    /// `event: NAME` with `data: JSON`.
    pub(crate) fn named(name: &str, value: &Value) -> Sse {
        Sse(Bytes::from(format!("event: {name}\ndata: {value}\n\n")))
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
    fn a_text_event_is_json() {
        let Sse(bytes) = Sse::text("data: {\"t\":", "a \"quote\"\n and \u{7}", "}\n\n");
        let text = std::str::from_utf8(&bytes).unwrap();
        let json = text.strip_prefix("data: ").unwrap().trim_end();
        let v: Value = serde_json::from_str(json).unwrap();
        assert_eq!(v["t"], "a \"quote\"\n and \u{7}");
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
