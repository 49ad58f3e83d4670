//! `prefill-error-handler`, `provider-history-compat`, `context-length-handler`,
//! `stream-error-retry`, `trailing-assistant-guard`, `unsupported-file-handler`,
//! `unsupported-setting-handler`.

use super::{NoOptions, TokenizerName, set, tokenizer};
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::recovery::{BuiltinRule, TrailingStrategy};
use processors_builtins::{
    ContextLengthHandler, PrefillErrorHandler, ProviderHistoryCompat, StreamErrorRetry,
    TrailingAssistantGuard, UnsupportedFileHandler, UnsupportedSettingHandler,
};
use serde::Deserialize;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("prefill-error-handler", prefill_error_handler)
        .builtin("provider-history-compat", provider_history_compat)
        .builtin("context-length-handler", context_length_handler)
        .builtin("stream-error-retry", stream_error_retry)
        .builtin("trailing-assistant-guard", trailing_assistant_guard)
        .builtin("unsupported-file-handler", unsupported_file_handler)
        .builtin("unsupported-setting-handler", unsupported_setting_handler)
}

fn unsupported_setting_handler(
    _: NoOptions,
    _: &Cx<'_>,
) -> Result<UnsupportedSettingHandler, Refusal> {
    Ok(UnsupportedSettingHandler::new())
}

fn unsupported_file_handler(_: NoOptions, _: &Cx<'_>) -> Result<UnsupportedFileHandler, Refusal> {
    Ok(UnsupportedFileHandler::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrailingOptions {
    strategy: Option<TrailingStrategy>,
    continuation: Option<String>,
    models: Option<Vec<String>>,
}

fn trailing_assistant_guard(
    o: TrailingOptions,
    _: &Cx<'_>,
) -> Result<TrailingAssistantGuard, Refusal> {
    let mut b = TrailingAssistantGuard::builder();
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.continuation, |b, c| b.continuation(c));
    b = set(b, o.models, |b, m| b.models(m));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefillOptions {
    continuation: Option<String>,
}

fn prefill_error_handler(o: PrefillOptions, _: &Cx<'_>) -> Result<PrefillErrorHandler, Refusal> {
    let b = set(PrefillErrorHandler::builder(), o.continuation, |b, c| {
        b.continuation(c)
    });
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompatOptions {
    #[serde(default)]
    disable: Vec<BuiltinRule>,
    only: Option<Vec<BuiltinRule>>,
    before_call: Option<bool>,
    after_error: Option<bool>,
}

fn provider_history_compat(o: CompatOptions, _: &Cx<'_>) -> Result<ProviderHistoryCompat, Refusal> {
    let mut b = ProviderHistoryCompat::builder();
    b = set(b, o.only, |b, rules| b.only(rules));
    for rule in o.disable {
        b = b.disable(rule);
    }
    b = set(b, o.before_call, |b, y| b.before_call(y));
    b = set(b, o.after_error, |b, y| b.after_error(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextLengthOptions {
    fraction: Option<f64>,
    max_attempts: Option<u32>,
    tokenizer: Option<TokenizerName>,
    #[serde(default)]
    matching: Vec<String>,
}

fn context_length_handler(
    o: ContextLengthOptions,
    _: &Cx<'_>,
) -> Result<ContextLengthHandler, Refusal> {
    let mut b = ContextLengthHandler::builder();
    b = set(b, o.fraction, |b, f| b.fraction(f));
    b = set(b, o.max_attempts, |b, n| b.max_attempts(n));
    b = set(b, tokenizer(o.tokenizer)?, |b, t| b.tokenizer(t));
    for phrase in o.matching {
        b = b.matching(phrase);
    }
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamRetryOptions {
    max_retries: Option<u32>,
    retryable_only: Option<bool>,
}

fn stream_error_retry(o: StreamRetryOptions, _: &Cx<'_>) -> Result<StreamErrorRetry, Refusal> {
    let mut b = StreamErrorRetry::builder();
    b = set(b, o.max_retries, |b, n| b.max_retries(n));
    b = set(b, o.retryable_only, |b, y| b.retryable_only(y));
    Ok(b.build()?)
}
