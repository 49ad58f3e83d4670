//! Reading message parts and request options the way the provider protocols need them.

use processors_runtime::model::ApiError;
use serde_json::{Map, Value};

/// A tool result as the text providers expect: a string result as is, anything else as JSON.
pub(crate) fn tool_result_text(result: &Value) -> String {
    match result {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A file part's data as a URL: URLs (including `data:` URLs) as they are, base64 data as a
/// `data:` URL.
pub(crate) fn file_url(mime_type: &str, data: &str) -> String {
    if is_url(data) {
        data.to_owned()
    } else {
        format!("data:{mime_type};base64,{data}")
    }
}

/// Whether a file part's data is a URL rather than base64.
pub(crate) fn is_url(data: &str) -> bool {
    ["http://", "https://", "data:"]
        .iter()
        .any(|scheme| data.starts_with(scheme))
}

/// Merges `options` (a JSON object, or null for none) into the request `body`, overriding
/// keys the body already has.
pub(crate) fn merge_provider_options(
    body: &mut Map<String, Value>,
    options: &Value,
) -> Result<(), ApiError> {
    match options {
        Value::Null => Ok(()),
        Value::Object(map) => {
            for (key, value) in map {
                body.insert(key.clone(), value.clone());
            }
            Ok(())
        }
        other => Err(ApiError::other(
            format!(
                "provider_options must be a JSON object whose keys are merged into the request body, not `{}`",
                crate::error::truncate(&other.to_string(), 80)
            ),
            false,
        )),
    }
}

/// A tool call's streamed JSON arguments, parsed (no text at all means no arguments: `{}`).
pub(crate) fn parse_tool_args(id: &str, name: &str, text: &str) -> Result<Value, ApiError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(text).map_err(|e| {
        crate::error::protocol(
            format_args!("invalid JSON arguments for tool call `{id}` of `{name}`: {e}"),
            text,
        )
    })
}
