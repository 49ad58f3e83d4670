//! The `model` of a file: a provider's model by id (`"openai/gpt-4o-mini"`, its key read from
//! the environment), or a scripted model for offline runs.

use processors_runtime::model::{LanguageModel, ScriptedModel, Turn};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::sync::Arc;

/// Reads an environment variable (the providers' API keys and base URLs).
pub(crate) type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A model as a file names it: `"provider/model"`, or `{ scripted = [turns], cycle = false }`
/// where each turn is a text, or a list of the deltas it streams.
#[derive(Debug, Clone)]
pub(crate) enum ModelSpec {
    Id(String),
    Scripted(Scripted),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Scripted {
    scripted: Vec<TurnSpec>,
    #[serde(default)]
    cycle: bool,
}

#[derive(Debug, Clone)]
struct TurnSpec(Vec<String>);

impl ModelSpec {
    /// The model; a provider's reads its key and base URL through `env`.
    pub fn build(&self, env: &Env) -> Result<Arc<dyn LanguageModel>, String> {
        match self {
            ModelSpec::Id(id) => {
                processors_providers::resolve_with_env(id, |name| env(name)).map_err(|e| {
                    match e {
                        processors_providers::ConfigError::InvalidModelId(_) => format!(
                            "`{id}` is not a model id; write `provider/model`, like `openai/gpt-4o-mini`, or a scripted model, like `{{ scripted = [\"Hello!\"] }}`"
                        ),
                        other => other.to_string(),
                    }
                })
            }
            ModelSpec::Scripted(s) => {
                let turns = s.scripted.iter().map(|t| match t.0.as_slice() {
                    [one] => Turn::text(one.clone()),
                    deltas => Turn::deltas(deltas.iter().cloned()),
                });
                Ok(Arc::new(match s.cycle {
                    true => ScriptedModel::cycle(turns),
                    false => ScriptedModel::new(turns),
                }))
            }
        }
    }
}

impl<'de> Deserialize<'de> for ModelSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> Visitor<'de> for Spec {
            type Value = ModelSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a model id like \"openai/gpt-4o-mini\", or a scripted model like { scripted = [\"Hello!\"] }",
                )
            }
            fn visit_str<E: de::Error>(self, id: &str) -> Result<ModelSpec, E> {
                Ok(ModelSpec::Id(id.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ModelSpec, A::Error> {
                Scripted::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ModelSpec::Scripted)
            }
        }
        deserializer.deserialize_any(Spec)
    }
}

impl<'de> Deserialize<'de> for TurnSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Spec;
        impl<'de> Visitor<'de> for Spec {
            type Value = TurnSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a turn: its text, or the list of the deltas it streams")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<TurnSpec, E> {
                Ok(TurnSpec(vec![text.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TurnSpec, A::Error> {
                let mut deltas = Vec::new();
                while let Some(delta) = seq.next_element::<String>()? {
                    deltas.push(delta);
                }
                Ok(TurnSpec(deltas))
            }
        }
        deserializer.deserialize_any(Spec)
    }
}
