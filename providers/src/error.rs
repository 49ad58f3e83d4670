//! Turning failed responses, transport failures and bad data into readable [`ApiError`]s.

use processors_runtime::model::ApiError;
use serde_json::Value;
use std::time::Duration;

/// How much of an error body is kept in [`ApiError::body`] and quoted in messages.
pub(crate) const MAX_KEPT_BODY: usize = 2048;

/// The error for a response with a non-success status.
///
/// The message is the provider's own when the body is JSON with a recognisable error
/// (`{"error": {"message": …}}`, `{"error": "…"}`, `{"message": …}`, `{"detail": …}`);
/// an HTML page is named as such, with its title; any other body is quoted, truncated.
pub(crate) fn from_response(status: u16, content_type: Option<&str>, body: &str) -> ApiError {
    let reason = status_reason(status);
    let trimmed = body.trim();
    let detail = if trimmed.is_empty() {
        "the response body was empty".to_owned()
    } else if let Some(message) = json_error_message(trimmed) {
        message
    } else if is_html(content_type, trimmed) {
        match html_title(trimmed) {
            Some(title) => format!("the provider answered with an HTML page (\"{title}\") instead of JSON; a proxy or gateway may be in the way"),
            None => "the provider answered with an HTML page instead of JSON; a proxy or gateway may be in the way".to_owned(),
        }
    } else {
        format!("unexpected response body: {}", truncate(trimmed, 200))
    };
    let message = match reason {
        Some(reason) => format!("{reason}: {detail}"),
        None => detail,
    };
    let mut error = ApiError::new(status, message);
    if !trimmed.is_empty() {
        error = error.with_body(truncate(body, MAX_KEPT_BODY));
    }
    error
}

/// The provider's error message inside a JSON document, if it has one.
pub(crate) fn json_error_message(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    message_of(&value)
}

fn message_of(value: &Value) -> Option<String> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match value {
        Value::Object(map) => {
            if let Some(error) = map.get("error") {
                return match error {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(inner) => {
                        let message = inner.get("message").and_then(text);
                        let kind = inner
                            .get("type")
                            .or_else(|| inner.get("code"))
                            .and_then(text);
                        match (message, kind) {
                            (Some(m), Some(k)) => Some(format!("{m} ({k})")),
                            (Some(m), None) => Some(m),
                            (None, _) => Some(error.to_string()),
                        }
                    }
                    other => Some(other.to_string()),
                };
            }
            map.get("message")
                .and_then(text)
                .or_else(|| map.get("detail").map(|d| text(d).unwrap_or(d.to_string())))
        }
        Value::Array(items) => items.first().and_then(message_of),
        _ => None,
    }
}

fn is_html(content_type: Option<&str>, body: &str) -> bool {
    content_type.is_some_and(|c| c.contains("html")) || {
        let head = body
            .get(..body.len().min(64))
            .unwrap_or("")
            .to_ascii_lowercase();
        head.starts_with("<!doctype html") || head.starts_with("<html")
    }
}

fn html_title(body: &str) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = start + lower.get(start..)?.find("</title>")?;
    let title = body.get(start..end)?.trim();
    (!title.is_empty()).then(|| truncate(title, 120))
}

fn status_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "bad request",
        401 => "unauthorized (check the API key)",
        403 => "forbidden",
        404 => "not found (check the base URL and the model id)",
        408 => "request timeout",
        413 => "request too large",
        422 => "unprocessable request",
        429 => "rate limited",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        529 => "overloaded",
        _ => return None,
    })
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A failure before or while receiving a response (connection refused, reset, TLS).
pub(crate) fn from_transport(error: &reqwest::Error, url: &str) -> ApiError {
    let what = if error.is_connect() {
        format!("could not connect to {url}")
    } else if error.is_timeout() {
        format!("timed out talking to {url}")
    } else if error.is_builder() {
        format!("invalid request to {url}")
    } else {
        format!("the request to {url} failed")
    };
    ApiError::other(format!("{what}: {}", causes(error)), !error.is_builder())
}

/// The body failed while streaming (connection reset, malformed chunked encoding).
pub(crate) fn mid_stream(error: &reqwest::Error) -> ApiError {
    ApiError::other(
        format!("the connection failed while streaming: {}", causes(error)),
        true,
    )
}

/// What went wrong, from the error's causes: reqwest's own text repeats the URL and hyper's
/// "client error (…)" layer names only the stage.
fn causes(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        let text = e.to_string();
        if !text.starts_with("client error (") && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = e.source();
    }
    if parts.is_empty() {
        parts.push(error.to_string());
    }
    parts.join(": ")
}

/// The stream saw no data for `idle`.
pub(crate) fn idle_timeout(idle: Duration) -> ApiError {
    ApiError::other(
        format!(
            "no data for {} from the provider; the stream was abandoned",
            seconds(idle)
        ),
        true,
    )
}

/// The connection closed before the provider's end-of-stream marker.
pub(crate) fn cut_short() -> ApiError {
    ApiError::other(
        "stream ended before the provider finished (the connection closed before the end-of-stream event)",
        true,
    )
}

/// The provider sent something that is not what its protocol says.
pub(crate) fn protocol(what: impl std::fmt::Display, data: &str) -> ApiError {
    let error = ApiError::other(format!("the provider sent {what}"), false);
    if data.is_empty() {
        error
    } else {
        error.with_body(truncate(data, MAX_KEPT_BODY))
    }
}

/// An `error` object the provider sent inside the event stream.
pub(crate) fn in_stream(value: &Value, data: &str) -> ApiError {
    let message = message_of(value).unwrap_or_else(|| "an unknown error".to_owned());
    let kind = value
        .pointer("/error/type")
        .or_else(|| value.pointer("/error/code"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let retryable = matches!(
        kind,
        "overloaded_error"
            | "api_error"
            | "server_error"
            | "rate_limit_error"
            | "rate_limit_exceeded"
    );
    ApiError::other(
        format!("the provider reported an error mid-stream: {message}"),
        retryable,
    )
    .with_body(truncate(data, MAX_KEPT_BODY))
}

/// `1.5s`, `200ms`: a duration for messages.
pub(crate) fn seconds(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_style_json_error_gives_its_message() {
        let e = from_response(
            400,
            Some("application/json"),
            r#"{"error":{"message":"Unknown parameter: 'foo'.","type":"invalid_request_error"}}"#,
        );
        assert_eq!(e.status, Some(400));
        assert!(!e.retryable);
        assert_eq!(
            e.message,
            "bad request: Unknown parameter: 'foo'. (invalid_request_error)"
        );
        assert!(e.body.unwrap().contains("Unknown parameter"));
    }

    #[test]
    fn ollama_style_string_error_and_vllm_message_are_understood() {
        assert_eq!(
            json_error_message(r#"{"error":"model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found")
        );
        assert_eq!(
            json_error_message(r#"{"object":"error","message":"too long","code":400}"#).as_deref(),
            Some("too long")
        );
    }

    #[test]
    fn html_page_is_named_with_its_title_and_body_truncated() {
        let page = format!(
            "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
            "x".repeat(5000)
        );
        let e = from_response(502, Some("text/html"), &page);
        assert!(e.retryable);
        assert!(e.message.contains("HTML page"), "{}", e.message);
        assert!(e.message.contains("502 Bad Gateway"), "{}", e.message);
        assert!(e.body.unwrap().len() <= MAX_KEPT_BODY + '…'.len_utf8());
    }

    #[test]
    fn empty_body_says_so() {
        let e = from_response(500, None, "");
        assert_eq!(
            e.message,
            "internal server error: the response body was empty"
        );
        assert_eq!(e.body, None);
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("ééé", 3), "é…");
        assert_eq!(truncate("abc", 3), "abc");
    }
}
