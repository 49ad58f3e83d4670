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
                        let label = |key: &str| match inner.get(key) {
                            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                            Some(Value::Number(n)) => Some(n.to_string()),
                            _ => None,
                        };
                        let kind = label("type").or_else(|| label("code"));
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
///
/// A TLS failure the server's answer caused (not TLS at all, a certificate that does not
/// verify) is not retryable: calling again meets the same server. A connection closed during
/// the handshake is an ordinary, retryable, connection failure.
pub(crate) fn from_transport(error: &reqwest::Error, url: &str) -> ApiError {
    if let Some(tls) = tls_failure(error) {
        return ApiError::other(
            format!(
                "the TLS handshake with {url} failed: {tls}; check that the server speaks HTTPS at this address (an `http://` server needs an `http://` base URL) and that its certificate is valid for this host"
            ),
            false,
        );
    }
    let causes = causes(error);
    // The server answered, in something else than HTTP (hyper's parse errors say "invalid
    // HTTP …"): another call meets the same server, so it is not retried.
    let not_http = !error.is_connect() && causes.contains("invalid HTTP");
    let what = if error.is_connect() {
        format!("could not connect to {url}")
    } else if error.is_timeout() {
        format!("timed out talking to {url}")
    } else if error.is_builder() {
        format!("invalid request to {url}")
    } else if not_http {
        format!("the request to {url} was not answered in HTTP")
    } else {
        format!("the request to {url} failed")
    };
    ApiError::other(
        format!("{what}: {causes}"),
        !error.is_builder() && !not_http,
    )
}

/// The TLS error among `error`'s causes, when it is one. rustls reports it inside I/O errors
/// (nested ones, through reqwest's connector), which do not list what they wrap as their
/// source: each is opened.
fn tls_failure(error: &reqwest::Error) -> Option<&rustls::Error> {
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        let mut inner: &(dyn std::error::Error + 'static) = e;
        loop {
            if let Some(tls) = inner.downcast_ref::<rustls::Error>() {
                return Some(tls);
            }
            match inner
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
            {
                Some(wrapped) => inner = wrapped,
                None => break,
            }
        }
        source = e.source();
    }
    None
}

/// A redirect, which is not followed: the API key would go wherever it points.
pub(crate) fn redirect(status: u16, url: &str, location: Option<&str>) -> ApiError {
    let target = match location {
        Some(l) => format!("to {}", truncate(l, 300)),
        None => "without a Location".to_owned(),
    };
    // A 3xx is never retryable: the same request meets the same redirect.
    ApiError::new(
        status,
        format!(
            "the provider answered {status} redirecting {url} {target}; redirects are not followed, so the API key goes only to the base URL: set the base URL to the address the redirect names if you trust it"
        ),
    )
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

/// The whole call took longer than its total timeout.
pub(crate) fn total_timeout(total: Duration) -> ApiError {
    ApiError::other(
        format!(
            "the call took longer than its total timeout of {}; the answer was abandoned",
            seconds(total)
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

/// Whether a JSON document the provider sent is an error object rather than data:
/// `{"error": …}` (with a value other than null), `{"type": "error", …}` or
/// `{"object": "error", …}`.
pub(crate) fn is_error_object(value: &Value) -> bool {
    value.get("error").is_some_and(|e| !e.is_null())
        || value["type"] == "error"
        || value["object"] == "error"
}

/// An error object the provider sent inside the event stream.
pub(crate) fn in_stream(value: &Value, data: &str) -> ApiError {
    reported("mid-stream", value, data)
}

/// An error object the provider sent as the whole body of a success response.
pub(crate) fn in_answer(value: &Value, data: &str) -> ApiError {
    reported("instead of an answer", value, data)
}

/// An error object sent with a success status, classified by its `code` and `type`: a code
/// that is an HTTP error status (`500`, `"503"`) gives the error that status and is retryable
/// as that status would be; otherwise a type or code listed in `TRANSIENT` makes it retryable.
fn reported(place: &str, value: &Value, data: &str) -> ApiError {
    let detail = message_of(value).unwrap_or_else(|| "an unknown error".to_owned());
    let message = format!("the provider reported an error {place}: {detail}");
    let fields = value
        .get("error")
        .filter(|e| e.is_object())
        .unwrap_or(value);
    let labels = [&fields["code"], &fields["type"]];
    let error = match labels.into_iter().find_map(status_code) {
        // A status decides as the response's own would: 408, 429 and 5xx are retryable.
        Some(status) => ApiError::new(status, message),
        None => ApiError::other(
            message,
            labels
                .into_iter()
                .filter_map(Value::as_str)
                .any(|label| TRANSIENT.iter().any(|t| t.eq_ignore_ascii_case(label))),
        ),
    };
    error.with_body(truncate(data, MAX_KEPT_BODY))
}

/// The error types and codes that say the provider is busy, rate limited or failed, rather
/// than that the request is wrong (OpenAI's, Anthropic's and those of the servers and proxies
/// that copy them).
const TRANSIENT: &[&str] = &[
    "api_error",
    "server_error",
    "internal_error",
    "internal_server_error",
    "service_unavailable",
    "overloaded",
    "overloaded_error",
    "rate_limit_error",
    "rate_limit_exceeded",
    "rate_limited",
    "too_many_requests",
    "timeout",
    "timeout_error",
];

/// An error code that is an HTTP error status (`500` or `"500"`), as that status.
fn status_code(code: &Value) -> Option<u16> {
    let n = match code {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    u16::try_from(n).ok().filter(|n| (400..600).contains(n))
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
    use serde_json::json;

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

    fn classified(error: Value) -> ApiError {
        let value = json!({ "error": error });
        in_stream(&value, &value.to_string())
    }

    #[test]
    fn error_codes_that_are_5xx_429_or_529_statuses_are_retryable_with_that_status() {
        for code in [
            json!("500"),
            json!(502),
            json!(503),
            json!("429"),
            json!(529),
            json!(408),
        ] {
            let e = classified(json!({ "message": "m", "type": null, "code": code }));
            let status = code.as_u64().or_else(|| code.as_str()?.parse().ok());
            assert_eq!(e.status.map(u64::from), status, "{code}");
            assert!(e.retryable, "{code}");
        }
    }

    #[test]
    fn error_codes_that_are_other_4xx_statuses_are_not_retryable() {
        for code in [json!("400"), json!(401), json!(404)] {
            let e = classified(json!({ "message": "m", "code": code }));
            assert!(e.status.is_some_and(|s| (400..500).contains(&s)), "{code}");
            assert!(!e.retryable, "{code}");
        }
    }

    #[test]
    fn overload_and_rate_limit_names_are_retryable_in_the_type_or_the_code() {
        for error in [
            json!({ "message": "m", "type": null, "code": "rate_limit_exceeded" }),
            json!({ "message": "m", "code": "overloaded" }),
            json!({ "message": "m", "type": "tokens", "code": "rate_limit_exceeded" }),
            json!({ "message": "m", "type": "overloaded_error" }),
            json!({ "message": "m", "type": "Server_Error" }),
        ] {
            let e = classified(error.clone());
            assert!(e.retryable, "{error}");
            assert_eq!(e.status, None, "{error}");
        }
        for error in [
            json!({ "message": "m", "type": null, "code": "invalid_api_key" }),
            json!({ "message": "m", "type": "invalid_request_error", "code": null }),
            json!("a plain message"),
        ] {
            assert!(!classified(error.clone()).retryable, "{error}");
        }
    }

    #[test]
    fn the_code_names_the_error_when_its_type_is_null() {
        assert_eq!(
            json_error_message(r#"{"error":{"message":"upstream failed","type":null,"code":502}}"#)
                .as_deref(),
            Some("upstream failed (502)")
        );
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("ééé", 3), "é…");
        assert_eq!(truncate("abc", 3), "abc");
    }
}
