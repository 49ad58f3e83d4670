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

    /// The names errors give it.
    fn names(self) -> &'static [&'static str] {
        match self {
            Setting::Temperature => &["temperature"],
            Setting::TopP => &["top_p", "top-p"],
            Setting::Seed => &["seed"],
            Setting::StopSequences => &["stop_sequences", "stop"],
        }
    }

    /// Whether `text` (from [`error_text`]) refuses it: its name in one of the phrases
    /// providers refuse a parameter with, next to it (a setting's name elsewhere in an error,
    /// "the temperature in Paris is not supported", is not a refusal).
    fn refused_in(self, text: &str) -> bool {
        self.names().iter().any(|n| {
            let around = [
                format!("unsupported parameter: {n}"),
                format!("unsupported value: {n}"),
                format!("{n} is not supported"),
                format!("{n} not supported"),
                format!("{n} is unsupported"),
                format!("{n} is not allowed"),
                format!("does not support {n}"),
                format!("{n} does not support"),
                format!("{n} may only be set"),
                format!("unknown parameter: {n}"),
                format!("unrecognized parameter: {n}"),
                format!("unrecognized request argument supplied: {n}"),
                format!("{n}: extra inputs are not permitted"),
                format!("{n}],msg:extra inputs are not permitted"),
            ];
            around.iter().any(|phrase| has_phrase(text, phrase))
                || (has_phrase(text, &format!("param:{n}"))
                    && mentions_any(text, &["unsupported", "not supported"]))
        })
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

/// Whether `phrase` is in `text` with no letter, digit or `_` just before or after it.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let inside = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(phrase).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(inside)
            && !text[at + phrase.len()..].chars().next().is_some_and(inside)
    })
}

/// When a model refuses a setting: always, or only with another setting set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rule {
    setting: Setting,
    with: Option<Setting>,
}

impl Rule {
    /// Whether the rule drops its setting from `settings`.
    fn applies(self, settings: &ModelSettings) -> bool {
        self.setting.is_set(settings) && self.with.is_none_or(|w| w.is_set(settings))
    }
}

/// What an error refuses: each setting, and what to learn of it (`None`: nothing, the
/// refusal depends on more than the settings).
fn refusals(error: &ApiError) -> Vec<(Setting, Option<Rule>)> {
    if !matches!(error.status, Some(400 | 422)) {
        return Vec::new();
    }
    let text = error_text(error);
    // Both together: `top_p` goes, `temperature` (the one more often meant) stays; learned
    // for calls that set both.
    if text.contains("top_p cannot both be specified")
        || text.contains("top_p are mutually exclusive")
    {
        let rule = Rule {
            setting: Setting::TopP,
            with: Some(Setting::Temperature),
        };
        return vec![(Setting::TopP, Some(rule))];
    }
    Setting::ALL
        .into_iter()
        .filter(|s| s.refused_in(&text))
        .map(|s| {
            // Refused only in a mode (extended thinking): retried without it, not learned.
            let conditional = text.contains("when thinking is enabled");
            let rule = (!conditional).then_some(Rule {
                setting: s,
                with: None,
            });
            (s, rule)
        })
        .collect()
}

/// Leaves out the sampling settings a model refuses, and asks for the call again; later
/// calls to that model leave them out before they are made.
///
/// It acts on a `400` (or `422`) whose message or body refuses a setting the call set:
/// OpenAI's `Unsupported parameter: 'temperature' is not supported with this model.` and
/// `Unsupported value: 'temperature' does not support 0.2 with this model. Only the default
/// (1) value is supported.`, Anthropic's `temperature may only be set to 1 when thinking is
/// enabled` and `` `temperature` and `top_p` cannot both be specified for this model `` (where
/// `top_p` goes, and `temperature` stays), and servers that refuse unknown fields. The
/// setting's name must be in the phrase that refuses it (`temperature is not supported`, not
/// "the temperature in Paris is not supported"). The settings it knows are [`Setting`]'s; an
/// error that refuses none the call set is not handled.
///
/// What it learns is kept for the processor's life, per model (`provider/model`), shared by
/// its copies: the next call to that model, in this run or any other, goes without the
/// setting, with no refused call first. `top_p` refused beside `temperature` is learned for
/// the calls that set both; a refusal that holds only in a mode (with extended thinking) is
/// kept for the run only. [`refused`](Self::refused) says what it learned.
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
    /// What each model (`provider/model`) refused.
    learned: Arc<Mutex<HashMap<String, Vec<Rule>>>>,
}

/// The per-request state of an [`UnsupportedSettingHandler`].
#[derive(Debug, Default)]
pub struct UnsupportedSettingHandlerState {
    attempts: StepAttempts,
    /// The model and settings of the last call, as sent.
    last: Option<(String, ModelSettings)>,
    /// Whether it warned that it is not in `input`.
    warned: bool,
    /// What the model refused in this run, learned or not.
    run: Vec<Rule>,
}

impl UnsupportedSettingHandler {
    /// The handler, having learned nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The settings `model` (`provider/model`) refused so far (some only beside another).
    pub fn refused(&self, model: &str) -> Vec<Setting> {
        let learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
        let rules = learned.get(model).map_or(&[][..], Vec::as_slice);
        rules.iter().map(|r| r.setting).collect()
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
    /// assert_eq!(UnsupportedSettingHandler::refused_by(&other, &both), []);
    /// ```
    pub fn refused_by(error: &ApiError, sent: &ModelSettings) -> Vec<Setting> {
        refusals(error)
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| s.is_set(sent))
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
        let mut rules = {
            let learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
            learned.get(&key).cloned().unwrap_or_default()
        };
        rules.extend(state.run.iter().copied());
        let mut settings = request.settings.clone();
        for rule in rules {
            if rule.applies(&request.settings) {
                rule.setting.clear(&mut settings);
            }
        }
        let changed = settings != request.settings;
        state.last = Some((key, settings.clone()));
        if !changed {
            return LlmRequestAction::Continue;
        }
        let mut request = request.clone();
        request.settings = settings;
        LlmRequestAction::Request(Box::new(request))
    }

    fn process_api_error(
        &self,
        error: &ApiError,
        step: StepNumber,
        cx: &RequestContext,
        state: &mut UnsupportedSettingHandlerState,
    ) -> ApiErrorAction {
        let Some((key, sent)) = state.last.clone() else {
            if !state.warned && !refusals(error).is_empty() {
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
        let refused: Vec<(Setting, Option<Rule>)> = refusals(error)
            .into_iter()
            .filter(|(s, _)| s.is_set(&sent))
            .collect();
        if refused.is_empty() || state.attempts.used(step.0) >= Setting::ALL.len() as u32 {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        tracing::info!(
            model = %key,
            settings = ?refused.iter().map(|(s, _)| s.name()).collect::<Vec<_>>(),
            "the model refused a setting; retrying without it"
        );
        let mut learned = self.learned.lock().unwrap_or_else(PoisonError::into_inner);
        for (setting, rule) in refused {
            let run = rule.unwrap_or(Rule {
                setting,
                with: None,
            });
            if !state.run.contains(&run) {
                state.run.push(run);
            }
            if let Some(rule) = rule {
                let known = learned.entry(key.clone()).or_default();
                if !known.contains(&rule) {
                    known.push(rule);
                }
            }
        }
        ApiErrorAction::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_refused_only_in_a_phrase_that_refuses_it() {
        let t = |text: &str| {
            Setting::ALL
                .into_iter()
                .filter(|s| s.refused_in(text))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            t("unsupported parameter: temperature is not supported"),
            [Setting::Temperature]
        );
        assert_eq!(t("the temperature in paris is not supported"), []);
        assert_eq!(t("max_temperature is not supported"), []);
        assert_eq!(
            t("unsupported parameter: stop is not supported with this model."),
            [Setting::StopSequences]
        );
        assert_eq!(t("stop. this is not supported"), []);
        assert_eq!(t("seed: extra inputs are not permitted"), [Setting::Seed]);
    }

    #[test]
    fn only_settings_that_were_sent_and_refused_are_dropped() {
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

    #[test]
    fn what_is_learned_holds_only_where_the_refusal_did() {
        let both = ModelSettings {
            temperature: Some(0.5),
            top_p: Some(0.9),
            ..ModelSettings::default()
        };
        let anthropic = ApiError::new(
            400,
            "`temperature` and `top_p` cannot both be specified for this model.",
        );
        let [(Setting::TopP, Some(rule))] = refusals(&anthropic)[..] else {
            panic!("{:?}", refusals(&anthropic));
        };
        assert!(rule.applies(&both));
        let alone = ModelSettings {
            top_p: Some(0.9),
            ..ModelSettings::default()
        };
        assert!(!rule.applies(&alone));
        let thinking = ApiError::new(
            400,
            "`temperature` may only be set to 1 when thinking is enabled.",
        );
        assert_eq!(refusals(&thinking), [(Setting::Temperature, None)]);
    }
}
