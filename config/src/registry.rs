//! Processors by name: the built-ins, and the user's processors registered by type or with a
//! factory, each with its options deserialised from the file.

use crate::model::{Env, ModelSpec};
use processors_runtime::memory::Memory;
use processors_runtime::model::LanguageModel;
use processors_runtime::processor::{Hooks, Processor, ProcessorRef, Shadow, boxed};
use serde::de::{self, DeserializeOwned, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::Spanned;
use toml::de::DeValue;

/// What a built-in's factory has at hand besides its options: the agent's memory, the
/// environment (for judges named by model id) and the file's directory.
pub(crate) struct Cx<'a> {
    pub memory: Option<&'a Memory>,
    pub env: &'a Env,
    pub base: Option<&'a Path>,
    /// The processors that are one instance across a file's lists (a response cache in
    /// `input` and in `output`), by name: built at their first entry, with its options.
    pub shared: std::cell::RefCell<BTreeMap<String, Shared>>,
}

/// A processor built once for a file, the options it was built with, and whether it runs in
/// shadow.
pub(crate) struct Shared {
    options: Box<dyn std::any::Any>,
    shadow: bool,
    processor: ProcessorRef,
}

impl Cx<'_> {
    /// A judge's model, as the agent's is given.
    pub fn model(&self, spec: &ModelSpec) -> Result<Arc<dyn LanguageModel>, Refusal> {
        spec.build(self.env)
            .map_err(|e| Refusal::Option("judge", e))
    }

    /// A path of the file, relative to the file's directory.
    pub fn path(&self, path: &Path) -> PathBuf {
        match self.base {
            Some(base) if path.is_relative() => base.join(path),
            _ => path.to_owned(),
        }
    }

    /// The agent's memory, for a built-in that keeps its data in the agent's store.
    pub fn memory(&self) -> Result<&Memory, Refusal> {
        self.memory.ok_or_else(|| {
            Refusal::Other(
                "it keeps its data in the agent's memory store, and the agent has none; give the agent memory, like `memory = { store = \"in-memory\" }`".to_owned(),
            )
        })
    }
}

/// Why a factory refused its options.
pub(crate) enum Refusal {
    /// The options do not deserialise.
    Value(toml::de::Error),
    /// An option's value is refused (reported at that option when the entry names it).
    Option(&'static str, String),
    /// The options together are refused (reported at the entry).
    Other(String),
}

impl From<processors_builtins::ConfigError> for Refusal {
    fn from(error: processors_builtins::ConfigError) -> Self {
        use processors_builtins::ConfigError as E;
        match &error {
            E::Zero { option, .. } | E::OutOfRange { option, .. } => {
                Refusal::Option(option, error.to_string())
            }
            _ => Refusal::Other(error.to_string()),
        }
    }
}

/// Builds an entry's processor from its options; in [`Shadow`] when the entry says
/// `shadow = true`.
type Build = dyn for<'i> Fn(Spanned<DeValue<'i>>, &Cx<'_>, bool) -> Result<ProcessorRef, Refusal>
    + Send
    + Sync;

/// `processor`, behind a pointer, in shadow when `shadow` is set.
fn built<P: Processor>(processor: P, shadow: bool) -> ProcessorRef {
    match shadow {
        true => boxed(Shadow::new(processor)),
        false => boxed(processor),
    }
}

/// A registered processor: the lists it may go in (its hooks), the options it takes, and how
/// it is built.
pub(crate) struct Entry {
    pub hooks: Hooks,
    /// The option names, when the options are a struct (found by asking serde).
    pub fields: Option<&'static [&'static str]>,
    pub build: Box<Build>,
}

/// Processors by name, each with its options. [`Registry::new`] holds every built-in
/// (listed in `docs/config.md`); register your own by type or with a factory.
///
/// A processor registered by type is its own options: the entry's keys (all but
/// `processor`) deserialise into it.
///
/// ```
/// use processors_config::{Loader, Registry};
/// use processors_runtime::prelude::*;
/// use serde::Deserialize;
///
/// /// Refuses input longer than `max_chars`.
/// #[derive(Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct LengthGuard {
///     max_chars: usize,
/// }
///
/// impl Processor for LengthGuard {
///     type State = ();
///     const HOOKS: Hooks = Hooks::INPUT;
///     fn id(&self) -> &str {
///         "length-guard"
///     }
///     async fn process_input(
///         &self,
///         args: InputArgs<'_, ()>,
///     ) -> Result<InputOutcome, ProcessorError> {
///         match args.messages.iter().any(|m| m.text().chars().count() > self.max_chars) {
///             true => Err(args.abort().reason("the question is too long").into()),
///             false => Ok(InputOutcome::Unchanged),
///         }
///     }
/// }
///
/// let registry = Registry::new().register::<LengthGuard>("length-guard");
/// let file = r#"
/// model = { scripted = ["Fine."] }
/// input = [{ processor = "length-guard", max_chars = 10 }]
/// "#;
/// let agent = Loader::new().registry(registry).agent_str("agent.toml", file)?;
/// # futures::executor::block_on(async {
/// let result = agent.generate("a question far too long").await?;
/// assert_eq!(result.tripwire.unwrap().reason, "the question is too long");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: BTreeMap<String, Arc<Entry>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.entries.keys()).finish()
    }
}

impl Registry {
    /// A registry without the built-ins.
    ///
    /// ```
    /// use processors_config::Registry;
    /// assert_eq!(Registry::empty().names().count(), 0);
    /// ```
    pub fn empty() -> Self {
        Registry {
            entries: BTreeMap::new(),
        }
    }

    /// The registered names, in alphabetical order. `memory` is not one of them: in a list it
    /// always names the agent's memory.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// Registers `T` as `name`; an entry's options deserialise into `T` itself (give it
    /// `#[serde(deny_unknown_fields)]`, so a mistyped option is refused). A name registered
    /// before is replaced. See the [type's docs](Registry) for an example.
    pub fn register<T>(self, name: impl Into<String>) -> Self
    where
        T: Processor + DeserializeOwned,
    {
        self.register_with(name, |processor: T| {
            Ok::<T, std::convert::Infallible>(processor)
        })
    }

    /// Registers a factory as `name`: an entry's options deserialise into `O`, and `factory`
    /// builds the processor from them, or refuses them with a message the load reports at the
    /// entry. A name registered before is replaced.
    ///
    /// ```
    /// use processors_config::{Loader, Registry};
    /// use processors_runtime::prelude::*;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize)]
    /// #[serde(deny_unknown_fields)]
    /// struct Options {
    ///     words: Vec<String>,
    /// }
    ///
    /// struct Blocklist(Vec<String>);
    /// impl Processor for Blocklist {
    ///     type State = ();
    ///     const HOOKS: Hooks = Hooks::INPUT;
    ///     fn id(&self) -> &str {
    ///         "blocklist"
    ///     }
    /// }
    ///
    /// let registry = Registry::new().register_with("blocklist", |o: Options| match o.words.is_empty() {
    ///     true => Err("`words` is empty; give at least one"),
    ///     false => Ok(Blocklist(o.words)),
    /// });
    /// let file = "model = { scripted = [] }\ninput = [{ processor = \"blocklist\", words = [] }]\n";
    /// let error = Loader::new().registry(registry).agent_str("agent.toml", file).err().unwrap();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "agent.toml:2:10: `blocklist`: `words` is empty; give at least one"
    /// );
    /// ```
    pub fn register_with<O, P, E, F>(self, name: impl Into<String>, factory: F) -> Self
    where
        O: DeserializeOwned,
        P: Processor,
        E: fmt::Display,
        F: Fn(O) -> Result<P, E> + Send + Sync + 'static,
    {
        self.builtin(name, move |options: O, _: &Cx<'_>| {
            factory(options).map_err(|e| Refusal::Other(e.to_string()))
        })
    }

    /// Registers a factory that also reads the load's context.
    pub(crate) fn builtin<O, P, F>(mut self, name: impl Into<String>, factory: F) -> Self
    where
        O: DeserializeOwned,
        P: Processor,
        F: Fn(O, &Cx<'_>) -> Result<P, Refusal> + Send + Sync + 'static,
    {
        let entry = Entry {
            hooks: P::HOOKS,
            fields: fields_of::<O>(),
            build: Box::new(move |value, cx, shadow| {
                let options = O::deserialize(toml::de::ValueDeserializer::from(value))
                    .map_err(Refusal::Value)?;
                factory(options, cx).map(|p| built(p, shadow))
            }),
        };
        self.entries.insert(name.into(), Arc::new(entry));
        self
    }

    /// A built-in whose entries in a file's lists are one processor: the first entry's
    /// options build it, and each other entry repeats them or gives none.
    pub(crate) fn builtin_shared<O, P, F>(mut self, name: &'static str, factory: F) -> Self
    where
        O: DeserializeOwned + PartialEq + 'static,
        P: Processor,
        F: Fn(&O, &Cx<'_>) -> Result<P, Refusal> + Send + Sync + 'static,
    {
        let entry = Entry {
            hooks: P::HOOKS,
            fields: fields_of::<O>(),
            build: Box::new(move |value, cx, shadow| {
                let bare = matches!(value.get_ref(), DeValue::Table(t) if t.is_empty());
                let options = O::deserialize(toml::de::ValueDeserializer::from(value))
                    .map_err(Refusal::Value)?;
                let mut shared = cx.shared.borrow_mut();
                if let Some(first) = shared.get(name) {
                    if first.shadow != shadow {
                        return Err(Refusal::Other(format!(
                            "`{name}` is one processor across the lists, in shadow or not as its first entry says; give `shadow` the same in each entry"
                        )));
                    }
                    let same = first.options.downcast_ref::<O>() == Some(&options);
                    return match bare || same {
                        true => Ok(first.processor.clone()),
                        false => Err(Refusal::Other(format!(
                            "`{name}` is one processor across the lists, built with the options of its first entry; give its options there only, or the same here"
                        ))),
                    };
                }
                let processor = built(factory(&options, cx)?, shadow);
                shared.insert(
                    name.to_owned(),
                    Shared {
                        options: Box::new(options),
                        shadow,
                        processor: processor.clone(),
                    },
                );
                Ok(processor)
            }),
        };
        self.entries.insert(name.into(), Arc::new(entry));
        self
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name).map(|e| &**e)
    }
}

/// The field names of a struct that derives `Deserialize` (serde hands them to
/// `deserialize_struct`); `None` for any other shape.
fn fields_of<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let mut fields = None;
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}
