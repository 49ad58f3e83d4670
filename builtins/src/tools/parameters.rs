//! [`ToolParameters`]: defaults, caps and pinned values in a call's arguments.

use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::context::RequestContext;
use processors_runtime::message::ToolCall;
use processors_runtime::processor::ToolCallAction;
use serde_json::{Map, Value};
use std::sync::Arc;

/// A value read from the request's context for an argument.
type FromContext = Arc<dyn Fn(&RequestContext) -> Option<Value> + Send + Sync>;

/// Rewrites tool calls' arguments before the tools run, per tool: fills defaults the model
/// left out, caps numbers, and pins values from the request's context (a tenant id, a user's
/// locale) whatever the model wrote. The rewritten call is what runs and what history records;
/// a call it does not change passes as it is.
///
/// Each rule names a top-level key of the arguments, which must be a JSON object (a call whose
/// arguments are not an object is left to the tool, or to [`ToolValidation`](super::ToolValidation)).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::tools::ToolParameters;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let search = tool("search", "Searches", json!({ "type": "object" }), |args| async move {
///     Ok(args)
/// });
/// let rules = ToolParameters::builder()
///     .default_value("search", "lang", json!("en"))
///     .max("search", "limit", 100.0)
///     .pin("search", "tenant", |cx: &RequestContext| cx.resource_id().map(Into::into))
///     .build()?;
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("c1", "search", json!({ "q": "rust", "limit": 5000, "tenant": "x" })),
///     Turn::text("Found it."),
/// ]);
/// let agent = Agent::builder().model(model).tool(search).output(rules).build()?;
/// let cx = RequestContext::new().with_thread("t-1", "acme");
/// let result = agent.generate_with("find rust", GenerateOptions::new().request_context(cx)).await?;
/// assert_eq!(
///     result.tool_results[0].result,
///     json!({ "q": "rust", "limit": 100, "tenant": "acme", "lang": "en" })
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct ToolParameters {
    rules: Vec<Rule>,
}

impl std::fmt::Debug for ToolParameters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolParameters")
            .field(
                "rules",
                &self
                    .rules
                    .iter()
                    .map(|r| format!("{}.{}", r.tool, r.key))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

#[derive(Clone)]
struct Rule {
    tool: String,
    key: String,
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    /// Set when absent (or null).
    Default(Value),
    /// A number capped at this.
    Max(f64),
    /// A number raised to this.
    Min(f64),
    /// Set to what the context gives; removed when it gives nothing.
    Pin(FromContext),
}

/// Builds a [`ToolParameters`]; see [`ToolParameters::builder`].
#[derive(Clone, Default)]
#[must_use]
pub struct ToolParametersBuilder {
    rules: Vec<Rule>,
}

impl ToolParameters {
    /// Starts configuring, with no rule.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tools::ToolParameters;
    /// let err = ToolParameters::builder().build().unwrap_err();
    /// assert!(matches!(err, ConfigError::NothingToDo(_)));
    /// let err = ToolParameters::builder().max("search", "limit", f64::NAN).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::OutOfRange { option: "max", .. }));
    /// ```
    pub fn builder() -> ToolParametersBuilder {
        ToolParametersBuilder::default()
    }

    /// `args` with the rules of `tool` applied, or `None` when they change nothing.
    fn apply(&self, tool: &str, args: &Value, cx: &RequestContext) -> Option<Value> {
        let Value::Object(map) = args else {
            return None;
        };
        let mut out: Map<String, Value> = map.clone();
        for rule in self.rules.iter().filter(|r| r.tool == tool) {
            match &rule.kind {
                Kind::Default(v) => {
                    if out.get(&rule.key).is_none_or(Value::is_null) {
                        out.insert(rule.key.clone(), v.clone());
                    }
                }
                Kind::Max(cap) => bound(&mut out, &rule.key, |n| n > *cap, *cap),
                Kind::Min(floor) => bound(&mut out, &rule.key, |n| n < *floor, *floor),
                Kind::Pin(f) => match f(cx) {
                    Some(v) => {
                        out.insert(rule.key.clone(), v);
                    }
                    None => {
                        out.remove(&rule.key);
                    }
                },
            }
        }
        (out != *map).then_some(Value::Object(out))
    }
}

/// Sets the number at `key` to `to` when `beyond` holds for it, keeping integers integers.
fn bound(map: &mut Map<String, Value>, key: &str, beyond: impl Fn(f64) -> bool, to: f64) {
    let Some(n) = map.get(key).and_then(Value::as_f64) else {
        return;
    };
    if beyond(n) {
        let integral = map.get(key).is_some_and(|v| v.is_i64() || v.is_u64());
        let value = match integral && to.fract() == 0.0 {
            // An integer bound on an integer stays an integer (100, not 100.0).
            #[allow(clippy::cast_possible_truncation)]
            true => Value::from(to as i64),
            false => serde_json::Number::from_f64(to).map_or(Value::Null, Value::Number),
        };
        map.insert(key.to_owned(), value);
    }
}

impl ToolParametersBuilder {
    fn rule(mut self, tool: impl Into<String>, key: impl Into<String>, kind: Kind) -> Self {
        self.rules.push(Rule {
            tool: tool.into(),
            key: key.into(),
            kind,
        });
        self
    }

    /// Sets `key` in `tool`'s arguments to `value` when the model left it out (or null).
    pub fn default_value(
        self,
        tool: impl Into<String>,
        key: impl Into<String>,
        value: Value,
    ) -> Self {
        self.rule(tool, key, Kind::Default(value))
    }

    /// Caps the number at `key` in `tool`'s arguments at `max`.
    pub fn max(self, tool: impl Into<String>, key: impl Into<String>, max: f64) -> Self {
        self.rule(tool, key, Kind::Max(max))
    }

    /// Raises the number at `key` in `tool`'s arguments to `min`.
    pub fn min(self, tool: impl Into<String>, key: impl Into<String>, min: f64) -> Self {
        self.rule(tool, key, Kind::Min(min))
    }

    /// Sets `key` in `tool`'s arguments to what `value` reads from the request's context,
    /// whatever the model wrote; removes it when `value` gives `None`, so the model can never
    /// choose it.
    pub fn pin(
        self,
        tool: impl Into<String>,
        key: impl Into<String>,
        value: impl Fn(&RequestContext) -> Option<Value> + Send + Sync + 'static,
    ) -> Self {
        self.rule(tool, key, Kind::Pin(Arc::new(value)))
    }

    /// Checks the configuration: at least one rule, names given, finite bounds.
    pub fn build(self) -> Result<ToolParameters, ConfigError> {
        if self.rules.is_empty() {
            return Err(ConfigError::NothingToDo("there is no rule"));
        }
        for rule in &self.rules {
            if rule.tool.is_empty() || rule.key.is_empty() {
                return Err(ConfigError::Empty {
                    what: "a tool or key name of a rule",
                    why: "name the tool and the argument each rule applies to",
                });
            }
            let bad = |option, n: f64| {
                (!n.is_finite()).then(|| ConfigError::OutOfRange {
                    option,
                    value: n.to_string(),
                    expected: "a bound must be a finite number",
                })
            };
            let err = match rule.kind {
                Kind::Max(n) => bad("max", n),
                Kind::Min(n) => bad("min", n),
                _ => None,
            };
            if let Some(err) = err {
                return Err(err);
            }
        }
        Ok(ToolParameters { rules: self.rules })
    }
}

#[processor(crate = processors_runtime, id = "tool-parameters")]
impl ToolParameters {
    fn process_tool_call(&self, call: &ToolCall, cx: &RequestContext) -> ToolCallAction {
        match self.apply(&call.tool_name, &call.args, cx) {
            Some(args) => ToolCallAction::Rewrite(args),
            None => ToolCallAction::Continue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounds_keep_integers_integers_and_touch_only_numbers() {
        let p = ToolParameters::builder()
            .max("t", "limit", 100.0)
            .min("t", "page", 1.0)
            .max("t", "ratio", 0.5)
            .build()
            .unwrap();
        let cx = RequestContext::new();
        assert_eq!(
            p.apply("t", &json!({"limit": 500, "page": -2, "ratio": 0.9}), &cx),
            Some(json!({"limit": 100, "page": 1, "ratio": 0.5}))
        );
        assert_eq!(p.apply("t", &json!({"limit": "lots"}), &cx), None);
        assert_eq!(p.apply("t", &json!({"limit": 5}), &cx), None);
        assert_eq!(p.apply("other", &json!({"limit": 500}), &cx), None);
        assert_eq!(p.apply("t", &json!("not an object"), &cx), None);
    }

    #[test]
    fn a_pin_without_a_value_removes_the_models_choice() {
        let p = ToolParameters::builder()
            .pin("t", "tenant", |cx: &RequestContext| {
                cx.resource_id().map(Into::into)
            })
            .build()
            .unwrap();
        assert_eq!(
            p.apply("t", &json!({"tenant": "evil"}), &RequestContext::new()),
            Some(json!({}))
        );
    }
}
