//! LanguageDetector with scripted judges: detect, translate, block and warn; the confidence
//! threshold at the boundary; short messages; malformed verdicts.

use crate::common;
use crate::judges;

use common::*;
use futures::executor::block_on;
use judges::*;
use processors_builtins::detector::{
    ConfigError, Judge, LanguageDetector, LanguageStrategy, OnJudgeError, TranslationQuality,
};
use processors_runtime::prelude::*;
use serde_json::{Value, json};

/// French for text with "commande", English otherwise; a translation when asked.
fn languages(content: &str) -> Value {
    if content.contains("commande") {
        json!({ "language": "fr", "confidence": 0.95, "translation": "Where is my order?" })
    } else {
        json!({ "language": "en", "confidence": 0.99, "translation": null })
    }
}

const FRENCH: &str = "Où est ma commande ?";

fn detector(judge: impl LanguageModel, strategy: LanguageStrategy) -> LanguageDetector {
    LanguageDetector::builder(Judge::new(judge))
        .target("en-US")
        .strategy(strategy)
        .build()
        .unwrap()
}

fn sent(model: &ScriptedModel) -> Vec<Message> {
    model.requests()[0].prompt.clone()
}

fn run(
    strategy: LanguageStrategy,
    input: Vec<Message>,
) -> (ScriptedModel, GenerateResult, Violations) {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(judge(languages), strategy))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let result = block_on(agent.generate(input)).unwrap();
    (model, result, violations)
}

#[test]
fn detect_annotates_every_judged_message_and_changes_no_text() {
    let (model, result, violations) = run(
        LanguageStrategy::Detect,
        vec![
            Message::user(FRENCH),
            Message::user("Where is my order, please?"),
        ],
    );
    assert!(result.tripwire.is_none());
    assert!(violations.all().is_empty());
    let sent = sent(&model);
    assert_eq!(sent[0].text(), FRENCH);
    assert_eq!(
        sent[0].metadata.as_ref().unwrap()["language"],
        json!({ "detected": "fr", "confidence": 0.95, "targets": ["en"], "inTargets": false })
    );
    assert_eq!(
        sent[1].metadata.as_ref().unwrap()["language"]["detected"],
        "en"
    );
}

#[test]
fn translate_replaces_only_messages_outside_the_targets_and_keeps_the_original() {
    let (model, _, _) = run(
        LanguageStrategy::Translate,
        vec![Message::user(FRENCH), Message::user("And my invoice too?")],
    );
    let sent = sent(&model);
    assert_eq!(sent[0].text(), "Where is my order?");
    let note = &sent[0].metadata.as_ref().unwrap()["language"];
    assert_eq!(note["original"], FRENCH);
    assert_eq!(note["translatedTo"], "en");
    assert_eq!(sent[1].text(), "And my invoice too?");
    assert!(sent[1].metadata.is_none());
}

#[test]
fn translate_without_preserve_original_drops_it() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            LanguageDetector::builder(Judge::new(judge(languages)))
                .target("en")
                .strategy(LanguageStrategy::Translate)
                .preserve_original(false)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(FRENCH)).unwrap();
    let note = &sent(&model)[0].metadata.clone().unwrap()["language"];
    assert!(note.get("original").is_none(), "{note}");
}

#[test]
fn block_names_the_language_and_warn_reports_it() {
    let (model, result, _) = run(LanguageStrategy::Block, vec![Message::user(FRENCH)]);
    let tw = result.tripwire.expect("blocked");
    assert_eq!(tw.reason, "the input is in `fr`, not in en");
    assert_eq!(tw.processor_id, "language-detector");
    assert_eq!(model.calls(), 0);

    let (model, result, violations) = run(LanguageStrategy::Warn, vec![Message::user(FRENCH)]);
    assert!(result.tripwire.is_none());
    assert_eq!(sent(&model)[0].text(), FRENCH);
    let v = violations.all();
    assert_eq!(v[0].kind, ViolationKind::Warn);
    assert_eq!(v[0].reason, "the input is in fr, not in en");
}

#[test]
fn a_target_language_passes_under_block() {
    let (model, result, _) = run(
        LanguageStrategy::Block,
        vec![Message::user("Where is my order?")],
    );
    assert!(result.tripwire.is_none());
    assert_eq!(model.calls(), 1);
}

#[test]
fn confidence_equal_to_the_threshold_acts_and_below_passes_as_undetermined() {
    for (confidence, blocked) in [(0.7, true), (0.69, false)] {
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::text("ok")]))
            .input(detector(
                judge(move |_| json!({ "language": "de", "confidence": confidence })),
                LanguageStrategy::Block,
            ))
            .build()
            .unwrap();
        let result = block_on(agent.generate("Wo ist meine Bestellung?")).unwrap();
        assert_eq!(result.tripwire.is_some(), blocked, "{confidence}");
    }
}

#[test]
fn messages_shorter_than_the_minimum_are_not_judged() {
    let judge = judge(languages);
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .input(
            LanguageDetector::builder(Judge::new(judge.clone()))
                .target("en")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(vec![Message::user("merci"), Message::user(FRENCH)])).unwrap();
    assert_eq!(contents(&judge), [FRENCH]);
}

#[test]
fn malformed_verdicts_and_a_missing_translation_follow_on_error() {
    for (answer, strategy) in [
        (r#"{"confidence": 0.9}"#, LanguageStrategy::Detect),
        (
            r#"{"language": "fr", "confidence": "high"}"#,
            LanguageStrategy::Detect,
        ),
        (
            r#"{"language": 7, "confidence": 0.9}"#,
            LanguageStrategy::Detect,
        ),
        (
            r#"{"language": "fr", "confidence": 0.9}"#,
            LanguageStrategy::Translate,
        ),
    ] {
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::text("ok")]))
            .input(
                LanguageDetector::builder(
                    Judge::new(answers([answer])).on_error(OnJudgeError::Block),
                )
                .target("en")
                .strategy(strategy)
                .build()
                .unwrap(),
            )
            .build()
            .unwrap();
        let tw = block_on(agent.generate(FRENCH))
            .unwrap()
            .tripwire
            .expect(answer);
        assert!(tw.reason.contains("malformed"), "{answer}: {}", tw.reason);
    }
}

#[test]
fn a_detector_without_targets_is_refused() {
    let err = LanguageDetector::builder(Judge::new(ScriptedModel::new([])))
        .build()
        .unwrap_err();
    assert!(matches!(
        err,
        ConfigError::Empty {
            what: "the list of target languages",
            ..
        }
    ));
}

/// A target given by its name is that language, not a code: `English` lets English through
/// under `Block` and stops French, as `en` does; a judge answering a name is read as its code;
/// a target that is neither a code nor a name is refused when the detector is built.
#[test]
fn a_target_named_by_its_name_is_that_language_and_an_unknown_one_is_refused() {
    for target in ["English", "english", "en", "EN-gb"] {
        for (text, language, blocked) in [
            ("Where is my order, please?", "en", false),
            ("Where is my order, please?", "English", false),
            (FRENCH, "fr", true),
        ] {
            let model = ScriptedModel::new([Turn::text("ok")]);
            let answer = json!({ "language": language, "confidence": 0.99 });
            let detector = LanguageDetector::builder(Judge::new(judge(move |_| answer.clone())))
                .target(target)
                .strategy(LanguageStrategy::Block)
                .build()
                .unwrap();
            let agent = Agent::builder()
                .model(model.clone())
                .input(detector)
                .build()
                .unwrap();
            let result = block_on(agent.generate(text)).unwrap();
            assert_eq!(
                result.tripwire.is_some(),
                blocked,
                "{target}: {text} judged `{language}`"
            );
        }
    }
    for unknown in ["Klingon", "xx", ""] {
        let built = LanguageDetector::builder(Judge::new(judge(languages)))
            .target(unknown)
            .build();
        assert!(
            matches!(&built, Err(ConfigError::Unknown { what: "language", name, .. }) if name == unknown),
            "{unknown}: {:?}",
            built.err()
        );
    }
}

/// Every judged message that goes on carries the detection's details in
/// `metadata.language`: the language, the judge's confidence, the targets and whether it is
/// one of them; also a message a warning was reported for.
#[test]
fn bi_55_detection_details_are_in_the_metadata_also_under_warn() {
    let (model, result, violations) = run(
        LanguageStrategy::Warn,
        vec![
            Message::user(FRENCH),
            Message::user("Where is my order, please?"),
        ],
    );
    assert!(result.tripwire.is_none());
    assert_eq!(violations.all().len(), 1);
    let sent = sent(&model);
    assert_eq!(
        sent[0].metadata.as_ref().unwrap()["language"],
        json!({ "detected": "fr", "confidence": 0.95, "targets": ["en"], "inTargets": false })
    );
    assert_eq!(
        sent[1].metadata.as_ref().unwrap()["language"]["inTargets"],
        true
    );
}

/// The translation quality is in the judge's prompt, and the reference's verdict shape
/// (`iso_code`, `translated_text`) is read as well as ours.
#[test]
fn bi_56_translation_quality_and_the_references_verdict_shape() {
    let reference = |content: &str| match content.contains("commande") {
        true => {
            json!({ "iso_code": "fr", "confidence": 0.9, "translated_text": "Where is my order?" })
        }
        false => json!({ "iso_code": "en", "confidence": 0.99 }),
    };
    let judge = judge(reference);
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            LanguageDetector::builder(Judge::new(judge.clone()))
                .target("English")
                .strategy(LanguageStrategy::Translate)
                .translation_quality(TranslationQuality::Quality)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(FRENCH)).unwrap();
    assert_eq!(sent(&model)[0].text(), "Where is my order?");
    let prompt = judge.requests()[0].prompt[0].text();
    assert!(prompt.contains("keeping the tone, idioms"), "{prompt}");
}
