//! `regex-filter`, `anonymizer`, `unicode-normalizer`, `system-prompt-scrubber`.

use super::{Site, set, sites};
use crate::registry::{Cx, Refusal, Registry};
use processors_builtins::redact::Redaction;
use processors_builtins::regex_filter::{Preset, Rule, Strategy};
use processors_builtins::system_prompt_scrubber::Strategy as ScrubStrategy;
use processors_builtins::unicode_normalizer::Form;
use processors_builtins::{Anonymizer, RegexFilter, SystemPromptScrubber, UnicodeNormalizer};
use serde::Deserialize;

pub(super) fn register(registry: Registry) -> Registry {
    registry
        .builtin("regex-filter", regex_filter)
        .builtin_shared("anonymizer", anonymizer)
        .builtin("unicode-normalizer", unicode_normalizer)
        .builtin("system-prompt-scrubber", system_prompt_scrubber)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegexFilterOptions {
    #[serde(default)]
    presets: Vec<Preset>,
    #[serde(default)]
    rules: Vec<RuleOptions>,
    #[serde(default)]
    without: Vec<String>,
    strategy: Option<FilterStrategy>,
    sites: Option<Vec<Site>>,
    max_hold: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleOptions {
    name: String,
    pattern: String,
    placeholder: Option<String>,
    strategy: Option<FilterStrategy>,
}

/// `block`, `warn`, or a redaction (`redact` is `placeholder`).
#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum FilterStrategy {
    Block,
    Warn,
    Redact,
    Placeholder,
    Mask,
    MaskAll,
    PreserveFormat,
    Hash,
    Remove,
}

impl From<FilterStrategy> for Strategy {
    fn from(s: FilterStrategy) -> Strategy {
        let redact = |r: Redaction| Strategy::Redact(r);
        match s {
            FilterStrategy::Block => Strategy::Block,
            FilterStrategy::Warn => Strategy::Warn,
            FilterStrategy::Redact | FilterStrategy::Placeholder => redact(Redaction::Placeholder),
            // `mask` is the reference's mask (`t**t@*******.com`); `mask-all` stars everything.
            FilterStrategy::Mask | FilterStrategy::PreserveFormat => {
                redact(Redaction::PreserveFormat)
            }
            FilterStrategy::MaskAll => redact(Redaction::Mask),
            FilterStrategy::Hash => redact(Redaction::Hash),
            FilterStrategy::Remove => redact(Redaction::Remove),
        }
    }
}

fn regex_filter(o: RegexFilterOptions, _: &Cx<'_>) -> Result<RegexFilter, Refusal> {
    if o.presets.is_empty() && o.rules.is_empty() {
        return Err(Refusal::Other(
            "it has no rules; add a preset, like `presets = [\"pii\"]`, or a rule, like `rules = [{ name = \"ticket\", pattern = \"TCK-[0-9]+\" }]`".to_owned(),
        ));
    }
    let mut b = RegexFilter::builder();
    for preset in o.presets {
        b = b.preset(preset);
    }
    for r in o.rules {
        let mut rule = Rule::new(r.name, r.pattern);
        rule = set(rule, r.placeholder, Rule::placeholder);
        rule = set(rule, r.strategy, |rule, s| rule.strategy(s.into()));
        b = b.rule(rule);
    }
    for name in o.without {
        b = b.without(name);
    }
    b = set(b, o.strategy, |b, s| b.strategy(s.into()));
    b = set(b, o.sites, |b, s| b.sites(sites(&s)));
    b = set(b, o.max_hold, |b, n| b.max_hold(n));
    Ok(b.build()?)
}

/// `anonymizer`: one processor for the file, whose entry in `input` replaces values in each
/// call's prompt and whose entry in `output` restores them (they share the vault). The first
/// entry's options build it; the other entry names it alone, or repeats them.
#[derive(Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct AnonymizerOptions {
    #[serde(default)]
    presets: Vec<Preset>,
    #[serde(default)]
    rules: Vec<AnonymizerRule>,
    #[serde(default)]
    without: Vec<String>,
}

#[derive(Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct AnonymizerRule {
    name: String,
    pattern: String,
}

fn anonymizer(o: &AnonymizerOptions, _: &Cx<'_>) -> Result<Anonymizer, Refusal> {
    let mut b = Anonymizer::builder();
    for preset in &o.presets {
        b = b.preset(*preset);
    }
    for r in &o.rules {
        b = b.rule(Rule::new(r.name.clone(), r.pattern.clone()));
    }
    for name in &o.without {
        b = b.without(name.clone());
    }
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnicodeNormalizerOptions {
    form: Option<Form>,
    strip_control: Option<bool>,
    strip_invisible: Option<bool>,
    keep_emoji: Option<bool>,
    collapse_whitespace: Option<bool>,
    trim: Option<bool>,
}

fn unicode_normalizer(
    o: UnicodeNormalizerOptions,
    _: &Cx<'_>,
) -> Result<UnicodeNormalizer, Refusal> {
    let mut b = UnicodeNormalizer::builder();
    b = set(b, o.form, |b, f| b.form(f));
    b = set(b, o.strip_control, |b, y| b.strip_control(y));
    b = set(b, o.strip_invisible, |b, y| b.strip_invisible(y));
    b = set(b, o.keep_emoji, |b, y| b.keep_emoji(y));
    b = set(b, o.collapse_whitespace, |b, y| b.collapse_whitespace(y));
    b = set(b, o.trim, |b, y| b.trim(y));
    Ok(b.build()?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScrubberOptions {
    min_span: Option<usize>,
    strategy: Option<ScrubStrategy>,
    placeholder: Option<String>,
    sites: Option<Vec<Site>>,
}

fn system_prompt_scrubber(o: ScrubberOptions, _: &Cx<'_>) -> Result<SystemPromptScrubber, Refusal> {
    let mut b = SystemPromptScrubber::builder();
    b = set(b, o.min_span, |b, n| b.min_span(n));
    b = set(b, o.strategy, |b, s| b.strategy(s));
    b = set(b, o.placeholder, |b, p| b.placeholder(p));
    b = set(b, o.sites, |b, s| b.sites(sites(&s)));
    Ok(b.build()?)
}
