//! `tool-approval`, `tool-result-limiter`, `tool-validation`, `tool-parameters`.

use super::{TokenizerName, set, tokenizer};
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::{ToolApproval, ToolParameters, ToolResultLimiter, ToolValidation};
use serde::Deserialize;
use std::path::PathBuf;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("tool-approval", tool_approval)
        .builtin("tool-result-limiter", tool_result_limiter)
        .builtin("tool-validation", tool_validation)
        .builtin("tool-parameters", tool_parameters)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalOptions {
    tools: Vec<String>,
    reason: Option<String>,
}

fn tool_approval(o: ApprovalOptions, _: &Cx<'_>) -> Result<ToolApproval, Refusal> {
    let b = ToolApproval::builder().tools(o.tools);
    Ok(set(b, o.reason, |b, r| b.reason(r)).build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultLimiterOptions {
    max_tokens: usize,
    tokenizer: Option<TokenizerName>,
    tools: Option<Vec<String>>,
}

fn tool_result_limiter(o: ResultLimiterOptions, _: &Cx<'_>) -> Result<ToolResultLimiter, Refusal> {
    let mut b = ToolResultLimiter::builder(o.max_tokens);
    b = set(b, tokenizer(o.tokenizer)?, |b, t| b.tokenizer(t));
    b = set(b, o.tools, |b, t| b.tools(t));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidationOptions {
    schemas: Option<bool>,
    #[serde(default)]
    deny: Vec<DenyOptions>,
    #[serde(default)]
    paths: Vec<PathsOptions>,
    #[serde(default)]
    hosts: Vec<HostsOptions>,
}

/// A pattern no string value may match, for every tool or the ones named.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DenyOptions {
    pattern: String,
    tools: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathsOptions {
    keys: Vec<String>,
    roots: Vec<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsOptions {
    keys: Vec<String>,
    hosts: Vec<String>,
}

fn tool_validation(o: ValidationOptions, cx: &Cx<'_>) -> Result<ToolValidation, Refusal> {
    let mut b = ToolValidation::builder();
    #[cfg(feature = "json-schema")]
    {
        b = set(b, o.schemas, |b, y| b.schemas(y));
    }
    #[cfg(not(feature = "json-schema"))]
    if o.schemas == Some(true) {
        return Err(Refusal::Option(
            "schemas",
            "checking calls against their schemas needs the `json-schema` feature of `processors` (on by default); turn it on, or set `schemas = false`".to_owned(),
        ));
    }
    for d in o.deny {
        b = match d.tools {
            Some(tools) => b.deny_for(tools, d.pattern),
            None => b.deny(d.pattern),
        };
    }
    for p in o.paths {
        b = b.paths(p.keys, p.roots.iter().map(|r| cx.path(r)));
    }
    for h in o.hosts {
        b = b.hosts(h.keys, h.hosts);
    }
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParametersOptions {
    #[serde(default)]
    defaults: Vec<DefaultOptions>,
    #[serde(default)]
    max: Vec<BoundOptions>,
    #[serde(default)]
    min: Vec<BoundOptions>,
}

/// `{ tool, key, value }`: `value` when the model left `key` out.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultOptions {
    tool: String,
    key: String,
    value: serde_json::Value,
}

/// `{ tool, key, value }`: a bound on the number at `key`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoundOptions {
    tool: String,
    key: String,
    value: f64,
}

fn tool_parameters(o: ParametersOptions, _: &Cx<'_>) -> Result<ToolParameters, Refusal> {
    let mut b = ToolParameters::builder();
    for d in o.defaults {
        b = b.default_value(d.tool, d.key, d.value);
    }
    for m in o.max {
        b = b.max(m.tool, m.key, m.value);
    }
    for m in o.min {
        b = b.min(m.tool, m.key, m.value);
    }
    Ok(b.build()?)
}
