//! The detectors that ask a judging model: `moderation`, `prompt-injection-detector`,
//! `pii-detector`, `prompt-leak-detector`, `language-detector`, `classifier`. Each names its
//! judge as the agent names its model (`judge = "openai/gpt-4o-mini"`, or a scripted one).

use super::{Site, set, sites};
use crate::model::ModelSpec;
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::detector::{
    CircuitBreaker, InjectionHeuristics, InjectionStrategy, LanguageIdentifier, LanguageStrategy,
    LeakStrategy, LinearClassifier, LinearClassifierBuilder, LocalCheck, OnJudgeError, PiiStrategy,
    Strategy, ToxicityWords, TranslationQuality,
};
use processors_builtins::redact::Redaction;
use processors_builtins::{
    Classifier, Judge, LanguageDetector, ModelSelection, Moderation, PiiDetector,
    PromptInjectionDetector, PromptLeakDetector,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::time::Duration;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("moderation", moderation)
        .builtin("prompt-injection-detector", prompt_injection)
        .builtin("pii-detector", pii)
        .builtin("prompt-leak-detector", prompt_leak)
        .builtin("language-detector", language)
        .builtin("classifier", classifier)
        .builtin("model-selection", model_selection)
}

/// The judge of a detector's options `$o` (each has `judge`, `judge_timeout_ms`,
/// `on_judge_error` and `concurrency`: serde cannot flatten them into a struct that refuses
/// unknown fields), for the detector `$detector`; with `onnx`, the options' `onnx` model too.
macro_rules! judge_of {
    ($cx:expr, $o:expr, $detector:expr) => {
        judge_of!(@ $cx, $o, $detector, Local::default())
    };
    ($cx:expr, $o:expr, $detector:expr, onnx) => {
        judge_of!(@ $cx, $o, $detector, Local {
            onnx: $o.onnx.as_ref(),
            thresholds: $o.classifier_thresholds.as_ref(),
            ..Local::default()
        })
    };
    ($cx:expr, $o:expr, $detector:expr, among) => {
        judge_of!(@ $cx, $o, $detector, Local { among: $o.among.as_deref(), ..Local::default() })
    };
    (@ $cx:expr, $o:expr, $detector:expr, $local:expr) => {
        judge(
            $cx,
            $detector,
            &JudgeOptions {
                model: &$o.judge,
                timeout_ms: $o.judge_timeout_ms,
                on_error: $o.on_judge_error,
                concurrency: $o.concurrency,
                breaker: $o.circuit_breaker.as_ref(),
                local: $local,
            },
        )
    };
}

/// A detector's judge, as its options give it.
struct JudgeOptions<'o> {
    model: &'o ModelSpec,
    timeout_ms: Option<u64>,
    on_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    breaker: Option<&'o BreakerSpec>,
    /// The options of the local checks.
    local: Local<'o>,
}

/// A detector's options for its local checks.
#[derive(Clone, Copy, Default)]
struct Local<'o> {
    /// The `onnx` option: the classifier model the local check `onnx` runs.
    onnx: Option<&'o OnnxSpec>,
    /// The `among` option: the languages `language-identifier` tells apart.
    among: Option<&'o [String]>,
    /// The `classifier_thresholds` option: a probability per head of the trained classifier
    /// (`injection-classifier`, `toxicity-classifier`).
    thresholds: Option<&'o BTreeMap<String, f64>>,
}

/// `onnx = { path = "model.onnx", labels = [...], sure_above = 0.9, sure_below = 0.1 }`: the
/// classifier `judge = "local/onnx"` or `first = "onnx"` runs (feature `onnx`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(feature = "onnx"), allow(dead_code))]
struct OnnxSpec {
    path: std::path::PathBuf,
    labels: Option<Vec<String>>,
    sure_above: Option<f64>,
    sure_below: Option<f64>,
}

/// The classifier of `spec`, its path read from the file's directory.
#[cfg(feature = "onnx")]
fn onnx_check(spec: &OnnxSpec, cx: &Cx<'_>) -> Result<Box<dyn LocalCheck>, Refusal> {
    let mut b = processors_builtins::detector::OnnxClassifier::builder(cx.path(&spec.path));
    b = set(b, spec.labels.clone(), |b, l| b.labels(l));
    b = set(b, spec.sure_above, |b, s| b.sure_above(s));
    b = set(b, spec.sure_below, |b, s| b.sure_below(s));
    b.build()
        .map(|c| Box::new(c) as Box<dyn LocalCheck>)
        .map_err(|e| Refusal::Option("onnx", e.to_string()))
}

#[cfg(not(feature = "onnx"))]
fn onnx_check(_: &OnnxSpec, _: &Cx<'_>) -> Result<Box<dyn LocalCheck>, Refusal> {
    Err(Refusal::Option(
        "onnx",
        "a classifier model needs the feature `onnx` of `processors` (off by default); turn it on, or judge with a model".to_owned(),
    ))
}

/// The local checks a file can name (`judge = "local/NAME"`, `first = "NAME"`), each with
/// the detector whose verdicts it gives.
const LOCAL_CHECKS: [(&str, &str); 5] = [
    ("injection-classifier", "prompt-injection-detector"),
    ("injection-heuristics", "prompt-injection-detector"),
    ("language-identifier", "language-detector"),
    ("toxicity-classifier", "moderation"),
    ("toxicity-words", "moderation"),
];

/// The detectors whose verdicts are categories' scores, which an ONNX classifier gives.
const ONNX_DETECTORS: [&str; 2] = ["moderation", "prompt-injection-detector"];

/// The local check `name`, for `detector`, with the detector's options for it (`onnx`, which
/// the check `onnx` runs; `among`, the languages of `language-identifier`;
/// `classifier_thresholds`, the heads' thresholds of the trained classifiers).
fn local_check(
    name: &str,
    detector: &str,
    option: &'static str,
    local: Local<'_>,
    cx: &Cx<'_>,
) -> Result<Box<dyn LocalCheck>, Refusal> {
    if name == "onnx" {
        return match local.onnx {
            Some(spec) => onnx_check(spec, cx),
            None if ONNX_DETECTORS.contains(&detector) => Err(Refusal::Option(
                option,
                "the local check `onnx` runs the model of the `onnx` option, and there is none; add `onnx = { path = \"model.onnx\" }`".to_owned(),
            )),
            None => Err(Refusal::Option(
                option,
                format!(
                    "the local check `onnx` gives categories' scores, which `{detector}` does not read; it judges for {}",
                    ONNX_DETECTORS.map(|d| format!("`{d}`")).join(" and ")
                ),
            )),
        };
    }
    match LOCAL_CHECKS.iter().find(|(n, _)| *n == name) {
        Some((_, fits)) if *fits == detector => Ok(match name {
            "injection-classifier" => {
                linear_classifier(LinearClassifier::injection_builder(), local.thresholds)?
            }
            "injection-heuristics" => Box::new(InjectionHeuristics::new()),
            "toxicity-classifier" => {
                linear_classifier(LinearClassifier::toxicity_builder(), local.thresholds)?
            }
            "toxicity-words" => Box::new(ToxicityWords::new()),
            _ => match local.among {
                Some(languages) => Box::new(LanguageIdentifier::among(languages)?),
                None => Box::new(LanguageIdentifier::new()),
            },
        }),
        Some((_, fits)) => Err(Refusal::Option(
            option,
            format!("the local check `{name}` gives the verdicts of `{fits}`, not of `{detector}`"),
        )),
        None => Err(Refusal::Option(
            option,
            format!(
                "there is no local check `{name}`; the local checks are: {}, `onnx`",
                LOCAL_CHECKS.map(|(n, _)| format!("`{n}`")).join(", ")
            ),
        )),
    }
}

/// A shipped classifier with the file's thresholds for its heads (an unknown head, or a
/// probability out of range, refused at the option).
fn linear_classifier(
    mut b: LinearClassifierBuilder,
    thresholds: Option<&BTreeMap<String, f64>>,
) -> Result<Box<dyn LocalCheck>, Refusal> {
    for (head, t) in thresholds.into_iter().flatten() {
        b = b.threshold(head, *t);
    }
    b.build()
        .map(|c| Box::new(c) as Box<dyn LocalCheck>)
        .map_err(|e| Refusal::Option("classifier_thresholds", e.to_string()))
}

/// The judge of a detector, from its options: a model, or a local check
/// (`"local/injection-heuristics"`).
fn judge(cx: &Cx<'_>, detector: &str, o: &JudgeOptions<'_>) -> Result<Judge, Refusal> {
    let local = match o.model {
        ModelSpec::Id(id) => id.strip_prefix("local/"),
        ModelSpec::Scripted(_) => None,
    };
    let mut j = match local {
        Some(name) => Judge::local(local_check(name, detector, "judge", o.local, cx)?),
        None => Judge::shared(cx.model(o.model)?),
    };
    let (timeout_ms, on_error, concurrency, breaker) =
        (o.timeout_ms, o.on_error, o.concurrency, o.breaker);
    j = set(j, timeout_ms, |j, ms| j.timeout(Duration::from_millis(ms)));
    j = set(j, on_error, |j, e| j.on_error(e));
    if concurrency == Some(0) {
        return Err(Refusal::Option(
            "concurrency",
            "`concurrency` is 0: no judging call could run; give at least 1".to_owned(),
        ));
    }
    if let Some(b) = breaker {
        if b.failures == 0 {
            return Err(Refusal::Option(
                "circuit_breaker",
                "`failures` is 0: the breaker would open before any call; give at least 1"
                    .to_owned(),
            ));
        }
        j = j.circuit_breaker(CircuitBreaker::new(
            b.failures,
            Duration::from_millis(b.window_ms),
            Duration::from_millis(b.cool_down_ms),
        ));
    }
    Ok(set(j, concurrency, |j, n| j.concurrency(n)))
}

/// `judge` with the local check `first` names as its first tier, when it names one. An
/// `onnx` model that neither `judge` nor `first` runs is refused.
fn first(
    judge: Judge,
    first: Option<&str>,
    spec: &ModelSpec,
    detector: &str,
    local: Local<'_>,
    cx: &Cx<'_>,
) -> Result<Judge, Refusal> {
    let local_judge = matches!(spec, ModelSpec::Id(id) if id.starts_with("local/"));
    let runs = |check: &str| {
        first == Some(check)
            || matches!(spec, ModelSpec::Id(id) if id.strip_prefix("local/") == Some(check))
    };
    if local.thresholds.is_some() && !runs("injection-classifier") && !runs("toxicity-classifier") {
        return Err(Refusal::Option(
            "classifier_thresholds",
            "`classifier_thresholds` sets the heads' thresholds of the local check `injection-classifier` or `toxicity-classifier`, which neither `judge` nor `first` runs here".to_owned(),
        ));
    }
    if local.among.is_some() && !runs("language-identifier") {
        return Err(Refusal::Option(
            "among",
            "`among` chooses the languages of the local check `language-identifier`, which neither `judge` nor `first` runs here".to_owned(),
        ));
    }
    let Some(name) = first else {
        let runs_onnx = matches!(spec, ModelSpec::Id(id) if id == "local/onnx");
        if local.onnx.is_some() && !runs_onnx {
            return Err(Refusal::Option(
                "onnx",
                "the `onnx` model judges nothing here; run it alone with `judge = \"local/onnx\"`, or before the judge's model with `first = \"onnx\"`".to_owned(),
            ));
        }
        return Ok(judge);
    };
    if local_judge {
        return Err(Refusal::Option(
            "first",
            "the judge is a local check already; `first` puts a local check before a judge that is a model".to_owned(),
        ));
    }
    Ok(judge.first(local_check(name, detector, "first", local, cx)?))
}

/// `circuit_breaker = { failures = 5, window_ms = 60000, cool_down_ms = 30000 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BreakerSpec {
    failures: u32,
    window_ms: u64,
    cool_down_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModerationOptions {
    judge: ModelSpec,
    first: Option<String>,
    onnx: Option<OnnxSpec>,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    classifier_thresholds: Option<BTreeMap<String, f64>>,
    categories: Option<Vec<String>>,
    strategy: Option<Strategy>,
    threshold: Option<f64>,
    instructions: Option<String>,
    chunk_window: Option<NonZeroUsize>,
    sites: Option<Vec<Site>>,
    include_scores: Option<bool>,
}

fn moderation(o: ModerationOptions, cx: &Cx<'_>) -> Result<Moderation, Refusal> {
    let mut j = judge_of!(cx, o, "moderation", onnx)?;
    j = first(
        j,
        o.first.as_deref(),
        &o.judge,
        "moderation",
        Local {
            onnx: o.onnx.as_ref(),
            thresholds: o.classifier_thresholds.as_ref(),
            ..Local::default()
        },
        cx,
    )?;
    let mut b = Moderation::builder(j);
    b = set(b, o.categories, |b, c| b.categories(c));
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    b = set(b, o.chunk_window, |b, w| b.chunk_window(w));
    b = set(b, o.sites, |b, s| b.sites(sites(&s)));
    b = set(b, o.include_scores, |b, y| b.include_scores(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InjectionOptions {
    judge: ModelSpec,
    first: Option<String>,
    onnx: Option<OnnxSpec>,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    classifier_thresholds: Option<BTreeMap<String, f64>>,
    categories: Option<Vec<String>>,
    strategy: Option<InjectionStrategy>,
    threshold: Option<f64>,
    instructions: Option<String>,
    include_scores: Option<bool>,
}

fn prompt_injection(o: InjectionOptions, cx: &Cx<'_>) -> Result<PromptInjectionDetector, Refusal> {
    let mut j = judge_of!(cx, o, "prompt-injection-detector", onnx)?;
    j = first(
        j,
        o.first.as_deref(),
        &o.judge,
        "prompt-injection-detector",
        Local {
            onnx: o.onnx.as_ref(),
            thresholds: o.classifier_thresholds.as_ref(),
            ..Local::default()
        },
        cx,
    )?;
    let mut b = PromptInjectionDetector::builder(j);
    b = set(b, o.categories, |b, c| b.categories(c));
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    b = set(b, o.include_scores, |b, y| b.include_scores(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PiiOptions {
    judge: ModelSpec,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    types: Option<Vec<String>>,
    strategy: Option<PiiStrategyName>,
    hold: Option<usize>,
    threshold: Option<f64>,
    instructions: Option<String>,
    chunk_window: Option<NonZeroUsize>,
    sites: Option<Vec<Site>>,
}

/// `block`, `warn`, `filter`, or a redaction (`redact` is `mask`).
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum PiiStrategyName {
    Block,
    Warn,
    Filter,
    Redact,
    Placeholder,
    Mask,
    MaskAll,
    PreserveFormat,
    Hash,
    Remove,
}

fn pii(o: PiiOptions, cx: &Cx<'_>) -> Result<PiiDetector, Refusal> {
    let j = judge_of!(cx, o, "pii-detector")?;
    let mut b = PiiDetector::builder(j);
    b = set(b, o.types, |b, t| b.types(t));
    b = set(b, o.strategy, |b, s| {
        let redact = |r: Redaction| PiiStrategy::Redact(r);
        b.strategy(match s {
            PiiStrategyName::Block => PiiStrategy::Block,
            PiiStrategyName::Warn => PiiStrategy::Warn,
            PiiStrategyName::Filter => PiiStrategy::Filter,
            // `mask` is the reference's mask (`t**t@*******.com`); `mask-all` stars everything.
            PiiStrategyName::Redact | PiiStrategyName::Mask | PiiStrategyName::PreserveFormat => {
                redact(Redaction::PreserveFormat)
            }
            PiiStrategyName::MaskAll => redact(Redaction::Mask),
            PiiStrategyName::Placeholder => redact(Redaction::Placeholder),
            PiiStrategyName::Hash => redact(Redaction::Hash),
            PiiStrategyName::Remove => redact(Redaction::Remove),
        })
    });
    b = set(b, o.hold, |b, n| b.hold(n));
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    b = set(b, o.chunk_window, |b, w| b.chunk_window(w));
    b = set(b, o.sites, |b, s| b.sites(sites(&s)));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LeakOptions {
    judge: ModelSpec,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    strategy: Option<LeakStrategyName>,
    placeholder: Option<String>,
    threshold: Option<f64>,
    instructions: Option<String>,
    chunk_window: Option<NonZeroUsize>,
    sites: Option<Vec<Site>>,
    include_scores: Option<bool>,
}

/// `block`, `warn`, `filter`, `retry`, or a redaction (`redact` is `placeholder`).
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum LeakStrategyName {
    Block,
    Warn,
    Filter,
    Retry,
    Redact,
    Placeholder,
    Mask,
    Hash,
    Remove,
}

fn prompt_leak(o: LeakOptions, cx: &Cx<'_>) -> Result<PromptLeakDetector, Refusal> {
    let j = judge_of!(cx, o, "prompt-leak-detector")?;
    let mut b = PromptLeakDetector::builder(j);
    b = set(b, o.strategy, |b, s| {
        let redact = |r: Redaction| LeakStrategy::Redact(r);
        b.strategy(match s {
            LeakStrategyName::Block => LeakStrategy::Block,
            LeakStrategyName::Warn => LeakStrategy::Warn,
            LeakStrategyName::Filter => LeakStrategy::Filter,
            LeakStrategyName::Retry => LeakStrategy::Retry,
            LeakStrategyName::Redact | LeakStrategyName::Placeholder => {
                redact(Redaction::Placeholder)
            }
            LeakStrategyName::Mask => redact(Redaction::Mask),
            LeakStrategyName::Hash => redact(Redaction::Hash),
            LeakStrategyName::Remove => redact(Redaction::Remove),
        })
    });
    b = set(b, o.placeholder, |b, p| b.placeholder(p));
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    b = set(b, o.chunk_window, |b, w| b.chunk_window(w));
    b = set(b, o.sites, |b, s| b.sites(sites(&s)));
    b = set(b, o.include_scores, |b, y| b.include_scores(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LanguageOptions {
    judge: ModelSpec,
    first: Option<String>,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    #[serde(default)]
    targets: Vec<String>,
    /// The languages `language-identifier` tells apart (all it knows when not given).
    among: Option<Vec<String>>,
    strategy: Option<LanguageStrategy>,
    min_text_length: Option<usize>,
    translation_quality: Option<TranslationQuality>,
    preserve_original: Option<bool>,
    threshold: Option<f64>,
    instructions: Option<String>,
}

fn language(o: LanguageOptions, cx: &Cx<'_>) -> Result<LanguageDetector, Refusal> {
    let mut j = judge_of!(cx, o, "language-detector", among)?;
    j = first(
        j,
        o.first.as_deref(),
        &o.judge,
        "language-detector",
        Local {
            among: o.among.as_deref(),
            ..Local::default()
        },
        cx,
    )?;
    let mut b = LanguageDetector::builder(j);
    for target in o.targets {
        b = b.target(target);
    }
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.min_text_length, |b, n| b.min_text_length(n));
    b = set(b, o.translation_quality, |b, q| b.translation_quality(q));
    b = set(b, o.preserve_original, |b, y| b.preserve_original(y));
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifierOptions {
    judge: ModelSpec,
    judge_timeout_ms: Option<u64>,
    on_judge_error: Option<OnJudgeError>,
    concurrency: Option<usize>,
    circuit_breaker: Option<BreakerSpec>,
    /// Each class's name and description.
    classes: BTreeMap<String, String>,
    threshold: Option<f64>,
    instructions: Option<String>,
}

fn classifier(o: ClassifierOptions, cx: &Cx<'_>) -> Result<Classifier, Refusal> {
    let j = judge_of!(cx, o, "classifier")?;
    let mut b = Classifier::builder(j);
    for (name, description) in o.classes {
        b = b.class(name, description);
    }
    b = set(b, o.threshold, |b, t| b.threshold(t));
    b = set(b, o.instructions, |b, i| b.instructions(i));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectionOptions {
    /// A model per class of a `classifier` listed before it.
    routes: BTreeMap<String, ModelSpec>,
    /// The model of requests in no routed class.
    otherwise: Option<ModelSpec>,
}

fn model_selection(o: SelectionOptions, cx: &Cx<'_>) -> Result<ModelSelection, Refusal> {
    let model =
        |option, spec: &ModelSpec| spec.build(cx.env).map_err(|e| Refusal::Option(option, e));
    let mut selection = ModelSelection::new();
    for (class, spec) in &o.routes {
        selection = selection.route_shared(class, model("routes", spec)?);
    }
    if let Some(spec) = &o.otherwise {
        selection = selection.otherwise_shared(model("otherwise", spec)?);
    }
    Ok(selection)
}
