//! From a [`Config`] to the gateway's routes: the upstreams' clients, each alias's model
//! under its policy, and each key's models under the key's policy. Every mistake of the file
//! is reported at once, with its place.

use crate::config::{
    Config, Key, MemoryConfig, Protocol, Route, ScriptedTurn, StoreKind, Upstream,
};
use crate::keys::KeyHash;
use crate::metrics::Metrics;
use processors_config::{Diagnostic, Lists, LoadError, Loader};
use processors_runtime::memory::{InMemoryStore, Memory, MemoryStore};
use processors_runtime::model::{LanguageModel, Processed, ScriptedModel, Turn};
use processors_runtime::processor::{Violation, ViolationKind};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::Semaphore;
use toml::Spanned;

/// A model a caller may name: the model under its policies, and the protocol its upstream
/// speaks (fields a client sends that the gateway does not read reach an upstream of the
/// client's protocol only).
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) model: Arc<dyn LanguageModel>,
    pub(crate) protocol: Protocol,
}

/// A gateway key's holder.
pub(crate) struct Caller {
    pub(crate) name: String,
    pub(crate) tenant: String,
    pub(crate) models: BTreeMap<String, Target>,
    pub(crate) limit: Option<Arc<Semaphore>>,
    pub(crate) max_concurrent: usize,
}

/// What a configuration builds.
pub(crate) struct Routes {
    pub(crate) callers: HashMap<KeyHash, Arc<Caller>>,
    /// Every alias, for telling a missing model from a forbidden one.
    pub(crate) aliases: Vec<String>,
    /// The conversations' store, when the gateway keeps them.
    pub(crate) memory: Option<Memory>,
}

/// Reads the environment variable `name`.
pub(crate) type Env<'a> = dyn Fn(&str) -> Option<String> + Send + Sync + 'a;

pub(crate) async fn routes(
    config: &Config,
    loader: &Loader,
    env: &Env<'_>,
    metrics: &Arc<Metrics>,
) -> Result<Routes, LoadError> {
    let mut b = Builder {
        config,
        errors: Vec::new(),
        policies: HashMap::new(),
        metrics,
    };
    let memory = match &config.memory {
        None => None,
        Some(spec) => match open_memory(config, spec.get_ref(), env).await {
            Ok(memory) => Some(memory),
            Err(message) => {
                b.errors.push(config.at(spec.span(), message));
                None
            }
        },
    };
    // Every policy is checked, named by a route or not.
    for name in config.policies.keys() {
        let lists = config
            .policy(loader, name)
            .map_err(|e| b.errors.extend(e.diagnostics().iter().cloned()))
            .ok();
        b.policies.insert(name, lists);
    }
    let mut models = BTreeMap::new();
    for (alias, route) in &config.models {
        if let Some(target) = b.route(alias, route, env) {
            models.insert(alias.clone(), target);
        }
    }
    let mut callers = HashMap::new();
    for key in &config.keys {
        let caller = b.caller(key, &models, memory.as_ref());
        if callers
            .insert(key.get_ref().sha256, Arc::new(caller))
            .is_some()
        {
            b.errors.push(config.at(
                key.span(),
                format!(
                    "the key `{}` has the hash of a key before it; give each key its own",
                    key.get_ref().name
                ),
            ));
        }
    }
    let mut errors = b.errors;
    if !errors.is_empty() {
        errors.sort_by_key(|d| (d.line, d.column));
        errors.dedup();
        return Err(LoadError::Invalid(errors));
    }
    Ok(Routes {
        callers,
        aliases: config.models.keys().cloned().collect(),
        memory,
    })
}

/// What building the routes keeps: the file, its mistakes so far, and the policies' lists
/// (`None` for a policy whose mistakes are reported).
struct Builder<'c> {
    config: &'c Config,
    errors: Vec<Diagnostic>,
    policies: HashMap<&'c str, Option<Lists>>,
    /// Where the processors' shadow decisions are counted.
    metrics: &'c Arc<Metrics>,
}

impl Builder<'_> {
    /// Counts the shadow decisions of the processors around the model `alias`.
    fn shadow_counter(&self, alias: &str) -> impl Fn(&Violation) + Send + Sync + 'static {
        let (metrics, alias) = (Arc::clone(self.metrics), alias.to_owned());
        move |v: &Violation| {
            if v.kind == ViolationKind::Shadow {
                let action = v.metadata.as_ref().and_then(|m| m["action"].as_str());
                metrics.shadow(&alias, &v.processor_id, action.unwrap_or("unknown"));
            }
        }
    }

    /// The lists of the policy a route or a key names, or nothing after reporting why.
    fn policy(&mut self, name: &Spanned<String>) -> Option<Lists> {
        let key = name.get_ref();
        if let Some(lists) = self.policies.get(key.as_str()) {
            return lists.clone();
        }
        let known: Vec<&str> = self.config.policies.keys().map(String::as_str).collect();
        let hint = match known.is_empty() {
            true => format!(
                "add a `[policies.{key}]` table with its `input`, `output` and `error` lists"
            ),
            false => format!("the policies: {}", known.join(", ")),
        };
        let e = self
            .config
            .at(name.span(), format!("there is no policy `{key}`; {hint}"));
        self.errors.push(e);
        None
    }

    /// The model of an alias: its upstream's client under its policy.
    fn route(&mut self, alias: &str, route: &Spanned<Route>, env: &Env<'_>) -> Option<Target> {
        let config = self.config;
        let span = route.span();
        let route = route.get_ref();
        let Some(upstream) = config.upstreams.get(route.upstream.get_ref()) else {
            let known: Vec<&str> = config.upstreams.keys().map(String::as_str).collect();
            let hint = match known.is_empty() {
                true => "add an `[upstreams.NAME]` table".to_owned(),
                false => format!("the upstreams: {}", known.join(", ")),
            };
            let message = format!(
                "there is no upstream `{}`; {hint}",
                route.upstream.get_ref()
            );
            self.errors.push(config.at(route.upstream.span(), message));
            return None;
        };
        let lists = route.policy.as_ref().and_then(|p| self.policy(p));
        let model_id = route.model.as_deref().unwrap_or(alias);
        let built = client(upstream.get_ref(), model_id, env)
            .map_err(|message| config.at(upstream.span(), message))
            .and_then(|client| match lists {
                None => Ok(client),
                Some(lists) => wrap(client, lists, None, self.shadow_counter(alias))
                    .map_err(|m| config.at(span, m)),
            });
        match built {
            Ok(model) => Some(Target {
                model,
                protocol: upstream.get_ref().protocol,
            }),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    /// A key's holder: the models it may call, under its policy and, outermost, memory (it
    /// loads a thread before every processor and saves what they all left).
    fn caller(
        &mut self,
        key: &Spanned<Key>,
        models: &BTreeMap<String, Target>,
        memory: Option<&Memory>,
    ) -> Caller {
        let config = self.config;
        let span = key.span();
        let key = key.get_ref();
        let mut theirs = BTreeMap::new();
        match &key.models {
            None => theirs.clone_from(models),
            Some(allowed) => {
                for alias in allowed {
                    let name = alias.get_ref();
                    if let Some(target) = models.get(name) {
                        theirs.insert(name.clone(), target.clone());
                    } else if !config.models.contains_key(name) {
                        let aliases: Vec<&str> = config.models.keys().map(String::as_str).collect();
                        let message = format!(
                            "the key `{}` may call `{name}`, which is not a model alias; the aliases: {}",
                            key.name,
                            aliases.join(", ")
                        );
                        self.errors.push(config.at(alias.span(), message));
                    }
                }
            }
        }
        let lists = key.policy.as_ref().and_then(|p| self.policy(p));
        if lists.is_some() || memory.is_some() {
            for (alias, target) in &mut theirs {
                let lists = lists.clone().unwrap_or_default();
                let counter = self.shadow_counter(alias);
                match wrap(target.model.clone(), lists, memory.cloned(), counter) {
                    Ok(model) => target.model = model,
                    Err(message) => {
                        self.errors.push(config.at(span.clone(), message));
                        break;
                    }
                }
            }
        }
        if key.max_concurrent == Some(0) {
            let message = format!(
                "the key `{}` has `max_concurrent = 0`: it could never call; remove it (no limit) or raise it",
                key.name
            );
            self.errors.push(config.at(span, message));
        }
        Caller {
            name: key.name.clone(),
            tenant: key.tenant.clone().unwrap_or_else(|| key.name.clone()),
            models: theirs,
            limit: key.max_concurrent.map(|n| Arc::new(Semaphore::new(n))),
            max_concurrent: key.max_concurrent.unwrap_or(0),
        }
    }
}

/// `model` under the processors of `lists`, with `memory` around them; `on_violation` hears
/// their aborts, warnings and shadow decisions.
fn wrap(
    model: Arc<dyn LanguageModel>,
    lists: Lists,
    memory: Option<Memory>,
    on_violation: impl Fn(&Violation) + Send + Sync + 'static,
) -> Result<Arc<dyn LanguageModel>, String> {
    let mut builder = Processed::builder(model).on_violation(on_violation);
    if let Some(memory) = memory {
        builder = builder.memory(memory);
    }
    builder
        .input_pipeline(lists.input)
        .output_pipeline(lists.output)
        .error_pipeline(lists.error)
        .build()
        .map(|p| Arc::new(p) as Arc<dyn LanguageModel>)
        .map_err(|e| e.to_string())
}

/// The memory of the file's `[memory]` table, or why not.
async fn open_memory(
    config: &Config,
    spec: &MemoryConfig,
    env: &Env<'_>,
) -> Result<Memory, String> {
    let store: Arc<dyn MemoryStore> = match spec.store {
        StoreKind::InMemory => Arc::new(InMemoryStore::new()),
        StoreKind::Sqlite => {
            let Some(path) = &spec.path else {
                return Err(
                    "`store = \"sqlite\"` needs a `path` to its file, like `path = \"gateway.db\"`"
                        .to_owned(),
                );
            };
            let file = match config.base() {
                Some(base) if path.is_relative() => base.join(path),
                _ => path.clone(),
            };
            let store = processors_builtins::storage::SqliteStore::open(&file)
                .map_err(|e| format!("cannot open the SQLite store {}: {e}", file.display()))?;
            Arc::new(store)
        }
        StoreKind::Postgres => {
            let Some(var) = &spec.url_env else {
                return Err("`store = \"postgres\"` reads its URL from the environment: add `url_env = \"DATABASE_URL\"`".to_owned());
            };
            let Some(url) = env(var) else {
                return Err(format!(
                    "the PostgreSQL URL is read from the environment variable {var}, which is not set; set it"
                ));
            };
            postgres(&url, spec.schema.as_deref()).await?
        }
    };
    Ok(Memory::shared(store).last_messages(Some(spec.last_messages.unwrap_or(40))))
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str, schema: Option<&str>) -> Result<Arc<dyn MemoryStore>, String> {
    let mut builder = processors_builtins::storage::PostgresStore::builder(url);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    let store = builder
        .connect()
        .await
        .map_err(|e| format!("cannot open the PostgreSQL store: {e}"))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str, _: Option<&str>) -> Result<Arc<dyn MemoryStore>, String> {
    Err("memory in PostgreSQL needs the gateway's `postgres` feature (`cargo run -p processors-gateway --features postgres`)".to_owned())
}

/// An HTTP client from its builder, with the upstream's base URL, key and retries.
macro_rules! http_client {
    ($builder:expr, $upstream:expr, $key:expr) => {{
        let mut b = $builder;
        if let Some(url) = &$upstream.base_url {
            b = b.base_url(url);
        }
        if let Some(key) = $key {
            b = b.api_key(key);
        }
        if let Some(n) = $upstream.max_retries {
            b = b.max_retries(n);
        }
        Arc::new(b.build().map_err(|e| e.to_string())?)
    }};
}

/// The client of `upstream` for the model `model_id`.
fn client(
    upstream: &Upstream,
    model_id: &str,
    env: &Env<'_>,
) -> Result<Arc<dyn LanguageModel>, String> {
    let key = match &upstream.api_key_env {
        None => None,
        Some(var) => match env(var) {
            Some(key) if !key.is_empty() => Some(key),
            _ => {
                return Err(format!(
                    "the upstream's key is read from the environment variable {var}, which is not set; set it, or remove `api_key_env` for an upstream without a key"
                ));
            }
        },
    };
    if upstream.protocol != Protocol::Scripted && !upstream.turns.is_empty() {
        return Err("`turns` are the answers of a `scripted` upstream; remove them".to_owned());
    }
    let model: Arc<dyn LanguageModel> = match upstream.protocol {
        Protocol::Openai => http_client!(
            processors_providers::OpenAiCompatible::builder(model_id),
            upstream,
            key
        ),
        Protocol::Anthropic => http_client!(
            processors_providers::Anthropic::builder(model_id),
            upstream,
            key
        ),
        Protocol::Scripted => {
            if upstream.turns.is_empty() {
                return Err(
                    "a `scripted` upstream answers with its `turns`; add some, like `turns = [[\"Hello\", \" there\"]]`"
                        .to_owned(),
                );
            }
            let turns = upstream.turns.iter().map(|t| match t {
                ScriptedTurn::Text(text) => Turn::text(text.clone()),
                ScriptedTurn::Deltas(deltas) => Turn::deltas(deltas.clone()),
            });
            Arc::new(
                ScriptedModel::cycle(turns)
                    .named(model_id)
                    .without_recording(),
            )
        }
    };
    Ok(model)
}
