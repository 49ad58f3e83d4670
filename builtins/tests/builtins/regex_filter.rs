//! RegexFilter on agents: its presets, strategies and switches, keys split across deltas,
//! what reaches the client, the result and memory, and bad input.

use crate::common;

use common::*;
use futures::executor::block_on;
use processors_builtins::regex_filter::{Preset, Redaction, RegexFilter, Rule, Strategy};
use processors_builtins::{ConfigError, Sites};
use processors_macros::agent;
use processors_runtime::prelude::*;
use processors_runtime::testing::Harness;
use serde_json::json;

const KEY: &str = "sk-proj-1234567890abcdefghijklmnop";

fn secrets() -> RegexFilter {
    RegexFilter::builder()
        .preset(Preset::Secrets)
        .build()
        .expect("the secrets preset builds")
}

fn pii_and_secrets() -> RegexFilter {
    RegexFilter::builder()
        .preset(Preset::Pii)
        .preset(Preset::Secrets)
        .build()
        .expect("the presets build")
}

/// No delta the client got holds any piece of the key longer than two characters.
fn assert_no_piece_of_key(chunks: &[Chunk]) {
    for d in deltas(chunks) {
        for w in KEY.as_bytes().windows(3) {
            let piece = std::str::from_utf8(w).unwrap_or_default();
            assert!(!d.contains(piece), "delta {d:?} holds {piece:?} of the key");
        }
    }
}

#[test]
fn a_key_split_across_two_deltas_is_redacted_in_the_stream_the_result_and_memory() {
    let store = InMemoryStore::new();
    let (head, tail) = KEY.split_at(5); // "sk-pr" + "oj-123…"
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            format!("Your key is {head}"),
            format!("{tail}. Keep it safe."),
        ])]))
        .memory(Memory::new(store.clone()))
        .output(secrets())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "what is my key?", thread());
    let result = result.unwrap();
    assert_no_piece_of_key(&chunks);
    assert_eq!(
        deltas(&chunks).concat(),
        "Your key is [OPENAI_API_KEY]. Keep it safe."
    );
    assert_eq!(result.text, "Your key is [OPENAI_API_KEY]. Keep it safe.");
    let saved = saved(&store);
    assert_eq!(
        saved[1].text(),
        "Your key is [OPENAI_API_KEY]. Keep it safe."
    );
}

#[test]
fn a_key_split_across_three_deltas_is_redacted_with_agent_macro() {
    let store = InMemoryStore::new();
    let agent = agent! {
        crate: processors_runtime,
        model: ScriptedModel::new([Turn::deltas([
            "key: sk-pr",
            "oj-1234567890abc",
            "defghijklmnop and more",
        ])]),
        memory: Memory::new(store.clone()),
        output: [secrets()],
    };
    let (chunks, result) = stream(&agent, "key?", thread());
    assert_no_piece_of_key(&chunks);
    let expected = "key: [OPENAI_API_KEY] and more";
    assert_eq!(deltas(&chunks).concat(), expected);
    assert_eq!(result.unwrap().text, expected);
    assert_eq!(saved(&store)[1].text(), expected);
}

#[test]
fn a_key_that_ends_the_text_is_redacted_when_the_text_ends() {
    let mut h = Harness::new(secrets());
    let out = block_on(h.output_stream(["the key is sk-proj-1234567", "890abcdefghijklmnop"]));
    let out = out.unwrap();
    assert_no_piece_of_key(out.chunks());
    assert_eq!(out.text(), "the key is [OPENAI_API_KEY]");
    // The held key goes out just before the text-end that lets it go.
    let kinds = out.outcome.types();
    let end = kinds.iter().position(|t| t == "text-end").unwrap();
    assert_eq!(out.chunks()[end - 1].text_delta(), Some("[OPENAI_API_KEY]"));
    h.add_answer(out.text());
    let result = block_on(h.output_result()).unwrap();
    assert_eq!(result.outcome.text, "the key is [OPENAI_API_KEY]");
}

#[test]
fn deltas_without_a_possible_match_pass_unchanged_and_at_once() {
    let parts = ["Hello there. ", "How are you today? ", "Fine, thanks!"];
    let out = block_on(Harness::new(pii_and_secrets()).output_stream(parts)).unwrap();
    assert_eq!(out.deltas(), parts);
}

#[test]
fn only_the_end_of_a_delta_that_may_start_a_match_is_held() {
    let mut h = Harness::new(pii_and_secrets());
    let out = block_on(h.output_stream(["Write to ops", "@example.com today!"])).unwrap();
    // "Write to " goes at once; "ops" waits for what follows it.
    assert_eq!(out.deltas(), ["Write to ", "[EMAIL] today!"]);
    // The answer the stream left is the result's text.
    h.add_answer(out.text());
    let result = block_on(h.output_result()).unwrap();
    assert_eq!(result.outcome.text, "Write to [EMAIL] today!");
}

#[test]
fn block_ends_the_run_before_any_piece_of_the_key_streams() {
    let violations = Violations::new();
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "here: sk-pr",
            "oj-1234567890abcdefghijklmnop ok",
        ])]))
        .memory(Memory::new(store.clone()))
        .output(
            RegexFilter::builder()
                .preset(Preset::Secrets)
                .strategy(Strategy::Block)
                .build()
                .unwrap(),
        )
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "key?", thread());
    assert_no_piece_of_key(&chunks);
    let tw = tripwire(&chunks).expect("a trip wire");
    assert_eq!(tw.processor_id, "regex-filter");
    assert_eq!(
        tw.reason,
        "the answer contains text matching the `openai-api-key` rule"
    );
    assert_eq!(
        tw.metadata,
        Some(json!({ "rule": "openai-api-key", "where": "output-stream" }))
    );
    let result = result.unwrap();
    assert_eq!(result.text, "");
    assert_eq!(result.tripwire.as_ref(), Some(tw));
    assert!(saved(&store).is_empty(), "nothing of the turn is saved");
    let v = violations.all();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, ViolationKind::Block);
}

#[test]
fn block_on_the_input_never_reaches_the_model() {
    let model = ScriptedModel::new([Turn::text("unused")]);
    let agent = agent! {
        crate: processors_runtime,
        model: model.clone(),
        input: [RegexFilter::builder().preset(Preset::Pii).strategy(Strategy::Block).build().unwrap()],
    };
    let r = block_on(agent.generate("my card is 4111 1111 1111 1111")).unwrap();
    let tw = r.tripwire.expect("blocked");
    assert_eq!(
        tw.reason,
        "the input contains text matching the `credit-card` rule"
    );
    assert!(!tw.reason.contains("4111"));
    assert!(model.requests().is_empty());
}

#[test]
fn warn_lets_the_text_through_and_reports_each_match_once() {
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "mail a@example.com or b",
            "@example.org, or call (415) 555-0100",
        ])]))
        .output(
            RegexFilter::builder()
                .preset(Preset::Pii)
                .strategy(Strategy::Warn)
                .build()
                .unwrap(),
        )
        .on_violation(violations.hook())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "contacts?", GenerateOptions::new());
    let text = "mail a@example.com or b@example.org, or call (415) 555-0100";
    assert_eq!(deltas(&chunks).concat(), text);
    assert_eq!(result.unwrap().text, text);
    let v = violations.all();
    let counted: u64 = v
        .iter()
        .flat_map(|v| {
            let rules = v.metadata.as_ref().map(|m| m["rules"].clone());
            rules.into_iter().flat_map(|r| {
                r.as_object()
                    .map(|o| o.values().filter_map(|n| n.as_u64()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
        })
        .sum();
    assert_eq!(
        counted, 3,
        "two emails and a phone, each reported once: {v:?}"
    );
    assert!(v.iter().all(|v| v.kind == ViolationKind::Warn));
    assert!(v.iter().all(|v| v.processor_id == "regex-filter"));
    assert!(
        v.iter()
            .all(|v| !v.reason.contains("example") && !v.reason.contains("555"))
    );
}

#[test]
fn redactions_mask_preserve_format_remove_hash_and_placeholder() {
    let text = "write to jane@example.com and jane@example.com, not joe@example.com";
    let with = |how| {
        RegexFilter::builder()
            .preset(Preset::Pii)
            .strategy(Strategy::Redact(how))
            .build()
            .unwrap()
            .apply(text)
            .unwrap()
    };
    assert_eq!(
        with(Redaction::Placeholder),
        "write to [EMAIL] and [EMAIL], not [EMAIL]"
    );
    assert_eq!(
        with(Redaction::Mask),
        "write to ****@*******.*** and ****@*******.***, not ***@*******.***"
    );
    assert_eq!(
        with(Redaction::PreserveFormat),
        "write to j**e@*******.com and j**e@*******.com, not j*e@*******.com"
    );
    assert_eq!(with(Redaction::Remove), "write to  and , not ");
    let hashed = with(Redaction::Hash);
    let tags: Vec<&str> = hashed
        .split(['[', ']'])
        .filter(|s| s.starts_with("EMAIL:"))
        .collect();
    assert_eq!(tags.len(), 3);
    assert_eq!(tags[0], tags[1], "equal values, equal tags");
    assert_ne!(tags[0], tags[2]);
    assert_eq!(tags[0].len(), "EMAIL:".len() + 8);
    // Stable across filters; another key gives other tags.
    assert_eq!(with(Redaction::Hash), hashed);
    let keyed = RegexFilter::builder()
        .preset(Preset::Pii)
        .strategy(Strategy::Redact(Redaction::Hash))
        .hash_key([7; 16])
        .build()
        .unwrap()
        .apply(text)
        .unwrap();
    assert_ne!(keyed, hashed);
}

#[test]
fn a_rule_overrides_the_filter_strategy_and_placeholder() {
    let filter = RegexFilter::builder()
        .preset(Preset::Pii)
        .rule(Rule::new("ticket", r"TICKET-[0-9]+").placeholder("<ticket>"))
        .rule(Rule::new("codename", r"(?i)bluebird").strategy(Strategy::Block))
        .build()
        .unwrap();
    assert_eq!(
        filter.apply("see TICKET-42 from a@b.io").unwrap(),
        "see <ticket> from [EMAIL]"
    );
    let err = filter.apply("project BlueBird").unwrap_err();
    let ProcessorError::Abort(a) = err else {
        panic!("a block")
    };
    let tw = a.into_tripwire("regex-filter");
    assert_eq!(
        tw.metadata,
        Some(json!({ "rule": "codename", "where": "input" }))
    );
}

#[test]
fn input_is_redacted_before_the_model_and_memory_see_it() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([Turn::text("noted")]);
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(pii_and_secrets())
        .build()
        .unwrap();
    block_on(agent.generate_with(
        "I am jane@example.com, key sk-abcdefghijklmnopqrstuvwxyz",
        thread(),
    ))
    .unwrap();
    let prompt = &model.requests()[0].prompt;
    let user = prompt.iter().find(|m| m.role == Role::User).unwrap();
    assert_eq!(user.text(), "I am [EMAIL], key [OPENAI_API_KEY]");
    assert_eq!(
        saved(&store)[0].text(),
        "I am [EMAIL], key [OPENAI_API_KEY]"
    );
}

#[test]
fn input_redaction_and_a_warning_both_apply() {
    let violations = Violations::new();
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            RegexFilter::builder()
                .preset(Preset::Pii)
                .rule(Rule::new("ticket", "TICKET-[0-9]+").strategy(Strategy::Warn))
                .build()
                .unwrap(),
        )
        .on_violation(violations.hook())
        .build()
        .unwrap();
    block_on(agent.generate("TICKET-7 for a@b.io")).unwrap();
    let prompt = &model.requests()[0].prompt;
    assert_eq!(prompt.last().unwrap().text(), "TICKET-7 for [EMAIL]");
    let v = violations.all();
    assert_eq!(v.len(), 1);
    assert_eq!(
        v[0].metadata,
        Some(json!({ "rules": { "ticket": 1 }, "where": "input" }))
    );
}

#[test]
fn switches_choose_the_hooks() {
    let text = "mail a@example.com";
    // Stream off: the client sees the address, the result and memory do not.
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text(text)]))
        .memory(Memory::new(store.clone()))
        .output(
            RegexFilter::builder()
                .preset(Preset::Pii)
                .sites(Sites::INPUT | Sites::RESULT)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "hi", thread());
    assert_eq!(deltas(&chunks).concat(), text);
    assert_eq!(result.unwrap().text, "mail [EMAIL]");
    assert_eq!(saved(&store)[1].text(), "mail [EMAIL]");

    // Input off: the filter in `input` leaves the question alone.
    let model = ScriptedModel::new([Turn::text("ok")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(
            RegexFilter::builder()
                .preset(Preset::Pii)
                .sites(Sites::OUTPUT)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    block_on(agent.generate(text)).unwrap();
    assert_eq!(model.requests()[0].prompt.last().unwrap().text(), text);

    // Result off, stream on: the stream redacts, and so the result is redacted too.
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text(text)]))
        .output(
            RegexFilter::builder()
                .preset(Preset::Pii)
                .sites(Sites::INPUT | Sites::STREAM)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("hi")).unwrap().text, "mail [EMAIL]");
}

#[test]
fn reasoning_deltas_are_filtered_too() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::text("done").reasoning("the user is a@example.com")
        ]))
        .output(pii_and_secrets())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::ReasoningDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "the user is [EMAIL]");
    let saved_reasoning: Vec<&Part> = result
        .as_ref()
        .unwrap()
        .response_messages
        .iter()
        .flat_map(|m| &m.content.parts)
        .filter(|p| matches!(p, Part::Reasoning { .. }))
        .collect();
    assert_eq!(
        saved_reasoning,
        [&Part::Reasoning {
            text: "the user is [EMAIL]".into()
        }]
    );
}

#[test]
fn held_text_goes_before_a_tool_call() {
    let weather = tool(
        "weather",
        "weather",
        json!({ "type": "object" }),
        |_| async move { Ok(json!("sunny")) },
    );
    let agent = Agent::builder()
        .model(ScriptedModel::new([
            Turn::deltas(["checking for ops"]).tool_call("c1", "weather", json!({})),
            Turn::text("sunny"),
        ]))
        .tool(weather)
        .output(pii_and_secrets())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "weather?", GenerateOptions::new());
    let call = types(&chunks)
        .iter()
        .position(|t| t == "tool-call")
        .unwrap();
    // "ops" could start an address: it was held, and went just before the call.
    assert_eq!(deltas(&chunks[..call]), ["checking for ", "ops"]);
    assert_eq!(deltas(&chunks[call..]), ["sunny"]);
    assert_eq!(result.unwrap().text, "checking for opssunny");
}

#[test]
fn two_filters_in_two_lists_share_nothing_they_should_not() {
    let model = ScriptedModel::new([Turn::deltas(["reach me at b", "@example.com"])]);
    let agent = agent! {
        crate: processors_runtime,
        model: model.clone(),
        input: [RegexFilter::builder().preset(Preset::Pii).build().unwrap()],
        output: [pii_and_secrets()],
    };
    let (chunks, result) = stream(&agent, "I am a@example.com", GenerateOptions::new());
    assert_eq!(deltas(&chunks).concat(), "reach me at [EMAIL]");
    assert_eq!(result.unwrap().text, "reach me at [EMAIL]");
    assert_eq!(
        model.requests()[0].prompt.last().unwrap().text(),
        "I am [EMAIL]"
    );
}

#[test]
fn the_result_hook_catches_what_did_not_stream_through_the_filter() {
    // A response cache replays an answer without the stream processors; the result hook is
    // what redacts it for the result and memory.
    #[processors_macros::processor(crate = processors_runtime, llm_request)]
    fn replay() -> LlmRequestAction {
        LlmRequestAction::Respond(LlmResponse {
            chunks: vec![
                ChunkKind::TextStart { id: "t".into() },
                ChunkKind::TextDelta {
                    id: "t".into(),
                    text: "mail a@example.com".into(),
                },
                ChunkKind::TextEnd { id: "t".into() },
                ChunkKind::Finish {
                    finish_reason: FinishReason::Stop,
                    usage: Usage::default(),
                },
            ],
        })
    }
    let store = InMemoryStore::new();
    let agent = agent! {
        crate: processors_runtime,
        model: ScriptedModel::new([Turn::text("unused")]),
        memory: Memory::new(store.clone()),
        input: [Replay],
        output: [pii_and_secrets(), memory],
    };
    let r = block_on(agent.generate_with("hi", thread())).unwrap();
    assert_eq!(r.text, "mail [EMAIL]");
    assert_eq!(saved(&store)[1].text(), "mail [EMAIL]");
}

#[test]
fn empty_text_and_empty_deltas_pass() {
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas(["", "a", "", "b", ""])]))
        .input(pii_and_secrets())
        .output(pii_and_secrets())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "", GenerateOptions::new());
    assert_eq!(deltas(&chunks).concat(), "ab");
    assert_eq!(result.unwrap().text, "ab");
    assert_eq!(pii_and_secrets().apply("").unwrap(), "");
}

#[test]
fn unicode_around_matches_is_kept_intact() {
    let filter = pii_and_secrets();
    assert_eq!(
        filter
            .apply("écrivez à marie@exemple.fr 🙂 ou 電話 +33 1 23 45 67 89。")
            .unwrap(),
        "écrivez à [EMAIL] 🙂 ou 電話 [PHONE]。"
    );
    // Streamed in pieces that end next to multi-byte characters.
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "鍵は sk-",
            "proj-1234567890abc",
            "defghijklmnop🙂です",
        ])]))
        .output(filter)
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    assert_no_piece_of_key(&chunks);
    assert_eq!(result.unwrap().text, "鍵は [OPENAI_API_KEY]🙂です");
}

#[test]
fn huge_input_and_answer_are_filtered_whole() {
    let filler = "lorem ipsum dolor sit amet ".repeat(40_000); // ~1 MB
    let input = format!("{filler}jane@example.com {filler}");
    let model = ScriptedModel::new([Turn::repeated("word ", 100_000)]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(pii_and_secrets())
        .output(pii_and_secrets())
        .build()
        .unwrap();
    let r = block_on(agent.generate(input.as_str())).unwrap();
    assert_eq!(r.text.len(), 500_000);
    let sent = model.requests()[0].prompt.last().unwrap().text();
    assert_eq!(sent, format!("{filler}[EMAIL] {filler}"));
}

#[test]
fn a_small_max_hold_lets_a_long_match_go_at_the_limit() {
    let filter = RegexFilter::builder()
        .preset(Preset::Secrets)
        .max_hold(8)
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas([
            "sk-proj-1234",
            "567890abcdefghijklmnop",
        ])]))
        .output(filter)
        .build()
        .unwrap();
    let (chunks, _) = stream(&agent, "hi", GenerateOptions::new());
    // Past 8 bytes the filter stops waiting: the first piece was too short to match.
    assert_eq!(deltas(&chunks)[0], "sk-proj-1234");
}

#[test]
fn presets_find_what_they_promise_and_leave_look_alikes() {
    let pii = RegexFilter::builder().preset(Preset::Pii).build().unwrap();
    let cases = [
        ("mail jane.doe+x@mail.example.co.uk now", "mail [EMAIL] now"),
        ("card 4111-1111-1111-1111.", "card [CREDIT_CARD]."),
        (
            "not a card 4111 1111 1111 1112",
            "not a card 4111 1111 1111 1112",
        ),
        ("iban DE89 3704 0044 0532 0130 00 ok", "iban [IBAN] ok"),
        (
            "bad iban GB82 WEST 1234 5698 7654 33",
            "bad iban GB82 WEST 1234 5698 7654 33",
        ),
        (
            "host 192.168.1.20, v6 2001:db8::8a2e:370:7334",
            "host [IP_ADDRESS], v6 [IP_ADDRESS]",
        ),
        ("std::vec and a::b stay", "std::vec and a::b stay"),
        (
            "call +44 20 7946 0958 or (415) 555-0100",
            "call [PHONE] or [PHONE]",
        ),
        ("or 020 7946 0958", "or [PHONE]"),
        (
            "dated 2024-01-15 at 10:30, v1.2.3",
            "dated 2024-01-15 at 10:30, v1.2.3",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(pii.apply(input).unwrap(), expected, "{input}");
    }
    let secrets = secrets();
    let cases = [
        (
            "sk-ant-api03-abcdefghijklmnopqrstuvwx",
            "[ANTHROPIC_API_KEY]",
        ),
        ("AKIAIOSFODNN7EXAMPLE", "[AWS_ACCESS_KEY_ID]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "[AWS_SECRET_ACCESS_KEY]",
        ),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[GITHUB_TOKEN]"),
        ("xoxb-1234567890-abcdefghij", "[SLACK_TOKEN]"),
        (
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "[GOOGLE_API_KEY]",
        ),
        ("sk_live_abcdefghijklmnop1234", "[STRIPE_SECRET_KEY]"),
        (
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
            "[JWT]",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "[PRIVATE_KEY]",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEpAIBAAKCAQEA cut off",
            "[PRIVATE_KEY]",
        ),
        (
            "we ask-questions and task-lists",
            "we ask-questions and task-lists",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(secrets.apply(input).unwrap(), expected, "{input}");
    }
    let urls = RegexFilter::builder().preset(Preset::Urls).build().unwrap();
    assert_eq!(
        urls.apply("see https://example.com/a?b=c, or www.example.org.")
            .unwrap(),
        "see [URL], or [URL]."
    );
}

#[test]
fn a_private_key_streamed_line_by_line_never_shows() {
    let lines = [
        "Here:\n-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
        "AAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQ\n",
        "-----END OPENSSH PRIVATE KEY-----\nDone.",
    ];
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::deltas(lines)]))
        .output(secrets())
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "hi", GenerateOptions::new());
    for d in deltas(&chunks) {
        assert!(
            !d.contains("b3Blbn") && !d.contains("AAAA") && !d.contains("BEGIN"),
            "{d:?}"
        );
    }
    assert_eq!(result.unwrap().text, "Here:\n[PRIVATE_KEY]\nDone.");
}

#[test]
fn bad_configurations_are_errors_from_build() {
    let err = |b: processors_builtins::regex_filter::RegexFilterBuilder| b.build().unwrap_err();
    let b = RegexFilter::builder;
    assert!(matches!(err(b()), ConfigError::Empty { .. }));
    let e = err(b().rule(Rule::new("bad", "a(b")));
    assert!(matches!(&e, ConfigError::Pattern { rule, .. } if rule == "bad"));
    assert!(
        e.to_string()
            .starts_with("rule `bad` has an unusable pattern")
    );
    assert!(matches!(
        err(b().rule(Rule::new("empty", "a*"))),
        ConfigError::Pattern { rule, reason } if rule == "empty" && reason.contains("empty text")
    ));
    assert!(matches!(
        err(b().preset(Preset::Pii).rule(Rule::new("email", "x"))),
        ConfigError::Duplicate { name, .. } if name == "email"
    ));
    assert!(matches!(
        err(b().rule(Rule::new("Has Space", "x"))),
        ConfigError::InvalidName { what: "rule", .. }
    ));
    let e = err(b().preset(Preset::Urls).without("email"));
    assert_eq!(
        e.to_string(),
        "`email` is not a rule (in `without`) the processor knows; the filter's rules are: url"
    );
    assert!(matches!(
        err(b().preset(Preset::Urls).max_hold(0)),
        ConfigError::Zero {
            option: "max_hold",
            ..
        }
    ));
    assert!(matches!(
        err(b().preset(Preset::Urls).sites(Sites::NONE)),
        ConfigError::NoSites { .. }
    ));
    assert!(matches!(
        err(b().preset(Preset::Urls).without("url")),
        ConfigError::Empty { .. }
    ));
}

/// However the answer is cut into deltas, the stream carries what the filter makes of the
/// whole text: prose between the matches passes at once, and no match is missed at a cut.
#[test]
fn every_cut_of_the_answer_streams_what_the_whole_text_becomes() {
    let filter = RegexFilter::builder()
        .preset(Preset::Pii)
        .preset(Preset::Secrets)
        .sites(Sites::STREAM)
        .build()
        .unwrap();
    let text = format!(
        "the quick brown fox writes to jane.doe@example.com, calls +1 415 555 0100 and \
         keeps {KEY} safe; café naïve 漢字 done"
    );
    let whole = filter.apply(&text).unwrap();
    assert_ne!(whole, text);
    let chars: Vec<char> = text.chars().collect();
    for size in 1..=9 {
        let deltas_in: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
        let agent = Agent::builder()
            .model(ScriptedModel::new([Turn::deltas(deltas_in)]))
            .output(filter.clone())
            .build()
            .unwrap();
        let (chunks, result) = stream(&agent, "go", GenerateOptions::new());
        assert_eq!(deltas(&chunks).concat(), whole, "deltas of {size}");
        assert_eq!(result.unwrap().text, whole, "deltas of {size}");
    }
}
