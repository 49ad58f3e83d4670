//! PiiDetector with scripted judges: each strategy and redaction, the stream holding back
//! values split across deltas and judgings, the threshold boundary, failing judges.

use crate::common;
use crate::judges;

use common::*;
use futures::executor::block_on;
use judges::*;
use processors_builtins::Sites;
use processors_builtins::detector::{Judge, OnJudgeError, PiiDetector, PiiStrategy, Redaction};
use processors_runtime::prelude::*;
use serde_json::{Value, json};
use std::num::NonZeroUsize;

const EMAIL: &str = "jane.doe@example.com";
const PHONE: &str = "+1 415 555 0100";

/// Finds the email and the phone number when the content holds them whole (a judge sees
/// only what it is given: a piece of the email is not an email).
fn finder(content: &str) -> Value {
    let mut entities = Vec::new();
    if content.contains(EMAIL) {
        entities.push(json!({ "type": "email", "value": EMAIL, "confidence": 0.98 }));
    }
    if content.contains(PHONE) {
        entities.push(json!({ "type": "phone", "value": PHONE, "confidence": 0.9 }));
    }
    json!({ "entities": entities })
}

fn detector(judge: impl LanguageModel, strategy: PiiStrategy) -> PiiDetector {
    PiiDetector::builder(Judge::new(judge))
        .strategy(strategy)
        .build()
        .unwrap()
}

fn main_model() -> ScriptedModel {
    ScriptedModel::new([Turn::text("Noted.")])
}

fn redacted_input(how: Redaction) -> String {
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(judge(finder), PiiStrategy::Redact(how)))
        .build()
        .unwrap();
    block_on(agent.generate(format!("mail {EMAIL} or call {PHONE}, {EMAIL}"))).unwrap();
    model.requests()[0].prompt[0].text()
}

#[test]
fn input_redaction_by_mask_hash_remove_and_placeholder_covers_every_occurrence() {
    assert_eq!(
        redacted_input(Redaction::Mask),
        "mail ****.***@*******.*** or call +* *** *** ****, ****.***@*******.***"
    );
    assert_eq!(
        redacted_input(Redaction::Placeholder),
        "mail [EMAIL] or call [PHONE], [EMAIL]"
    );
    assert_eq!(redacted_input(Redaction::Remove), "mail  or call , ");
    let hashed = redacted_input(Redaction::Hash);
    let tags: Vec<&str> = hashed.split(' ').filter(|w| w.starts_with('[')).collect();
    assert_eq!(tags.len(), 3, "{hashed}");
    assert!(tags[0].starts_with("[EMAIL:") && tags[0].len() == "[EMAIL:12345678]".len());
    // Equal values, equal tags.
    assert_eq!(tags[0], tags[2].trim_end_matches(','));
    assert!(tags[1].starts_with("[PHONE:"));
}

#[test]
fn bi_97_the_default_redaction_is_the_reference_mask() {
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            PiiDetector::builder(Judge::new(judge(finder)))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(format!("mail {EMAIL} or call {PHONE}"))).unwrap();
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        "mail j***.**e@*******.com or call +X XXX XXX 0100"
    );
}

#[test]
fn input_block_names_the_kinds_never_the_values() {
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(judge(finder), PiiStrategy::Block))
        .build()
        .unwrap();
    let tw = block_on(agent.generate(format!("I am {EMAIL}, {PHONE}")))
        .unwrap()
        .tripwire
        .expect("blocked");
    assert_eq!(tw.reason, "the input contains personal data: email, phone");
    let meta = tw.metadata.unwrap();
    assert!(!meta.to_string().contains("jane"), "{meta}");
    assert_eq!(meta["verdicts"][0]["detail"]["counts"]["email"], 1);
    assert_eq!(model.calls(), 0);
}

#[test]
fn input_warn_passes_and_filter_drops_the_message() {
    let violations = Violations::new();
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(judge(finder), PiiStrategy::Warn))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    block_on(agent.generate(format!("I am {EMAIL}"))).unwrap();
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        format!("I am {EMAIL}")
    );
    assert_eq!(violations.all()[0].kind, ViolationKind::Warn);
    assert_eq!(
        violations.all()[0].reason,
        "the input was flagged for email"
    );

    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(judge(finder), PiiStrategy::Filter))
        .build()
        .unwrap();
    block_on(agent.generate(vec![
        Message::user(format!("I am {EMAIL}")),
        Message::user("hi"),
    ]))
    .unwrap();
    let texts: Vec<String> = model.requests()[0]
        .prompt
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["hi"]);
}

#[test]
fn bi_07_a_value_split_across_deltas_is_redacted_and_no_piece_of_it_streams() {
    let judge = judge(finder);
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "Sure, write to jane.d",
            "oe@exam",
            "ple.com and we answer within a day or two, usually much sooner than that.",
        ])]))
        .output(
            PiiDetector::builder(Judge::new(judge.clone()))
                .strategy(PiiStrategy::Redact(Redaction::Placeholder))
                .chunk_window(NonZeroUsize::new(1).unwrap())
                .hold(12)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "contact?", GenerateOptions::new());
    let streamed = deltas(&chunks);
    for d in &streamed {
        for piece in ["jane", "oe@", "exam", "ple.com"] {
            assert!(!d.contains(piece), "{d:?} leaks {piece:?}");
        }
    }
    let text =
        "Sure, write to [EMAIL] and we answer within a day or two, usually much sooner than that.";
    assert_eq!(streamed.concat(), text);
    assert_eq!(result.unwrap().text, text);
    // Each judging let go what lies 12 characters or more before the end (cut at a space)
    // and held the rest, judged again with what followed; once the email was whole, the cut
    // moved before it, so it went on redacted.
    let asked = contents(&judge);
    assert_eq!(asked[0], "Sure, write to jane.d");
    assert_eq!(asked[1], "write to jane.doe@exam");
    assert!(
        asked[2].starts_with("jane.doe@example.com and"),
        "{asked:?}"
    );
}

#[test]
fn without_hold_back_the_split_value_would_leak() {
    // The same stream judged delta by delta with nothing held: the judge never sees the
    // whole email, so its pieces stream. This is what `hold` prevents.
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "write to jane.d",
            "oe@example.com now",
        ])]))
        .output(
            PiiDetector::builder(Judge::new(judge(finder)))
                .chunk_window(NonZeroUsize::new(1).unwrap())
                .hold(0)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let (chunks, _) = stream(&agent, "contact?", GenerateOptions::new());
    assert_eq!(deltas(&chunks).concat(), format!("write to {EMAIL} now"));
}

#[test]
fn stream_block_ends_before_the_value_reaches_the_client() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "Your contact is ",
            "jane.doe@exa",
            "mple.com.",
        ])]))
        .output(
            PiiDetector::builder(Judge::new(judge(finder)))
                .strategy(PiiStrategy::Block)
                .chunk_window(NonZeroUsize::new(1).unwrap())
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "contact?", GenerateOptions::new());
    assert!(!deltas(&chunks).concat().contains("jane"));
    let tw = tripwire(&chunks).expect("blocked");
    assert_eq!(tw.reason, "the answer contains personal data: email");
    assert!(result.unwrap().tripwire.is_some());
}

#[test]
fn stream_warn_passes_the_text_and_reports_with_a_later_chunk() {
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "mail ",
            "jane.doe@example.com",
            " now",
        ])]))
        .output(detector(judge(finder), PiiStrategy::Warn))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let (chunks, _) = stream(&agent, "contact?", GenerateOptions::new());
    assert_eq!(deltas(&chunks).concat(), format!("mail {EMAIL} now"));
    let v = violations.all();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].reason, "the answer was flagged for email");
}

#[test]
fn stream_warn_reports_a_value_once_although_it_is_judged_twice() {
    let violations = Violations::new();
    let judge = judge(finder);
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "Mail jane.doe@example.com",
            " or call us later today, we are open.",
        ])]))
        .output(
            PiiDetector::builder(Judge::new(judge.clone()))
                .strategy(PiiStrategy::Warn)
                .chunk_window(NonZeroUsize::new(1).unwrap())
                .hold(30)
                .build()
                .unwrap(),
        )
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let (_, result) = stream(&agent, "contact?", GenerateOptions::new());
    assert!(result.unwrap().tripwire.is_none());
    // The email was in the held text of the first judging and judged again in the second.
    let asked = contents(&judge);
    assert!(asked.len() >= 2 && asked[1].contains(EMAIL), "{asked:?}");
    let v = violations.all();
    assert_eq!(v.len(), 1, "{v:?}");
    let verdicts = v[0].metadata.as_ref().unwrap()["verdicts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(verdicts, 1);
}

#[test]
fn the_result_is_checked_when_the_stream_was_not() {
    let judge = judge(finder);
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "mail jane.doe@",
            "example.com",
        ])]))
        .output(
            PiiDetector::builder(Judge::new(judge.clone()))
                .sites(Sites::INPUT | Sites::RESULT)
                .strategy(PiiStrategy::Redact(Redaction::Placeholder))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let result = block_on(agent.generate("contact?")).unwrap();
    assert_eq!(result.text, "mail [EMAIL]");
    assert_eq!(contents(&judge), [format!("mail {EMAIL}")]);
}

#[test]
fn confidence_equal_to_the_threshold_counts_and_below_does_not() {
    for (confidence, redacted) in [(0.8, true), (0.79, false)] {
        let model = main_model();
        let agent = Agent::builder()
            .model(model.clone())
            .input(
                PiiDetector::builder(Judge::new(judge(move |_| {
                    json!({ "entities": [{ "type": "email", "value": EMAIL, "confidence": confidence }] })
                })))
                .threshold(0.8)
                .strategy(PiiStrategy::Redact(Redaction::Placeholder))
                .build()
                .unwrap(),
            )
            .build()
            .unwrap();
        block_on(agent.generate(format!("I am {EMAIL}"))).unwrap();
        let sent = model.requests()[0].prompt[0].text();
        assert_eq!(sent == "I am [EMAIL]", redacted, "{confidence}: {sent}");
    }
}

#[test]
fn kinds_not_asked_for_are_ignored() {
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            PiiDetector::builder(Judge::new(judge(finder)))
                .types(["phone"])
                .strategy(PiiStrategy::Redact(Redaction::Placeholder))
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(format!("{EMAIL} {PHONE}"))).unwrap();
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        format!("{EMAIL} [PHONE]")
    );
}

#[test]
fn a_value_of_one_character_is_ignored() {
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(detector(
            judge(|_| json!({ "entities": [{ "type": "name", "value": "a", "confidence": 1.0 }] })),
            PiiStrategy::Redact(Redaction::Placeholder),
        ))
        .build()
        .unwrap();
    block_on(agent.generate("a banana and a cat")).unwrap();
    assert_eq!(model.requests()[0].prompt[0].text(), "a banana and a cat");
}

#[test]
fn malformed_entities_follow_on_error() {
    for answer in [
        r#"{"entities": "none"}"#,
        r#"{"found": []}"#,
        r#"{"entities": [{"type": "email", "value": "a@b.c"}]}"#,
        r#"{"entities": [{"type": "email", "value": "a@b.c", "confidence": 2}]}"#,
    ] {
        let agent = Agent::builder()
            .model(main_model())
            .input(
                PiiDetector::builder(Judge::new(answers([answer])).on_error(OnJudgeError::Block))
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let tw = block_on(agent.generate("a@b.c"))
            .unwrap()
            .tripwire
            .expect(answer);
        assert!(tw.reason.contains("malformed"), "{answer}: {}", tw.reason);
    }
}

#[test]
fn a_failing_judge_on_the_stream_lets_the_text_go_with_a_warning() {
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas(["hello ", "world"])]))
        .output(detector(
            ScriptedModel::new([Turn::error(ApiError::new(500, "down"))]),
            PiiStrategy::Block,
        ))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    assert_eq!(deltas(&chunks).concat(), "hello world");
    assert!(result.unwrap().tripwire.is_none());
    let v = violations.all();
    assert_eq!(v.len(), 1);
    assert!(
        v[0].reason.starts_with("the answer could not be judged"),
        "{}",
        v[0].reason
    );
}

#[test]
fn with_regex_filter_first_known_shapes_never_reach_the_judge() {
    use processors_builtins::RegexFilter;
    use processors_builtins::regex_filter::Preset;
    let judge = judge(finder);
    let model = main_model();
    let agent = Agent::builder()
        .model(model.clone())
        .input(RegexFilter::builder().preset(Preset::Pii).build().unwrap())
        .input(detector(
            judge.clone(),
            PiiStrategy::Redact(Redaction::Placeholder),
        ))
        .build()
        .unwrap();
    block_on(agent.generate(format!("I am {EMAIL}, call {PHONE}"))).unwrap();
    // The pattern filter redacted both; the judge saw only placeholders.
    let asked = contents(&judge);
    assert_eq!(asked.len(), 1);
    assert!(
        !asked[0].contains("jane") && !asked[0].contains("415"),
        "{asked:?}"
    );
    assert_eq!(model.requests()[0].prompt[0].text(), asked[0]);
}

/// `Redaction::PreserveFormat`: an email keeps its first and last letter and its top-level
/// domain, a phone number its punctuation and last four digits.
#[test]
fn bi_46_format_preserving_masks_keep_the_shape_of_each_kind() {
    assert_eq!(
        redacted_input(Redaction::PreserveFormat),
        "mail j***.**e@*******.com or call +X XXX XXX 0100, j***.**e@*******.com"
    );
}

/// The reference's verdict (`detections`, and `redacted_content`): the judge's own redaction
/// of an input message is used, unless a value it found is still in it.
#[test]
fn bi_47_the_judges_own_redaction_is_used_when_it_removes_what_it_found() {
    let run = |redacted: &'static str| {
        let model = main_model();
        let reference = move |content: &str| {
            json!({
                "categories": { "email": content.contains(EMAIL) },
                "detections": [{ "type": "email", "value": EMAIL, "confidence": 0.97 }],
                "redacted_content": redacted,
            })
        };
        let agent = Agent::builder()
            .model(model.clone())
            .input(detector(
                judge(reference),
                PiiStrategy::Redact(Redaction::Placeholder),
            ))
            .build()
            .unwrap();
        block_on(agent.generate(format!("write to {EMAIL} today"))).unwrap();
        model.requests()[0].prompt[0].text()
    };
    assert_eq!(run("write to <email> today"), "write to <email> today");
    assert_eq!(
        run("write to jane.doe@example.com today!"),
        "write to [EMAIL] today",
        "a redaction that leaves the value in is not used"
    );
}
