//! [`UnsupportedSettingHandler`]: a sampling setting a model refuses (`temperature` on a
//! reasoning model, say) is left out and the model called again; later calls to that model
//! leave it out before they are made.

use super::{StepAttempts, error_text, mentions_any};
use processors_macros::processor;
use processors_runtime::RequestContext;
use processors_runtime::model::{ApiError, LanguageModel, ModelRequest, ModelSettings};
use processors_runtime::processor::extract::StepNumber;
use processors_runtime::processor::{Abort, ApiErrorAction, LlmRequestAction};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// A sampling setting that some models refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    /// `temperature`: refused by OpenAI's reasoning models (the o-series, GPT-5), and by
    /// Anthropic's models with extended thinking unless it is 1.
    Temperature,
    /// `top_p`: refused with `temperature` by some Anthropic models.
    TopP,
    /// `seed`: refused by providers that do not sample deterministically.
    Seed,
    /// `stop` sequences: refused by OpenAI's reasoning models.
    StopSequences,
}

impl Setting {
    /// Every setting, in the order they are reported.
    pub const ALL: [Setting; 4] = [
        Setting::Temperature,
        Setting::TopP,
        Setting::Seed,
        Setting::StopSequences,
    ];

    /// Its name in requests and errors.
    pub const fn name(self) -> &'static str {
        match self {
            Setting::Temperature => "temperature",
            Setting::TopP => "top_p",
            Setting::Seed => "seed",
            Setting::StopSequences => "stop",
        }
    }

    /// How errors name it (lowercase, quotes left out), besides as a whole word.
    fn named_in(self, text: &str) -> bool {
        match self {
            Setting::Temperature => has_word(text, "temperature"),
            Setting::TopP => has_word(text, "top_p") || has_word(text, "top-p"),
            Setting::Seed => has_word(text, "seed"),
            // "stop" is an ordinary word: only where an error names it as a parameter.
            Setting::StopSequences => {
                text.contains("stop_sequences")
                    || text.contains("parameter: stop ")
                    || text.contains("param:stop")
                    || text.contains("stop is not supported")
            }
        }
    }

    /// Whether `settings` sets it.
    pub fn is_set(self, settings: &ModelSettings) -> bool {
        match self {
            Setting::Temperature => settings.temperature.is_some(),
            Setting::TopP => settings.top_p.is_some(),
            Setting::Seed => settings.seed.is_some(),
            Setting::StopSequences => !settings.stop_sequences.is_empty(),
        }
    }

    /// Leaves it out of `settings`.
    pub fn clear(self, settings: &mut ModelSettings) {
        match self {
            Setting::Temperature => settings.temperature = None,
            Setting::TopP => settings.top_p = None,
            Setting::Seed => settings.seed = None,
            Setting::StopSequences => settings.stop_sequences.clear(),
        }
    }
}

/// Whether `word` is in `text` with no letter, digit or `_` on either side.
fn has_word(text: &str, word: &str) -> bool {
    let inside = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(inside)
            && !text[at + word.len()..].chars().next().is_some_and(inside)
    })
}

/// What providers say when they refuse a setting, compared as [`error_text`] gives them.
const REFUSALS: &[&str] = &[
    "not supported",
    "unsupported",
    "does not support",
    "unknown parameter",
    "unrecognized request argument",
    "unrecognized parameter",
    "may only be set",
    "cannot both be specified",
    "only the default",
    "not allowed",
    "extra inputs are not permitted",
    "extra_forbidden",
];

/// Leaves out the sampling settings a model refuses, and asks for the call again; later
/// calls to that model leave them out before they are made.
///
/// It acts on a `400` (or `422`) whose message or body refuses a setting the call set:
/// OpenAI's `Unsupported parameter: 'temperature' is not supported with this model.` and
/// `Unsupported value: 'temperature' does not support 0.2 with this model. Only the default
/// (1) value is supported.`, Anthropic's `temperature may only be set to 1 when thinking is
/// enabled` and `` `temperature` and `top_p` cannot both be specified for this model `` (where
/// `top_p` goes, and `temperature` stays), and servers that refuse unknown fields. The
/// settings it knows are [`Setting`]'s; an error that names none the call set is not handled.
///
/// What it learns is kept for the processor's life, per model (`provider/model`), shared by
/// its copies: the next call to that model, in this run or any other, goes without the
/// setting, with no refused call first. [`refused`](Self::refused) says what it learned.
///
/// Put it in `input`: its `process_llm_request` sends the calls without what a model refused,
/// and its `process_api_error` runs there too. In `error` alone it could not change the
/// request; it then handles nothing and warns, once per run.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::recovery::{Setting, UnsupportedSettingHandler};
/// use processors::model::ModelSettings;
/// use processors::prelude::*;
///
/// let refusal = ApiError::new(400, "Unsupported parameter: 'temperature' is not supported with this model.");
/// let model = ScriptedModel::new([Turn::error(refusal), Turn::text("Hi."), Turn::text("Again.")]);
/// let handler = UnsupportedSettingHandler::new();
/// let agent = Agent::builder()
///     .model(model.clone())
///     .model_settings(ModelSettings { temperature: Some(0.2), ..ModelSettings::default() })
///     .input(handler.clone())
///     .build()?;
/// assert_eq!(agent.generate("hi").await?.text, "Hi.");
/// assert_eq!(model.requests()[1].settings.temperature, None);
/// // Learned: the next run's only call goes without it.
/// agent.generate("hi").await?;
/// assert_eq!(model.calls(), 3);
/// assert_eq!(model.requests()[2].settings.temperature, None);
/// assert_eq!(handler.refused("scripted/scripted"), [Setting::Temperature]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct UnsupportedSettingHandler {
    /// The settings each model (`provider/model`) refused.
    learned: Arc<Mutex<HashMap<String, Vec<Setting>>>>,
}

/// The per-request state of an [`UnsupportedSettingHandler`].
#[derive(Debug, Default)]
pub struct UnsupportedSettingHandlerState {
    attempts: StepAttempts,
    /// The model and settings of the last call, as sent.
    last: Option<(String, ModelSettings)>,
    /// Whether it warned that it is not in `input`.
    warned: bool,
}

impl UnsupportedSettingHandler {
    /// The handler, having learned nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings `model` (`provider/model`) refused so far.
    pub fn refused(&self, model: &str) -> Vec<Setting> {
        let learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
        learned.get(model).cloned().unwrap_or_default()
    }

    /// The settings of `sent` that `error` refuses (none when it is not such a refusal).
    ///
    /// ```
    /// use processors::builtins::recovery::{Setting, UnsupportedSettingHandler};
    /// use processors::model::{ApiError, ModelSettings};
    ///
    /// let both = ModelSettings { temperature: Some(0.5), top_p: Some(0.9), ..ModelSettings::default() };
    /// let anthropic = ApiError::new(400, "`temperature` and `top_p` cannot both be specified for this model. Please use only one.");
    /// assert_eq!(UnsupportedSettingHandler::refused_by(&anthropic, &both), [Setting::TopP]);
    /// let thinking = ApiError::new(400, "`temperature` may only be set to 1 when thinking is enabled or in build mode.");
    /// assert_eq!(UnsupportedSettingHandler::refused_by(&thinking, &both), [Setting::Temperature]);
    /// let other = ApiError::new(400, "The temperature in Paris is not supported as a topic.");
    /// assert_eq!(UnsupportedSettingHandler::refused_by(&other, &ModelSettings::default()), []);
    /// ```
    pub fn refused_by(error: &ApiError, sent: &ModelSettings) -> Vec<Setting> {
        let mut named = Self::named_by(error);
        named.retain(|s| s.is_set(sent));
        named
    }

    /// The settings `error` refuses, whatever the call set.
    fn named_by(error: &ApiError) -> Vec<Setting> {
        if !matches!(error.status, Some(400 | 422)) {
            return Vec::new();
        }
        let text = error_text(error);
        if !mentions_any(&text, REFUSALS) {
            return Vec::new();
        }
        // The two together: `top_p` goes, `temperature` (the one more often meant) stays.
        if text.contains("cannot both be specified") {
            return vec![Setting::TopP];
        }
        Setting::ALL
            .into_iter()
            .filter(|s| s.named_in(&text))
            .collect()
    }

    /// The key of `model` in what was learned.
    fn key(model: &dyn LanguageModel) -> String {
        format!("{}/{}", model.provider(), model.model_id())
    }
}

#[processor(crate = processors_runtime, id = "unsupported-setting-handler")]
impl UnsupportedSettingHandler {
    fn process_llm_request(
        &self,
        request: &ModelRequest,
        model: &dyn LanguageModel,
        state: &mut UnsupportedSettingHandlerState,
    ) -> LlmRequestAction {
        let key = Self::key(model);
        let refused = self.refused(&key);
        let drop: Vec<Setting> = refused
            .into_iter()
            .filter(|s| s.is_set(&request.settings))
            .collect();
        if drop.is_empty() {
            state.last = Some((key, request.settings.clone()));
            return LlmRequestAction::Continue;
        }
        let mut changed = request.clone();
        for s in drop {
            s.clear(&mut changed.settings);
        }
        state.last = Some((key, changed.settings.clone()));
        LlmRequestAction::Request(Box::new(changed))
    }

    fn process_api_error(
        &self,
        error: &ApiError,
        step: StepNumber,
        cx: &RequestContext,
        state: &mut UnsupportedSettingHandlerState,
    ) -> ApiErrorAction {
        let Some((key, sent)) = &state.last else {
            if !state.warned && !Self::named_by(error).is_empty() {
                state.warned = true;
                let why = "the processor saw no request to change: put it in `input`, where its `process_llm_request` runs";
                cx.report_warning(
                    Abort::new()
                        .reason(why)
                        .into_tripwire("unsupported-setting-handler"),
                );
            }
            return ApiErrorAction::Unhandled;
        };
        let refused = Self::refused_by(error, sent);
        if refused.is_empty() || state.attempts.used(step.0) >= Setting::ALL.len() as u32 {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        tracing::info!(
            model = %key,
            settings = ?refused,
            "the model refused a setting; retrying without it, and leaving it out of its later calls"
        );
        let mut learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
        let known = learned.entry(key.clone()).or_default();
        for s in refused {
            if !known.contains(&s) {
                known.push(s);
            }
        }
        ApiErrorAction::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_named_as_words() {
        assert!(has_word(
            "unsupported parameter: temperature is",
            "temperature"
        ));
        assert!(!has_word("temperatures", "temperature"));
        assert!(!has_word("max_temperature", "temperature"));
        assert!(Setting::StopSequences.named_in("unsupported parameter: stop is not supported"));
        assert!(!Setting::StopSequences.named_in("stop. this is not supported"));
    }

    #[test]
    fn only_settings_that_were_sent_and_named_are_refused() {
        let sent = ModelSettings {
            temperature: Some(0.2),
            seed: Some(7),
            ..ModelSettings::default()
        };
        let e = ApiError::new(400, "x").with_body(
            r#"{"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.","param":"temperature","code":"unsupported_value"}}"#,
        );
        assert_eq!(
            UnsupportedSettingHandler::refused_by(&e, &sent),
            [Setting::Temperature]
        );
        let seed = ApiError::new(422, "seed: Extra inputs are not permitted");
        assert_eq!(
            UnsupportedSettingHandler::refused_by(&seed, &sent),
            [Setting::Seed]
        );
        // Not a refusal status, or a setting not sent.
        let e500 = ApiError::new(500, "temperature is not supported");
        assert!(UnsupportedSettingHandler::refused_by(&e500, &sent).is_empty());
        let top_p = ApiError::new(400, "top_p is not supported");
        assert!(UnsupportedSettingHandler::refused_by(&top_p, &sent).is_empty());
    }
}
