//! [`ToolValidation`]: a call's arguments checked before the tool runs.

use super::{strings, values_at};
use crate::config::ConfigError;
use processors_macros::processor;
use processors_runtime::message::ToolCall;
use processors_runtime::processor::ToolCallAction;
use processors_runtime::tool::Tool;
use regex_automata::meta::Regex;
use serde_json::Value;
#[cfg(feature = "json-schema")]
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
#[cfg(feature = "json-schema")]
use std::sync::{Arc, Mutex, PoisonError};

/// Checks each tool call's arguments before the tool runs, and refuses a call that fails:
/// the model reads the refusal as the tool's error, with every problem found, and can correct
/// the call.
///
/// - **Schema** (on by default, feature `json-schema`): the arguments against the JSON
///   Schema the tool declares ([`Tool::parameters`]), with a full validator (types, required
///   properties, ranges, patterns, formats, `additionalProperties`, …). A schema that does not
///   compile refuses the call and says so: a tool whose declared schema is broken cannot be
///   called safely.
/// - **Denied values** ([`deny`](ToolValidationBuilder::deny)): a pattern no string value of the
///   arguments may contain (at any depth), for every tool or for the named ones.
/// - **Paths** ([`paths`](ToolValidationBuilder::paths)): the values at the named keys must be
///   paths under one of the roots: no `..`, no absolute path elsewhere, and, for what exists on
///   disk, no symbolic link that leads out.
/// - **Hosts** ([`hosts`](ToolValidationBuilder::hosts)): the values at the named keys must be
///   `http`/`https` URLs whose host is allowed (`example.com`, or `*.example.com` for its
///   subdomains too).
///
/// A call of a tool the step does not offer is left to the runtime (which fails it as the
/// tool's error).
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::tools::ToolValidation;
/// use processors::prelude::*;
/// use serde_json::json;
///
/// let fetch = tool(
///     "fetch",
///     "Fetches a page",
///     json!({ "type": "object", "properties": { "url": { "type": "string" } }, "required": ["url"] }),
///     |args| async move { Ok(json!({ "fetched": args["url"] })) },
/// );
/// let guard = ToolValidation::builder().hosts(["url"], ["docs.rs", "*.rust-lang.org"]).build()?;
/// let model = ScriptedModel::new([
///     Turn::empty().tool_call("c1", "fetch", json!({ "url": "http://169.254.169.254/latest" })),
///     Turn::empty().tool_call("c2", "fetch", json!({ "url": "https://doc.rust-lang.org/std" })),
///     Turn::text("Read it."),
/// ]);
/// let agent = Agent::builder().model(model).tool(fetch).output(guard).build()?;
/// let result = agent.generate("Read the std docs").await?;
/// assert!(result.tool_results[0].is_error);
/// assert!(result.tool_results[0].result.as_str().unwrap().contains("169.254.169.254"));
/// assert!(!result.tool_results[1].is_error);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct ToolValidation {
    #[cfg(feature = "json-schema")]
    schemas: Option<Schemas>,
    deny: Vec<Deny>,
    paths: Vec<Paths>,
    hosts: Vec<Hosts>,
}

impl std::fmt::Debug for ToolValidation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("ToolValidation");
        #[cfg(feature = "json-schema")]
        d.field("schemas", &self.schemas.is_some());
        d.field(
            "deny",
            &self.deny.iter().map(|r| &r.source).collect::<Vec<_>>(),
        )
        .field("paths", &self.paths.len())
        .field("hosts", &self.hosts.len())
        .finish()
    }
}

/// A pattern no string value may contain.
struct Deny {
    tools: Option<Vec<String>>,
    source: String,
    regex: Regex,
}

/// Keys whose values must be paths under a root.
struct Paths {
    keys: Vec<String>,
    roots: Vec<PathBuf>,
}

/// Keys whose values must be URLs of an allowed host.
struct Hosts {
    keys: Vec<String>,
    hosts: Vec<String>,
}

/// A tool's schema compiled, or why it does not compile.
#[cfg(feature = "json-schema")]
type Compiled = Arc<Result<jsonschema::Validator, String>>;

/// The validators of the tools' schemas, compiled once per tool and schema.
#[cfg(feature = "json-schema")]
#[derive(Default)]
struct Schemas(Mutex<HashMap<String, (Value, Compiled)>>);

/// Builds a [`ToolValidation`]; see [`ToolValidation::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ToolValidationBuilder {
    schemas: bool,
    deny: Vec<(Option<Vec<String>>, String)>,
    paths: Vec<(Vec<String>, Vec<PathBuf>)>,
    hosts: Vec<(Vec<String>, Vec<String>)>,
}

impl ToolValidation {
    /// Starts configuring: the schema check on, no rules.
    ///
    /// ```
    /// use processors::builtins::ConfigError;
    /// use processors::builtins::tools::ToolValidation;
    /// let err = ToolValidation::builder().deny("(unclosed").build().unwrap_err();
    /// assert!(matches!(err, ConfigError::Pattern { .. }));
    /// let err = ToolValidation::builder().paths(["path"], Vec::<&str>::new()).build().unwrap_err();
    /// assert!(matches!(err, ConfigError::Empty { .. }));
    /// ```
    pub fn builder() -> ToolValidationBuilder {
        ToolValidationBuilder {
            schemas: cfg!(feature = "json-schema"),
            deny: Vec::new(),
            paths: Vec::new(),
            hosts: Vec::new(),
        }
    }

    /// What is wrong with `call`'s arguments, one line each.
    fn problems(&self, call: &ToolCall, tool: Option<&dyn Tool>) -> Vec<String> {
        let mut problems = Vec::new();
        #[cfg(feature = "json-schema")]
        if let (Some(schemas), Some(tool)) = (&self.schemas, tool) {
            schemas.check(tool, &call.args, &mut problems);
        }
        #[cfg(not(feature = "json-schema"))]
        let _ = tool;
        for rule in &self.deny {
            let applies = rule
                .tools
                .as_ref()
                .is_none_or(|t| t.contains(&call.tool_name));
            if !applies {
                continue;
            }
            for (pointer, text) in strings(&call.args) {
                if rule.regex.is_match(text) {
                    problems.push(format!(
                        "{}: the value matches the denied pattern `{}`",
                        at(&pointer),
                        rule.source
                    ));
                }
            }
        }
        for rule in &self.paths {
            for (pointer, value) in values_at(&call.args, &rule.keys) {
                if let Err(why) = check_path(value, &rule.roots) {
                    problems.push(format!("{}: {why}", at(&pointer)));
                }
            }
        }
        for rule in &self.hosts {
            for (pointer, value) in values_at(&call.args, &rule.keys) {
                if let Err(why) = check_host(value, &rule.hosts) {
                    problems.push(format!("{}: {why}", at(&pointer)));
                }
            }
        }
        problems
    }
}

/// A JSON pointer as a refusal names it (`the arguments` for the root).
fn at(pointer: &str) -> String {
    match pointer {
        "" => "the arguments".to_owned(),
        p => format!("`{p}`"),
    }
}

#[cfg(feature = "json-schema")]
impl Schemas {
    fn check(&self, tool: &dyn Tool, args: &Value, problems: &mut Vec<String>) {
        let schema = tool.parameters();
        let validator = {
            let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            match cache.get(tool.name()) {
                Some((known, v)) if known == schema => Arc::clone(v),
                _ => {
                    let v = Arc::new(jsonschema::validator_for(schema).map_err(|e| e.to_string()));
                    cache.insert(tool.name().to_owned(), (schema.clone(), Arc::clone(&v)));
                    v
                }
            }
        };
        match &*validator {
            Ok(v) => problems.extend(v.iter_errors(args).map(|e| {
                let pointer = e.instance_path().to_string();
                format!("{}: {e}", at(&pointer))
            })),
            Err(e) => problems.push(format!(
                "the tool's declared JSON Schema does not compile ({e}), so no call of it can be checked"
            )),
        }
    }
}

/// Whether `value` is a path under one of `roots`.
fn check_path(value: &Value, roots: &[PathBuf]) -> Result<(), String> {
    let Some(text) = value.as_str() else {
        return Err(format!("{value} is not a path"));
    };
    let path = Path::new(text);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{text}` climbs out with `..`"));
    }
    let under = |root: &PathBuf| -> bool {
        let full = match path.is_absolute() {
            true => path.to_path_buf(),
            false => root.join(path),
        };
        if !full.starts_with(root) {
            return false;
        }
        // What exists is resolved (symbolic links followed) and must stay under the root as
        // resolved; what does not exist yet is judged by its nearest existing ancestor.
        let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
        let existing = full.ancestors().find(|a| a.exists());
        existing
            .is_none_or(|a| std::fs::canonicalize(a).is_ok_and(|real| real.starts_with(&real_root)))
    };
    match roots.iter().any(under) {
        true => Ok(()),
        false => Err(format!(
            "`{text}` is not under an allowed root ({})",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Whether `value` is an `http`/`https` URL of an allowed host.
fn check_host(value: &Value, hosts: &[String]) -> Result<(), String> {
    let Some(text) = value.as_str() else {
        return Err(format!("{value} is not a URL"));
    };
    let url = url::Url::parse(text).map_err(|e| format!("`{text}` is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{text}` is not an http or https URL (scheme `{}`)",
            url.scheme()
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(format!("`{text}` has no host"));
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let allowed = hosts.iter().any(|h| match h.strip_prefix("*.") {
        Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
        None => host == *h,
    });
    match allowed {
        true => Ok(()),
        false => Err(format!(
            "the host `{host}` of `{text}` is not allowed (allowed: {})",
            hosts.join(", ")
        )),
    }
}

impl ToolValidationBuilder {
    /// Checks the arguments against the tool's JSON Schema (on by default); `false` checks
    /// the rules only.
    #[cfg(feature = "json-schema")]
    pub fn schemas(mut self, on: bool) -> Self {
        self.schemas = on;
        self
    }

    /// Refuses a call of any tool with a string value that matches `pattern` (a regular
    /// expression, searched anywhere in each value).
    pub fn deny(mut self, pattern: impl Into<String>) -> Self {
        self.deny.push((None, pattern.into()));
        self
    }

    /// Refuses a call of one of `tools` with a string value that matches `pattern`.
    pub fn deny_for<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        tools: I,
        pattern: impl Into<String>,
    ) -> Self {
        let tools = tools.into_iter().map(Into::into).collect();
        self.deny.push((Some(tools), pattern.into()));
        self
    }

    /// The values at `keys` (at any depth, in any tool's arguments) must be paths under one
    /// of `roots`.
    pub fn paths<K, S, R, P>(mut self, keys: K, roots: R) -> Self
    where
        K: IntoIterator<Item = S>,
        S: Into<String>,
        R: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.paths.push((
            keys.into_iter().map(Into::into).collect(),
            roots.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// The values at `keys` (at any depth, in any tool's arguments) must be `http`/`https`
    /// URLs whose host is one of `hosts` (`*.example.com` allows its subdomains and itself).
    pub fn hosts<K, S, H, T>(mut self, keys: K, hosts: H) -> Self
    where
        K: IntoIterator<Item = S>,
        S: Into<String>,
        H: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.hosts.push((
            keys.into_iter().map(Into::into).collect(),
            hosts
                .into_iter()
                .map(|h| h.into().trim_end_matches('.').to_ascii_lowercase())
                .collect(),
        ));
        self
    }

    /// Checks the configuration: patterns that compile and cannot match empty text, rules
    /// with keys, roots and hosts, and something to check.
    pub fn build(self) -> Result<ToolValidation, ConfigError> {
        let mut deny = Vec::with_capacity(self.deny.len());
        for (tools, source) in self.deny {
            let regex = Regex::new(&source).map_err(|e| ConfigError::Pattern {
                rule: source.clone(),
                reason: e.to_string(),
            })?;
            if regex.is_match("") {
                return Err(ConfigError::Pattern {
                    rule: source,
                    reason: "it matches empty text, so it would refuse every call".into(),
                });
            }
            if tools.as_ref().is_some_and(Vec::is_empty) {
                return Err(ConfigError::Empty {
                    what: "the tools of a denied pattern",
                    why: "name the tools, or use `deny` for every tool",
                });
            }
            deny.push(Deny {
                tools,
                source,
                regex,
            });
        }
        let empty = |what, why| Err(ConfigError::Empty { what, why });
        let mut paths = Vec::new();
        for (keys, roots) in self.paths {
            if keys.is_empty() {
                return empty(
                    "the keys of a path rule",
                    "name the argument keys that hold paths",
                );
            }
            if roots.is_empty() {
                return empty(
                    "the roots of a path rule",
                    "give the folders paths must be under",
                );
            }
            paths.push(Paths { keys, roots });
        }
        let mut hosts = Vec::new();
        for (keys, allowed) in self.hosts {
            if keys.is_empty() {
                return empty(
                    "the keys of a host rule",
                    "name the argument keys that hold URLs",
                );
            }
            let named = |h: &String| {
                let domain = h.strip_prefix("*.").unwrap_or(h);
                !domain.is_empty() && !domain.contains('*')
            };
            if allowed.is_empty() || !allowed.iter().all(named) {
                return empty(
                    "a host of a host rule",
                    "name each allowed host (`example.com`, or `*.example.com` for it and its subdomains)",
                );
            }
            hosts.push(Hosts {
                keys,
                hosts: allowed,
            });
        }
        if !self.schemas && deny.is_empty() && paths.is_empty() && hosts.is_empty() {
            return Err(ConfigError::NothingToDo(
                "the schema check is off and there is no rule",
            ));
        }
        Ok(ToolValidation {
            #[cfg(feature = "json-schema")]
            schemas: self.schemas.then(Schemas::default),
            deny,
            paths,
            hosts,
        })
    }
}

#[processor(crate = processors_runtime, id = "tool-validation")]
impl ToolValidation {
    fn process_tool_call(&self, call: &ToolCall, tool: Option<&dyn Tool>) -> ToolCallAction {
        let problems = self.problems(call, tool);
        if problems.is_empty() {
            return ToolCallAction::Continue;
        }
        tracing::debug!(tool = %call.tool_name, problems = problems.len(), "tool call refused");
        ToolCallAction::Refuse(format!(
            "the arguments of `{}` were refused, so it did not run: {}. Correct them and call it again.",
            call.tool_name,
            problems.join("; ")
        ))
    }
}
