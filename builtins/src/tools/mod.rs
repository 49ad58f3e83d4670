//! Guards and modifiers of tool calls: the built-ins on `process_tool_call` and
//! `process_tool_result` (output list), and one that adds tools to a step (input list).
//!
//! | built-in | hooks | what it does |
//! |---|---|---|
//! | [`ToolValidation`] | tool call | checks a call's arguments against its tool's JSON Schema and your rules (denied values, allowed paths, allowed hosts); a refusal goes back to the model as the tool's error, saying what was wrong, so it can correct the call |
//! | [`ToolParameters`] | tool call | fills defaults, caps numbers and pins values from the request context in a call's arguments, per tool |
//! | [`ToolApproval`] | tool call | asks a person to approve calls, by tool name and by a predicate on the arguments; the run pauses until `Agent::resume` |
//! | [`ToolResultLimiter`] | tool result | caps the tokens of what the model reads of a result, with a note that it was cut; the history keeps it whole |
//! | [`ToolInjection`] | input step | offers more tools on a step, by the request's context or the step |
//!
//! A stack that validates, then pins the tenant, then asks before refunds:
//!
//! ```
//! # futures::executor::block_on(async {
//! use processors::builtins::tools::{ToolApproval, ToolParameters, ToolValidation};
//! use processors::prelude::*;
//! use serde_json::json;
//!
//! let refund = tool(
//!     "refund",
//!     "Refunds an order",
//!     json!({
//!         "type": "object",
//!         "properties": { "order": { "type": "integer" }, "tenant": { "type": "string" } },
//!         "required": ["order"]
//!     }),
//!     |args| async move { Ok(json!({ "refunded": args["order"], "tenant": args["tenant"] })) },
//! );
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([
//!         Turn::empty().tool_call("c1", "refund", json!({ "order": "seven" })),
//!         Turn::empty().tool_call("c2", "refund", json!({ "order": 7, "tenant": "other" })),
//!         Turn::text("Done."),
//!     ]))
//!     .tool(refund)
//!     .output(ToolValidation::builder().build()?)
//!     .output(
//!         ToolParameters::builder()
//!             .pin("refund", "tenant", |cx: &RequestContext| cx.resource_id().map(Into::into))
//!             .build()?,
//!     )
//!     .output(ToolApproval::builder().tool("refund").build()?)
//!     .build()?;
//! let cx = RequestContext::new().with_thread("t-1", "acme");
//! let paused = agent.generate_with("Refund 7", GenerateOptions::new().request_context(cx)).await?;
//! // The first call was refused (its order is not an integer), the second waits, its tenant pinned.
//! assert!(paused.tool_results[0].is_error);
//! assert_eq!(paused.pending_approvals[0].args, json!({ "order": 7, "tenant": "acme" }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod approval;
mod injection;
mod parameters;
mod result_limiter;
pub mod tool_call_filter;
pub mod tool_search;
mod validation;

pub use approval::{ToolApproval, ToolApprovalBuilder};
pub use injection::{ToolInjection, ToolInjectionBuilder};
pub use parameters::{ToolParameters, ToolParametersBuilder};
pub use result_limiter::{ToolResultLimiter, ToolResultLimiterBuilder};
pub use validation::{ToolValidation, ToolValidationBuilder};

use serde_json::Value;

/// The string values of `args` at the keys named `keys` (at any depth; arrays searched
/// through), with their JSON pointers.
fn values_at<'a>(args: &'a Value, keys: &[String]) -> Vec<(String, &'a Value)> {
    let mut out = Vec::new();
    walk(args, &mut String::new(), &mut |pointer, key, value| {
        if key.is_some_and(|k| keys.iter().any(|x| x == k)) {
            out.push((pointer.to_owned(), value));
        }
    });
    out
}

/// Every string in `args`, with its JSON pointer.
fn strings(args: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    walk(args, &mut String::new(), &mut |pointer, _, value| {
        if let Value::String(s) = value {
            out.push((pointer.to_owned(), s.as_str()));
        }
    });
    out
}

/// Calls `f` with each value under `value` (itself included), its JSON pointer and the key it
/// is under (for an array's items, the array's key).
fn walk<'a>(
    value: &'a Value,
    pointer: &mut String,
    f: &mut impl FnMut(&str, Option<&'a str>, &'a Value),
) {
    walk_under(value, pointer, None, f);
}

fn walk_under<'a>(
    value: &'a Value,
    pointer: &mut String,
    key: Option<&'a str>,
    f: &mut impl FnMut(&str, Option<&'a str>, &'a Value),
) {
    f(pointer, key, value);
    let len = pointer.len();
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                walk_under(v, pointer, Some(k), f);
                pointer.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk_under(v, pointer, key, f);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_found_by_key_at_any_depth_with_their_pointers() {
        let args =
            json!({"path": "a", "nested": {"path": "b", "paths": ["c"]}, "list": [{"path": "d"}]});
        let mut found: Vec<(String, Value)> = values_at(&args, &["path".into()])
            .into_iter()
            .map(|(p, v)| (p, v.clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            found,
            [
                ("/list/0/path".to_owned(), json!("d")),
                ("/nested/path".to_owned(), json!("b")),
                ("/path".to_owned(), json!("a")),
            ]
        );
        let mut all: Vec<String> = strings(&json!({"a/b": ["x", {"c": "y"}], "n": 1}))
            .into_iter()
            .map(|(p, s)| format!("{p}={s}"))
            .collect();
        all.sort();
        assert_eq!(all, ["/a~1b/0=x", "/a~1b/1/c=y"]);
    }
}
