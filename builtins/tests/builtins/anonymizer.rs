//! Anonymizer: values replaced in every model call's prompt, restored in the stream (split
//! placeholders whole), in tools' arguments and in the result; the vault per request; memory
//! keeping what the caller sent and got.

use crate::common;

use common::*;
use futures::executor::block_on;
use processors_builtins::Anonymizer;
use processors_builtins::regex_filter::{Preset, Rule};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::{Arc, Mutex};

const EMAIL: &str = "jane.doe@example.com";
const SSN: &str = "536-22-1847";
const CARD: &str = "4111 1111 1111 1111";

fn anonymizer() -> Anonymizer {
    Anonymizer::builder().build().unwrap()
}

/// Every text the model was sent, call after call.
fn sent(model: &ScriptedModel) -> Vec<String> {
    model
        .requests()
        .iter()
        .map(|r| {
            r.prompt
                .iter()
                .map(|m| serde_json::to_string(&m.content.parts).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn bi_98_the_model_sees_placeholders_and_the_client_the_values_delta_by_delta() {
    let model = ScriptedModel::new([Turn::deltas([
        "Card [CREDIT_",
        "CARD_1] and ",
        "[EMAIL_1]",
        " noted; [EMAIL_2] is not yours. [",
    ])]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let (chunks, result) = stream(
        &agent,
        &format!("My card is {CARD}, mail {EMAIL}, SSN {SSN}; again {EMAIL}."),
        GenerateOptions::new(),
    );
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        "My card is [CREDIT_CARD_1], mail [EMAIL_1], SSN [SSN_1]; again [EMAIL_1]."
    );
    let text: String = deltas(&chunks).concat();
    let expected = format!("Card {CARD} and {EMAIL} noted; [EMAIL_2] is not yours. [");
    assert_eq!(text, expected);
    // No delta carries a piece of a placeholder: each was held until it was whole.
    assert!(
        deltas(&chunks)
            .iter()
            .all(|d| !d.contains("[CREDIT_") && !d.contains("CARD_1]"))
    );
    assert_eq!(result.unwrap().text, expected);
}

#[test]
fn bi_98_a_tool_gets_the_values_and_its_result_reaches_the_model_anonymised() {
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    let lookup = tool(
        "lookup",
        "Looks a customer up.",
        json!({ "type": "object" }),
        move |args| {
            seen.lock().unwrap().push(args.clone());
            async move { Ok(json!({ "customer": "Jane", "ssn": SSN, "backup": "ops@example.org" })) }
        },
    );
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", "lookup", json!({ "email": "[EMAIL_1]" })),
        Turn::text("Found [SSN_1]; backup [EMAIL_2]."),
    ]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(lookup)
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let result = block_on(agent.generate(format!("Find {EMAIL}"))).unwrap();
    assert_eq!(got.lock().unwrap()[0], json!({ "email": EMAIL }));
    let calls = sent(&model);
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert!(
            !call.contains(EMAIL) && !call.contains(SSN) && !call.contains("ops@example.org"),
            "{call}"
        );
    }
    // The second call: the same placeholder for the same value, new ones for new values.
    assert!(
        calls[1].contains("[EMAIL_1]")
            && calls[1].contains("[SSN_1]")
            && calls[1].contains("[EMAIL_2]"),
        "{}",
        calls[1]
    );
    assert_eq!(result.text, format!("Found {SSN}; backup ops@example.org."));
    // The run's record of the call has the values, as the tool got them.
    assert_eq!(result.tool_calls[0].args, json!({ "email": EMAIL }));
}

#[test]
fn bi_98_memory_keeps_what_the_caller_sent_and_got_and_later_calls_see_it_anonymised() {
    let store = InMemoryStore::new();
    let model = ScriptedModel::new([Turn::text("Saved [EMAIL_1]."), Turn::text("Yes.")]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .memory(Memory::new(store.clone()))
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    block_on(agent.generate_with(format!("Remember {EMAIL}"), thread())).unwrap();
    let kept = saved(&store);
    assert_eq!(kept[0].text(), format!("Remember {EMAIL}"));
    assert_eq!(kept[1].text(), format!("Saved {EMAIL}."));
    // The next request: a vault of its own, the remembered turns anonymised again.
    block_on(agent.generate_with("Still there?", thread())).unwrap();
    let second = &sent(&model)[1];
    assert!(!second.contains(EMAIL), "{second}");
    assert!(
        second.contains("Remember [EMAIL_1]") && second.contains("Saved [EMAIL_1]."),
        "{second}"
    );
}

#[test]
fn bi_98_a_request_without_values_is_left_alone_and_placeholders_of_no_value_stay() {
    let model = ScriptedModel::new([Turn::deltas(["Write [EMAIL_1] ", "or [NAME_1]."])]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, "Hello there", GenerateOptions::new());
    assert_eq!(model.requests()[0].prompt[0].text(), "Hello there");
    assert_eq!(deltas(&chunks), ["Write [EMAIL_1] ", "or [NAME_1]."]);
    assert_eq!(result.unwrap().text, "Write [EMAIL_1] or [NAME_1].");
}

#[test]
fn bi_98_a_placeholder_the_user_wrote_is_never_given_to_a_value() {
    // The user writes `[EMAIL_1]` of themselves: the address gets `[EMAIL_2]`, and the model's
    // echo of both comes back with the address restored and the literal text as it was.
    let model = ScriptedModel::new([Turn::deltas(["Sent [EMAIL_2]", " the form [EMAIL_1]."])]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let input = format!("Fill in the form [EMAIL_1] for {EMAIL}");
    let (_chunks, result) = stream(&agent, &input, GenerateOptions::new());
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        "Fill in the form [EMAIL_1] for [EMAIL_2]"
    );
    assert_eq!(
        result.unwrap().text,
        format!("Sent {EMAIL} the form [EMAIL_1].")
    );
}

#[test]
fn bi_98_rules_of_ones_own_name_their_placeholders_and_presets_replace_the_defaults() {
    let only_tickets = Anonymizer::builder()
        .preset(Preset::Urls)
        .rule(Rule::new("ticket", r"TCK-[0-9]{4}"))
        .build()
        .unwrap();
    assert_eq!(
        only_tickets.rule_names().collect::<Vec<_>>(),
        ["url", "ticket"]
    );
    let model = ScriptedModel::new([Turn::text("About [TICKET_1] at [URL_1].")]);
    let agent = Agent::builder()
        .model(model.clone())
        .input(only_tickets.clone())
        .output(only_tickets)
        .build()
        .unwrap();
    let r = block_on(agent.generate(format!("TCK-1234 at https://example.com/t, from {EMAIL}")))
        .unwrap();
    assert_eq!(
        model.requests()[0].prompt[0].text(),
        format!("[TICKET_1] at [URL_1], from {EMAIL}")
    );
    assert_eq!(r.text, "About TCK-1234 at https://example.com/t.");
    let error = Anonymizer::builder()
        .without("no-such-rule")
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("no-such-rule"), "{error}");
}

#[test]
fn bi_98_a_model_with_processors_anonymizes_its_calls_and_restores_its_stream() {
    use futures::StreamExt;
    use processors_runtime::model::{LanguageModelExt, ModelRequest};
    let inner = ScriptedModel::new([Turn::deltas(["Hi [EM", "AIL_1]"])]);
    let a = anonymizer();
    let model = inner
        .clone()
        .with_processors()
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let request = ModelRequest {
        prompt: vec![Message::user(format!("I am {EMAIL}"))],
        ..Default::default()
    };
    let text = block_on(async {
        let mut stream = model.stream(request).await.unwrap();
        let mut text = String::new();
        while let Some(chunk) = stream.next().await {
            if let ChunkKind::TextDelta { text: t, .. } = chunk.unwrap() {
                text.push_str(&t);
            }
        }
        text
    });
    assert_eq!(inner.requests()[0].prompt[0].text(), "I am [EMAIL_1]");
    assert_eq!(text, format!("Hi {EMAIL}"));
}

#[test]
fn bi_98_a_cached_answer_is_replayed_only_for_the_same_values() {
    use processors_builtins::ResponseCache;
    use processors_builtins::response_cache::InMemoryCache;
    // The model echoes the placeholder: every prompt reads `Reply to [EMAIL_1]`.
    let model = ScriptedModel::cycle([Turn::text("Reply sent to [EMAIL_1].")]);
    let a = anonymizer();
    let cache = ResponseCache::new(InMemoryCache::new());
    let agent = Agent::builder()
        .model(model.clone())
        .input(a.clone())
        .input(cache.clone())
        .output(cache)
        .output(a)
        .build()
        .unwrap();
    let jane = block_on(agent.generate(format!("Reply to {EMAIL}"))).unwrap();
    assert_eq!(jane.text, format!("Reply sent to {EMAIL}."));
    // Another caller's prompt reads the same to the cache's eyes: not Jane's answer.
    let bob = block_on(agent.generate("Reply to bob@example.org")).unwrap();
    assert_eq!(bob.text, "Reply sent to bob@example.org.");
    assert_eq!(model.calls(), 2);
    // The same values again: from the cache.
    let again = block_on(agent.generate(format!("Reply to {EMAIL}"))).unwrap();
    assert_eq!(again.text, jane.text);
    assert_eq!(model.calls(), 2, "the third answer came from the cache");
}

#[test]
fn bi_98_a_value_the_model_ran_into_other_text_never_reaches_it_again() {
    // The first answer writes a digit right after the restored SSN: no rule matches
    // `536-22-18475`, but the vault's value inside it is replaced in the next call.
    let lookup = tool(
        "lookup",
        "Looks up.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("done")) },
    );
    let model = ScriptedModel::new([
        Turn::text("Noted [SSN_1]5.").tool_call("c1", "lookup", json!({})),
        Turn::text("ok"),
    ]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(lookup)
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    block_on(agent.generate(format!("My SSN is {SSN}"))).unwrap();
    let calls = sent(&model);
    assert_eq!(calls.len(), 2);
    assert!(!calls[1].contains(SSN), "{}", calls[1]);
    assert!(calls[1].contains("[SSN_1]5"), "{}", calls[1]);
}

/// A streamed tool call's argument deltas: a placeholder split across them comes out whole and
/// restored, as JSON (a value with a quote escaped), and nothing is held past the call; an
/// argument with no placeholder passes as it came.
#[test]
fn bi_98_streamed_tool_call_arguments_are_restored_delta_by_delta() {
    let quoted = "Big \"Tony\"";
    let delta = |text: &str| ChunkKind::ToolCallDelta {
        tool_call_id: "c1".into(),
        tool_name: "lookup".into(),
        args_text_delta: text.into(),
    };
    let model = ScriptedModel::new([
        Turn::empty()
            .chunk(delta("{\"email\": \"[EMA"))
            .chunk(delta("IL_1]\", \"cc\": \"[ALIAS_1]\", \"note\": \"[x] ["))
            .chunk(delta("EMAIL_"))
            .tool_call(
                "c1",
                "lookup",
                json!({ "email": "[EMAIL_1]", "cc": "[ALIAS_1]", "note": "[x] [EMAIL_" }),
            ),
        Turn::text("Done."),
    ]);
    let lookup = tool(
        "lookup",
        "Looks a customer up.",
        json!({ "type": "object" }),
        |_| async { Ok(json!("found")) },
    );
    let a = Anonymizer::builder()
        .preset(Preset::Pii)
        .rule(Rule::new("alias", r#"Big "[A-Z][a-z]+""#))
        .build()
        .unwrap();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(lookup)
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let (chunks, result) = stream(
        &agent,
        &format!("Find {EMAIL}, alias {quoted}"),
        GenerateOptions::new(),
    );
    result.unwrap();
    let pieces: Vec<String> = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::ToolCallDelta {
                tool_call_id,
                args_text_delta,
                ..
            } if tool_call_id == "c1" => Some(args_text_delta.clone()),
            _ => None,
        })
        .collect();
    let args = pieces.concat();
    let escaped = serde_json::to_string(quoted).unwrap();
    assert_eq!(
        args,
        format!("{{\"email\": \"{EMAIL}\", \"cc\": {escaped}, \"note\": \"[x] [EMAIL_")
    );
    assert!(
        pieces
            .iter()
            .all(|p| !p.contains("[EMA") || p.contains("[EMAIL_")),
        "{pieces:?}"
    );
    assert!(pieces.iter().all(|p| !p.starts_with("IL_1]")), "{pieces:?}");
    // The call itself, after its deltas, with the values.
    let call = chunks
        .iter()
        .position(|c| matches!(&c.kind, ChunkKind::ToolCall(_)))
        .unwrap();
    let last_delta = chunks
        .iter()
        .rposition(|c| matches!(&c.kind, ChunkKind::ToolCallDelta { .. }))
        .unwrap();
    assert!(last_delta < call);
}

/// Arguments held back for a call the step never completes go out before the step's end:
/// nothing is lost.
#[test]
fn bi_98_held_arguments_of_a_call_never_completed_go_out_before_the_step_ends() {
    let model = ScriptedModel::new([Turn::text("ok").chunk(ChunkKind::ToolCallDelta {
        tool_call_id: "c9".into(),
        tool_name: "lookup".into(),
        args_text_delta: "{\"a\": \"[EMAIL_1".into(),
    })]);
    let a = anonymizer();
    let agent = Agent::builder()
        .model(model)
        .input(a.clone())
        .output(a)
        .build()
        .unwrap();
    let (chunks, result) = stream(&agent, &format!("Find {EMAIL}"), GenerateOptions::new());
    result.unwrap();
    let step_end = chunks
        .iter()
        .position(|c| matches!(&c.kind, ChunkKind::StepFinish { .. }))
        .unwrap();
    let before_the_end: String = chunks[..step_end]
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::ToolCallDelta {
                tool_call_id,
                tool_name,
                args_text_delta,
            } if tool_call_id == "c9" && tool_name == "lookup" => Some(args_text_delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(before_the_end, "{\"a\": \"[EMAIL_1");
}
