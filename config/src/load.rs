//! Loading a file: parse, check every key and entry (reporting every mistake with its place),
//! then build the agent or its lists.

use crate::error::{Errors, LoadError};
use crate::memory::{MemorySpec, Store};
use crate::model::Env;
use crate::model::ModelSpec;
use crate::names::did_you_mean;
use crate::registry::{Cx, Refusal, Registry};
use processors_runtime::agent::Agent;
use processors_runtime::memory::{InMemoryStore, Memory, MemoryStore};
use processors_runtime::model::LanguageModel;
use processors_runtime::processor::{DynPipeline, Hooks, ProcessorRef};
use serde::Deserialize;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The keys of an agent's file.
const AGENT_KEYS: [&str; 9] = [
    "name",
    "instructions",
    "model",
    "memory",
    "input",
    "output",
    "error",
    "max_processor_retries",
    "max_steps",
];

/// The keys of a file of lists.
const LIST_KEYS: [&str; 3] = ["input", "output", "error"];

/// The three lists, in the order they are checked.
const LISTS: [&str; 3] = ["input", "output", "error"];

/// Loads agents and processor lists from TOML files, with a [`Registry`] of processors and
/// the environment the providers read their keys from.
///
/// ```
/// use processors_config::Loader;
/// let file = r#"
/// name = "support"
/// instructions = "You are the support assistant of Acme."
/// model = { scripted = [["Write to ", "jane@example.com", "."]] }
/// output = [{ processor = "regex-filter", presets = ["pii"] }]
/// "#;
/// let agent = Loader::new().agent_str("agent.toml", file)?;
/// # futures::executor::block_on(async {
/// let result = agent.generate("Who can help?").await?;
/// assert_eq!(result.text, "Write to [EMAIL].");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Loader {
    registry: Registry,
    env: Env,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Default for Loader {
    fn default() -> Self {
        Loader::new()
    }
}

/// The processor lists of a file, for an agent built in code or for one call.
///
/// ```
/// use processors_config::Loader;
/// use processors_runtime::prelude::*;
/// let lists = Loader::new().lists_str("lists.toml", "output = [\"batch-parts\"]\n")?;
/// assert_eq!(lists.output.len(), 1);
/// let agent = lists.apply(Agent::builder().model(ScriptedModel::new([]))).build()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Lists {
    /// The `input` list.
    pub input: DynPipeline,
    /// The `output` list.
    pub output: DynPipeline,
    /// The `error` list.
    pub error: DynPipeline,
}

impl std::fmt::Debug for Lists {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lists")
            .field("input", &self.input.len())
            .field("output", &self.output.len())
            .field("error", &self.error.len())
            .finish()
    }
}

impl Lists {
    /// The builder with these lists in place of its own.
    pub fn apply(
        self,
        builder: processors_runtime::agent::AgentBuilder,
    ) -> processors_runtime::agent::AgentBuilder {
        builder
            .input_pipeline(self.input)
            .output_pipeline(self.output)
            .error_pipeline(self.error)
    }
}

impl Loader {
    /// A loader with every built-in processor, reading the process's environment.
    pub fn new() -> Self {
        Loader {
            registry: Registry::new(),
            env: Arc::new(|name| std::env::var(name).ok()),
        }
    }

    /// Loads with `registry` (the built-ins and your processors; see [`Registry`]).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Reads the providers' keys and base URLs through `env` instead of the process's
    /// environment (a secret store, a test).
    ///
    /// ```
    /// use processors_config::Loader;
    /// let loader = Loader::new().env(|name| (name == "OPENAI_API_KEY").then(|| "sk-test".into()));
    /// let agent = loader.agent_str("agent.toml", "model = \"openai/gpt-4o-mini\"\n");
    /// assert!(agent.is_ok());
    /// let error = Loader::new().env(|_| None).agent_str("agent.toml", "model = \"openai/gpt-4o-mini\"\n");
    /// assert!(error.err().unwrap().to_string().contains("set the OPENAI_API_KEY environment variable"));
    /// ```
    pub fn env(mut self, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Arc::new(env);
        self
    }

    /// The agent of the file at `path`. Relative paths in it (a SQLite file, a root) are
    /// relative to the file's directory.
    pub fn agent(&self, path: impl AsRef<Path>) -> Result<Agent, LoadError> {
        let path = path.as_ref();
        let text = read(path)?;
        self.load(
            &path.display().to_string(),
            &text,
            path.parent(),
            Want::Agent,
        )?
        .agent()
    }

    /// The agent of `text`, named `file` in errors. Relative paths in it are relative to the
    /// current directory.
    pub fn agent_str(&self, file: &str, text: &str) -> Result<Agent, LoadError> {
        self.load(file, text, None, Want::Agent)?.agent()
    }

    /// The lists of the file at `path`: a file of `input`, `output` and `error` alone.
    pub fn lists(&self, path: impl AsRef<Path>) -> Result<Lists, LoadError> {
        let path = path.as_ref();
        let text = read(path)?;
        Ok(self
            .load(
                &path.display().to_string(),
                &text,
                path.parent(),
                Want::Lists,
            )?
            .lists)
    }

    /// The lists of `text`, named `file` in errors.
    pub fn lists_str(&self, file: &str, text: &str) -> Result<Lists, LoadError> {
        Ok(self.load(file, text, None, Want::Lists)?.lists)
    }

    /// The lists of the table at `table` inside `text` (`["policies", "strict"]` for a
    /// `[policies.strict]` table), for a file of a program's own whose tables hold lists. The
    /// table holds `input`, `output` and `error` alone, and every mistake is placed in the
    /// whole file. Relative paths are relative to `base` (the current directory when `None`).
    ///
    /// ```
    /// use processors_config::Loader;
    /// let text = "listen = \"127.0.0.1:8787\"\n\n[policies.strict]\ninput = [\"unicode-normalizr\"]\n";
    /// let error = Loader::new().lists_in("gateway.toml", text, &["policies", "strict"], None).err().unwrap();
    /// assert!(error.to_string().starts_with("gateway.toml:4:10: unknown processor `unicode-normalizr` (did you mean `unicode-normalizer`?)"));
    /// let text = "[policies.strict]\ninput = [\"unicode-normalizer\"]\n";
    /// let lists = Loader::new().lists_in("gateway.toml", text, &["policies", "strict"], None)?;
    /// assert_eq!(lists.input.len(), 1);
    /// # Ok::<(), processors_config::LoadError>(())
    /// ```
    pub fn lists_in(
        &self,
        file: &str,
        text: &str,
        table: &[&str],
        base: Option<&Path>,
    ) -> Result<Lists, LoadError> {
        let mut errors = Errors::new(file, text);
        let Some(mut current) = parse(text, &mut errors) else {
            return Err(failed(errors));
        };
        let mut span = 0..0;
        for (depth, key) in table.iter().enumerate() {
            let found = current
                .iter()
                .map(|(k, _)| k)
                .find(|k| k.as_ref() == key)
                .cloned();
            let inner = found.and_then(|k| current.remove(&k));
            let path = table[..=depth].join(".");
            match inner.map(|v| (v.span(), v.into_inner())) {
                Some((s, DeValue::Table(t))) => {
                    span = s;
                    current = t;
                }
                Some((s, other)) => {
                    errors.at(
                        &s,
                        format!("`{path}` is a table of lists, not {}", other.type_str()),
                    );
                    return Err(failed(errors));
                }
                None => {
                    errors.at(&span, format!("there is no table `{path}`"));
                    return Err(failed(errors));
                }
            }
        }
        let raw = Raw::read(current, Want::Lists, &mut errors);
        let loaded = self.check(raw, base, Want::Lists, &mut errors);
        errors.finish()?;
        Ok(loaded.lists)
    }

    fn load(
        &self,
        file: &str,
        text: &str,
        base: Option<&Path>,
        want: Want,
    ) -> Result<Loaded, LoadError> {
        let mut errors = Errors::new(file, text);
        let Some(root) = parse(text, &mut errors) else {
            return Err(failed(errors));
        };
        let raw = Raw::read(root, want, &mut errors);
        let loaded = self.check(raw, base, want, &mut errors);
        errors.finish()?;
        Ok(loaded)
    }

    /// Builds what the file describes, reporting every mistake.
    fn check(
        &self,
        raw: Raw<'_>,
        base: Option<&Path>,
        want: Want,
        errors: &mut Errors<'_>,
    ) -> Loaded {
        let memory = raw.memory.and_then(|m| open_memory(m, base, errors));
        let model = raw
            .model
            .and_then(|(spec, span)| match spec.build(&self.env) {
                Ok(model) => Some(model),
                Err(message) => {
                    errors.at(&span, message);
                    None
                }
            });
        if want == Want::Agent && model.is_none() && !raw.has_model {
            errors.at(
                &(0..0),
                "the agent has no model; add one, like `model = \"openai/gpt-4o-mini\"` (its key read from the environment) or `model = { scripted = [\"Hello!\"] }`",
            );
        }
        let cx = Cx {
            memory: memory.as_ref(),
            env: &self.env,
            base,
            shared: Default::default(),
        };
        let mut lists = Lists::default();
        let mut all_hooks = Hooks::NONE;
        for (list, entries) in LISTS.into_iter().zip(raw.lists) {
            let pipeline = match list {
                "input" => &mut lists.input,
                "output" => &mut lists.output,
                _ => &mut lists.error,
            };
            let built = self.list(list, entries, memory.is_some(), want, &cx, errors);
            for item in built {
                all_hooks = all_hooks | item.hooks;
                match item.processor {
                    Some(p) => pipeline.push(p),
                    None => {
                        if let Some(m) = &memory {
                            pipeline.push(Arc::new(m.clone()) as ProcessorRef);
                        }
                    }
                }
            }
        }
        if let Some((n, span)) = &raw.max_processor_retries {
            if !all_hooks.can_retry() {
                errors.at(
                    span,
                    "`max_processor_retries` is set, but no processor of this agent can ask for a retry (none has `process_input_step`, `process_output_step`, `process_tool_call` or `process_api_error`); remove the key or add such a processor",
                );
            } else if *n == 0 && !lists.error.is_empty() {
                errors.at(
                    span,
                    "with `max_processor_retries = 0` the error processors could never retry; remove the key (error processors then get 3 retries) or raise it",
                );
            }
        }
        if let Some((0, span)) = &raw.max_steps {
            errors.at(
                span,
                "`max_steps` is 0: a run needs at least one step; remove the key (5 steps) or raise it",
            );
        }
        Loaded {
            file: errors.file().to_owned(),
            name: raw.name,
            instructions: raw.instructions,
            model,
            memory,
            max_processor_retries: raw.max_processor_retries.map(|(n, _)| n),
            max_steps: raw.max_steps.map(|(n, _)| n),
            lists,
        }
    }

    /// The processors of one list, in order; `processor: None` stands for the agent's memory.
    fn list(
        &self,
        list: &'static str,
        entries: Vec<RawEntry<'_>>,
        has_memory: bool,
        want: Want,
        cx: &Cx<'_>,
        errors: &mut Errors<'_>,
    ) -> Vec<Built> {
        let mut built: Vec<Built> = Vec::new();
        let mut memory_at: Option<Range<usize>> = None;
        let mut ids: Vec<(String, Range<usize>)> = Vec::new();
        for entry in entries {
            let name = entry.name.as_str();
            if memory_at.is_some()
                && list == "output"
                && name != processors_runtime::memory::MEMORY_ID
            {
                errors.at(
                    &entry.span,
                    format!(
                        "`{name}` comes after `memory` in `output`: it would change what streams but not what is saved; move `memory` to the end of the list"
                    ),
                );
            }
            if name == processors_runtime::memory::MEMORY_ID {
                if Self::memory_entry(list, &entry, has_memory, want, memory_at.is_some(), errors) {
                    built.push(Built {
                        hooks: Hooks::NONE,
                        processor: None,
                    });
                }
                memory_at.get_or_insert(entry.span.clone());
                continue;
            }
            let name = name.to_owned();
            let name_span = entry.name_span.clone();
            let Some((processor, hooks)) = self.processor(list, entry, cx, errors) else {
                continue;
            };
            let id = processor.dyn_id().to_owned();
            if let Some((_, first)) = ids.iter().find(|(seen, _)| *seen == id) {
                let (line, column) = errors.position(first.start);
                errors.at(
                    &name_span,
                    format!(
                        "`{name}` has the id `{id}`, as the processor at {line}:{column} before it in `{list}`: the two would share one state; keep one, or merge their options into one entry"
                    ),
                );
            } else {
                ids.push((id, name_span));
            }
            built.push(Built {
                hooks,
                processor: Some(processor),
            });
        }
        built
    }

    /// Checks the entry `memory` of `list` (`again`: one came before it in the list): whether
    /// the agent's memory goes there.
    fn memory_entry(
        list: &'static str,
        entry: &RawEntry<'_>,
        has_memory: bool,
        want: Want,
        again: bool,
        errors: &mut Errors<'_>,
    ) -> bool {
        if let Some(options) = entry.options.as_ref().and_then(|o| o.iter().next()) {
            errors.at(
                &options.0.span(),
                "`memory` takes no options here; set them in the `memory` table",
            );
        }
        if entry.shadow {
            errors.at(
                &entry.span,
                "`memory` cannot run in shadow: it loads and saves the conversation, which is not a decision to record",
            );
        }
        if list == "error" {
            errors.at(
                &entry.span,
                "memory has no `process_api_error` hook; place it in `input` or `output`",
            );
        } else if want == Want::Lists {
            errors.at(
                &entry.span,
                format!(
                    "a file of lists has no memory to place in `{list}`; give the agent memory in code (`.memory(...)`): it loads first in `input` and saves last in `output` by itself"
                ),
            );
        } else if !has_memory {
            errors.at(
                &entry.span,
                format!(
                    "`memory` in `{list}` refers to the agent's memory, but there is no `memory` key; add one, like `memory = {{ store = \"in-memory\" }}`"
                ),
            );
        } else if again {
            errors.at(
                &entry.span,
                format!("`memory` is twice in `{list}`; keep one"),
            );
        } else {
            return true;
        }
        false
    }

    /// The processor of an entry, built, with its hooks; or nothing, after reporting why.
    fn processor(
        &self,
        list: &'static str,
        entry: RawEntry<'_>,
        cx: &Cx<'_>,
        errors: &mut Errors<'_>,
    ) -> Option<(ProcessorRef, Hooks)> {
        let name = entry.name.as_str();
        let Some(registered) = self.registry.get(name) else {
            let hint = did_you_mean(name, self.registry.names());
            let known = match hint.is_empty() {
                true => format!(
                    "; known processors: {}",
                    self.registry.names().collect::<Vec<_>>().join(", ")
                ),
                false => String::new(),
            };
            errors.at(
                &entry.name_span,
                format!("unknown processor `{name}`{hint}{known}"),
            );
            return None;
        };
        let hooks = registered.hooks;
        let belongs = match list {
            "input" => hooks.is_input(),
            "output" => hooks.is_output(),
            _ => hooks.is_error(),
        };
        if !belongs {
            errors.at(
                &entry.name_span,
                format!(
                    "`{name}` is in `{list}` but has no {list} hook (its hooks: {hooks:?}); {}",
                    hooks.home()
                ),
            );
        }
        let mut options = entry.options.unwrap_or_default();
        if let Some(fields) = registered.fields {
            let unknown: Vec<Spanned<std::borrow::Cow<'_, str>>> = options
                .iter()
                .map(|(k, _)| k)
                .filter(|k| !fields.contains(&k.as_ref().as_ref()))
                .cloned()
                .collect();
            for key in unknown {
                let option = key.as_ref().as_ref();
                let hint = did_you_mean(option, fields.iter().copied());
                let its = match fields.is_empty() {
                    true => "it takes none".to_owned(),
                    false => format!("its options: {}", fields.join(", ")),
                };
                errors.at(
                    &key.span(),
                    format!("`{name}` has no option `{option}`{hint}; {its}"),
                );
                options.remove(&key);
            }
        }
        let spans: Vec<(String, Range<usize>)> = options
            .iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.span()))
            .collect();
        let value = Spanned::new(entry.span.clone(), DeValue::Table(options));
        match (registered.build)(value, cx, entry.shadow) {
            Ok(processor) => return Some((processor, hooks)),
            Err(Refusal::Value(e)) => errors.serde(&e, &entry.span, &format!("`{name}`: ")),
            Err(Refusal::Option(option, message)) => {
                let span = spans
                    .iter()
                    .find(|(k, _)| k == option)
                    .map_or(entry.span.clone(), |(_, s)| s.clone());
                errors.at(&span, format!("`{name}`: {message}"));
            }
            Err(Refusal::Other(message)) => errors.at(&entry.span, format!("`{name}`: {message}")),
        }
        None
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Agent,
    Lists,
}

/// One processor of a list, built (or the agent's memory, `None`).
struct Built {
    hooks: Hooks,
    processor: Option<ProcessorRef>,
}

/// What a file holds, each value with its span, before anything is built.
struct Raw<'i> {
    name: Option<String>,
    instructions: Vec<String>,
    has_model: bool,
    model: Option<(ModelSpec, Range<usize>)>,
    memory: Option<Spanned<MemorySpec>>,
    max_processor_retries: Option<(u32, Range<usize>)>,
    max_steps: Option<(u32, Range<usize>)>,
    lists: [Vec<RawEntry<'i>>; 3],
}

/// An entry of a list: a name, with the options of a table entry.
struct RawEntry<'i> {
    name: String,
    name_span: Range<usize>,
    span: Range<usize>,
    options: Option<DeTable<'i>>,
    /// `shadow = true`: the processor's decisions are recorded instead of applied.
    shadow: bool,
}

/// Takes an entry's `shadow` key out of its options: whether it is `true`, after reporting
/// a value that is not a boolean.
fn shadow_of(table: &mut DeTable<'_>, errors: &mut Errors<'_>) -> bool {
    let key = table
        .iter()
        .map(|(k, _)| k)
        .find(|k| k.as_ref() == "shadow")
        .cloned();
    let Some(value) = key.and_then(|k| table.remove(&k)) else {
        return false;
    };
    let span = value.span();
    match value.into_inner() {
        DeValue::Boolean(shadow) => shadow,
        other => {
            errors.at(
                &span,
                format!(
                    "`shadow` is `true` (the processor's decisions are recorded, not applied) or `false`, not {}",
                    other.type_str()
                ),
            );
            false
        }
    }
}

/// Deserialises one value, reporting a failure at its place.
fn value<T: for<'de> Deserialize<'de>>(
    value: Spanned<DeValue<'_>>,
    key: &str,
    errors: &mut Errors<'_>,
) -> Option<T> {
    let span = value.span();
    T::deserialize(toml::de::ValueDeserializer::from(value))
        .map_err(|e| errors.serde(&e, &span, &format!("`{key}`: ")))
        .ok()
}

impl<'i> Raw<'i> {
    fn read(root: DeTable<'i>, want: Want, errors: &mut Errors<'_>) -> Raw<'i> {
        let mut raw = Raw {
            name: None,
            instructions: Vec::new(),
            has_model: false,
            model: None,
            memory: None,
            max_processor_retries: None,
            max_steps: None,
            lists: [Vec::new(), Vec::new(), Vec::new()],
        };
        let keys: &[&str] = match want {
            Want::Agent => &AGENT_KEYS,
            Want::Lists => &LIST_KEYS,
        };
        for (key, v) in root {
            let key_span = key.span();
            let key = key.into_inner();
            let span = v.span();
            if !keys.contains(&key.as_ref()) {
                let message = match AGENT_KEYS.contains(&key.as_ref()) {
                    true => format!(
                        "`{key}` configures an agent; a file of lists holds only `input`, `output` and `error` (load it as an agent, or set `{key}` in code)"
                    ),
                    false => format!(
                        "unknown key `{key}`{}; valid keys: {}",
                        did_you_mean(&key, keys.iter().copied()),
                        keys.join(", ")
                    ),
                };
                errors.at(&key_span, message);
                continue;
            }
            match key.as_ref() {
                "name" => raw.name = value(v, &key, errors),
                "instructions" => {
                    raw.instructions = match v.get_ref() {
                        DeValue::String(_) => {
                            value::<String>(v, &key, errors).into_iter().collect()
                        }
                        _ => value::<Vec<String>>(v, &key, errors).unwrap_or_default(),
                    }
                }
                "model" => {
                    raw.has_model = true;
                    raw.model = value(v, &key, errors).map(|m| (m, span));
                }
                "memory" => {
                    raw.memory = value::<MemorySpec>(v, &key, errors).map(|m| Spanned::new(span, m))
                }
                "max_processor_retries" => {
                    raw.max_processor_retries = value(v, &key, errors).map(|n| (n, span))
                }
                "max_steps" => raw.max_steps = value(v, &key, errors).map(|n| (n, span)),
                list => {
                    let at = LISTS.iter().position(|l| *l == list).unwrap_or(0);
                    raw.lists[at] = entries(v, list, errors);
                }
            }
        }
        raw
    }
}

/// The file's table, or nothing after reporting every syntax error.
fn parse<'i>(text: &'i str, errors: &mut Errors<'_>) -> Option<DeTable<'i>> {
    let (root, parse_errors) = DeTable::parse_recoverable(text);
    for e in &parse_errors {
        errors.serde(e, &(0..0), "");
    }
    parse_errors.is_empty().then(|| root.into_inner())
}

/// The error of a load that found mistakes.
fn failed(errors: Errors<'_>) -> LoadError {
    errors
        .finish()
        .err()
        .unwrap_or_else(|| LoadError::Invalid(Vec::new()))
}

/// The entries of a list: names (`"batch-parts"`) and tables (`{ processor = "…", … }`, or
/// `[[output]]` tables).
fn entries<'i>(
    list: Spanned<DeValue<'i>>,
    key: &str,
    errors: &mut Errors<'_>,
) -> Vec<RawEntry<'i>> {
    let span = list.span();
    let DeValue::Array(items) = list.into_inner() else {
        errors.at(
            &span,
            format!(
                "`{key}` takes a list of processors, like `{key} = [\"batch-parts\", {{ processor = \"regex-filter\", presets = [\"pii\"] }}]`"
            ),
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items.iter().cloned() {
        let span = item.span();
        match item.into_inner() {
            DeValue::String(name) => out.push(RawEntry {
                name: name.into_owned(),
                name_span: span.clone(),
                span,
                options: None,
                shadow: false,
            }),
            DeValue::Table(mut table) => {
                let name_key = table
                    .iter()
                    .map(|(k, _)| k)
                    .find(|k| k.as_ref() == "processor")
                    .cloned();
                let Some(name_key) = name_key else {
                    errors.at(
                        &span,
                        format!(
                            "this entry of `{key}` names no processor; add `processor = \"...\"` with its options"
                        ),
                    );
                    continue;
                };
                let Some(name) = table.remove(&name_key) else {
                    continue;
                };
                let name_span = name.span();
                let shadow = shadow_of(&mut table, errors);
                match name.into_inner() {
                    DeValue::String(name) => out.push(RawEntry {
                        name: name.into_owned(),
                        name_span,
                        span,
                        options: Some(table),
                        shadow,
                    }),
                    other => errors.at(
                        &name_span,
                        format!(
                            "`processor` is the processor's name, a string like \"regex-filter\", not {}",
                            other.type_str()
                        ),
                    ),
                }
            }
            other => errors.at(
                &span,
                format!(
                    "an entry of `{key}` is a processor's name, or a table with `processor = \"...\"` and its options, not {}",
                    other.type_str()
                ),
            ),
        }
    }
    out
}

/// The memory the file describes, or nothing after reporting why not.
fn open_memory(
    spec: Spanned<MemorySpec>,
    base: Option<&Path>,
    errors: &mut Errors<'_>,
) -> Option<Memory> {
    let span = spec.span();
    let spec = spec.into_inner();
    let store: Arc<dyn MemoryStore> = match *spec.store.get_ref() {
        Store::InMemory => {
            if let Some(path) = &spec.path {
                errors.at(
                    &path.span(),
                    "an in-memory store has no `path`; remove it, or use `store = \"sqlite\"` to keep the memory in that file",
                );
                return None;
            }
            Arc::new(InMemoryStore::new())
        }
        Store::Sqlite => {
            let Some(path) = &spec.path else {
                errors.at(
                    &span,
                    "`store = \"sqlite\"` needs a `path` to its file, like `path = \"agent.db\"`",
                );
                return None;
            };
            sqlite(path, base, errors)?
        }
    };
    Some(Memory::shared(store).last_messages(Some(spec.last_messages)))
}

#[cfg(feature = "sqlite")]
fn sqlite(
    path: &Spanned<std::path::PathBuf>,
    base: Option<&Path>,
    errors: &mut Errors<'_>,
) -> Option<Arc<dyn MemoryStore>> {
    let file = match base {
        Some(base) if path.get_ref().is_relative() => base.join(path.get_ref()),
        _ => path.get_ref().clone(),
    };
    match processors_builtins::storage::SqliteStore::open(&file) {
        Ok(store) => Some(Arc::new(store)),
        Err(e) => {
            errors.at(
                &path.span(),
                format!("cannot open the SQLite store {}: {e}", file.display()),
            );
            None
        }
    }
}

#[cfg(not(feature = "sqlite"))]
fn sqlite(
    path: &Spanned<std::path::PathBuf>,
    _: Option<&Path>,
    errors: &mut Errors<'_>,
) -> Option<Arc<dyn MemoryStore>> {
    errors.at(
        &path.span(),
        "memory in SQLite needs the `sqlite` feature of `processors` (on by default); turn it on, or use `store = \"in-memory\"`",
    );
    None
}

fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })
}

/// What a file built: the agent's parts.
struct Loaded {
    file: String,
    name: Option<String>,
    instructions: Vec<String>,
    model: Option<Arc<dyn LanguageModel>>,
    memory: Option<Memory>,
    max_processor_retries: Option<u32>,
    max_steps: Option<u32>,
    lists: Lists,
}

impl Loaded {
    fn agent(self) -> Result<Agent, LoadError> {
        let mut builder = Agent::builder();
        if let Some(name) = self.name {
            builder = builder.name(name);
        }
        for text in self.instructions {
            builder = builder.instructions(text);
        }
        if let Some(model) = self.model {
            builder = builder.shared_model(model);
        }
        if let Some(memory) = self.memory {
            builder = builder.memory(memory);
        }
        if let Some(n) = self.max_processor_retries {
            builder = builder.max_processor_retries(n);
        }
        if let Some(n) = self.max_steps {
            builder = builder.max_steps(n);
        }
        // The load checked what `build` checks, with places; a refusal here is the runtime's
        // own, reported at the file's start.
        self.lists.apply(builder).build().map_err(|e| {
            LoadError::Invalid(vec![crate::error::Diagnostic {
                file: self.file,
                line: 1,
                column: 1,
                message: e.to_string(),
            }])
        })
    }
}
