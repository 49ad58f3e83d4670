//! Models by id: `"openai/gpt-4o-mini"`, `"anthropic/claude-sonnet-4-5"`, `"ollama/llama3.2"`.

use crate::anthropic::{ANTHROPIC_BASE_URL, Anthropic};
use crate::openai::{OPENAI_BASE_URL, OpenAiCompatible};
use crate::transport::ConfigError;
use processors_runtime::model::LanguageModel;
use std::sync::Arc;

/// A provider [`resolve`] knows: its name, the variables it reads and its default address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownProvider {
    /// The prefix of its model ids (`openai` in `openai/gpt-4o-mini`).
    pub name: &'static str,
    /// The variable holding its API key.
    pub key_var: &'static str,
    /// Whether a call without a key fails at resolve time.
    pub key_required: bool,
    /// The variable that overrides its base URL.
    pub base_url_var: &'static str,
    /// Its base URL when the variable is unset.
    pub default_base_url: &'static str,
}

/// The providers [`resolve`] knows.
pub const KNOWN_PROVIDERS: &[KnownProvider] = &[
    KnownProvider {
        name: "openai",
        key_var: "OPENAI_API_KEY",
        key_required: true,
        base_url_var: "OPENAI_BASE_URL",
        default_base_url: OPENAI_BASE_URL,
    },
    KnownProvider {
        name: "anthropic",
        key_var: "ANTHROPIC_API_KEY",
        key_required: true,
        base_url_var: "ANTHROPIC_BASE_URL",
        default_base_url: ANTHROPIC_BASE_URL,
    },
    KnownProvider {
        name: "ollama",
        key_var: "OLLAMA_API_KEY",
        key_required: false,
        base_url_var: "OLLAMA_BASE_URL",
        default_base_url: "http://localhost:11434/v1",
    },
    KnownProvider {
        name: "lmstudio",
        key_var: "LMSTUDIO_API_KEY",
        key_required: false,
        base_url_var: "LMSTUDIO_BASE_URL",
        default_base_url: "http://localhost:1234/v1",
    },
    KnownProvider {
        name: "vllm",
        key_var: "VLLM_API_KEY",
        key_required: false,
        base_url_var: "VLLM_BASE_URL",
        default_base_url: "http://localhost:8000/v1",
    },
    KnownProvider {
        name: "llamacpp",
        key_var: "LLAMACPP_API_KEY",
        key_required: false,
        base_url_var: "LLAMACPP_BASE_URL",
        default_base_url: "http://localhost:8080/v1",
    },
];

/// The model named `provider/model`, configured from the environment.
///
/// | provider | key | base URL (default) |
/// | --- | --- | --- |
/// | `openai` | `OPENAI_API_KEY` (required) | `OPENAI_BASE_URL` (`https://api.openai.com/v1`) |
/// | `anthropic` | `ANTHROPIC_API_KEY` (required) | `ANTHROPIC_BASE_URL` (`https://api.anthropic.com`) |
/// | `ollama` | `OLLAMA_API_KEY` (optional) | `OLLAMA_BASE_URL` (`http://localhost:11434/v1`) |
/// | `lmstudio` | `LMSTUDIO_API_KEY` (optional) | `LMSTUDIO_BASE_URL` (`http://localhost:1234/v1`) |
/// | `vllm` | `VLLM_API_KEY` (optional) | `VLLM_BASE_URL` (`http://localhost:8000/v1`) |
/// | `llamacpp` | `LLAMACPP_API_KEY` (optional) | `LLAMACPP_BASE_URL` (`http://localhost:8080/v1`) |
///
/// Everything after the first `/` is the model id (`vllm/meta-llama/Llama-3.1-8B-Instruct`).
/// An `OLLAMA_BASE_URL` without a path (`http://localhost:11434`, as Ollama's own tools set
/// it) gets `/v1` appended. Empty variables count as unset. For timeouts, retries or other
/// settings, use the builders ([`OpenAiCompatible::builder`], [`Anthropic::builder`]).
///
/// ```
/// use processors_providers::{resolve_with_env, ConfigError};
/// let env = |name: &str| (name == "OLLAMA_BASE_URL").then(|| "http://gpu-box:11434".to_owned());
/// let model = resolve_with_env("ollama/llama3.2", env).unwrap();
/// assert_eq!((model.provider(), model.model_id()), ("ollama", "llama3.2"));
/// let missing = resolve_with_env("openai/gpt-4o-mini", |_| None).err().unwrap();
/// assert!(matches!(missing, ConfigError::MissingApiKey { .. }));
/// ```
pub fn resolve(id: &str) -> Result<Arc<dyn LanguageModel>, ConfigError> {
    resolve_with_env(id, |name| std::env::var(name).ok())
}

/// [`resolve`], reading variables through `env` instead of the process environment.
pub fn resolve_with_env(
    id: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn LanguageModel>, ConfigError> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let (provider, model) = id
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
        .ok_or_else(|| ConfigError::InvalidModelId(id.to_owned()))?;
    let known = KNOWN_PROVIDERS
        .iter()
        .find(|k| k.name == provider)
        .ok_or_else(|| ConfigError::UnknownProvider {
            provider: provider.to_owned(),
            id: id.to_owned(),
            known: KNOWN_PROVIDERS
                .iter()
                .map(|k| k.name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    let key = env(known.key_var);
    if known.key_required && key.is_none() {
        return Err(ConfigError::MissingApiKey {
            provider: provider.to_owned(),
            env_var: known.key_var.to_owned(),
        });
    }
    let mut base_url = env(known.base_url_var).unwrap_or_else(|| known.default_base_url.to_owned());
    if provider == "ollama" && !has_path(&base_url) {
        base_url = format!("{}/v1", base_url.trim_end_matches('/'));
    }
    if provider == "anthropic" {
        let mut builder = Anthropic::builder(model).base_url(base_url);
        if let Some(key) = key {
            builder = builder.api_key(key);
        }
        return Ok(Arc::new(builder.build()?));
    }
    let mut builder = OpenAiCompatible::builder(model)
        .provider_name(provider)
        .base_url(base_url);
    if let Some(key) = key {
        builder = builder.api_key(key);
    }
    Ok(Arc::new(builder.build()?))
}

/// Whether a URL has a path beyond `/`.
fn has_path(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.trim_end_matches('/').contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn openai_and_anthropic_need_their_keys() {
        let e = resolve_with_env("anthropic/claude-x", env(&[("ANTHROPIC_API_KEY", " ")]))
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "no API key for the `anthropic` provider: set the ANTHROPIC_API_KEY environment variable or pass `.api_key(...)` to the builder"
        );
        let m = resolve_with_env("openai/gpt-4o-mini", env(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!((m.provider(), m.model_id()), ("openai", "gpt-4o-mini"));
    }

    #[test]
    fn model_ids_keep_slashes_after_the_provider() {
        let m = resolve_with_env("vllm/meta-llama/Llama-3.1-8B", env(&[])).unwrap();
        assert_eq!(
            (m.provider(), m.model_id()),
            ("vllm", "meta-llama/Llama-3.1-8B")
        );
    }

    #[test]
    fn bad_ids_and_unknown_providers_are_explained() {
        assert!(matches!(
            resolve_with_env("gpt-4o", env(&[])).err().unwrap(),
            ConfigError::InvalidModelId(_)
        ));
        let e = resolve_with_env("mistery/m", env(&[])).err().unwrap();
        assert!(
            e.to_string()
                .contains("known providers: openai, anthropic, ollama"),
            "{e}"
        );
    }

    #[test]
    fn ollama_base_url_gets_v1_only_when_it_has_no_path() {
        assert!(!has_path("http://localhost:11434/"));
        assert!(has_path("http://localhost:11434/v1"));
        assert!(!has_path("localhost:11434"));
    }
}
