//! Shadow: a processor whose decisions are recorded instead of applied (`docs/semantics.md`,
//! "Shadow", behaviours 98-106), on every dispatch path.

use crate::common;

use common::*;
use processors::prelude::*;
use processors::testing::Harness;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Every violation `on_violation` heard, in order.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<Violation>>>);

impl Heard {
    fn callback(&self) -> impl Fn(&Violation) + Send + Sync + 'static {
        let log = self.0.clone();
        move |v: &Violation| log.lock().unwrap().push(v.clone())
    }
    fn all(&self) -> Vec<Violation> {
        self.0.lock().unwrap().clone()
    }
}

fn actions(result: &GenerateResult) -> Vec<(Hook, ShadowAction)> {
    result.shadowed.iter().map(|d| (d.hook, d.action)).collect()
}

on_every_path!(
    b98_an_abort_in_shadow_is_recorded_and_the_run_goes_on,
    |path| {
        let model = ScriptedModel::new([Turn::text("A refund is on its way.")]);
        let guard = Probe::new("no-refunds").output_step(|a| match a.text.contains("refund") {
            true => Err(a
                .abort()
                .reason("refunds need a person")
                .metadata(json!({"score": 0.9}))
                .into()),
            false => Ok(OutputOutcome::Unchanged),
        });
        let heard = Heard::default();
        let agent = build_agent!(path, model: model, on_violation: heard.callback(), output: [shadow(guard)]);
        let result = generate(&*agent, "Money back?").await;

        assert_eq!(result.text, "A refund is on its way.");
        assert!(result.tripwire.is_none());
        assert_eq!(actions(&result), [(Hook::OutputStep, ShadowAction::Block)]);
        let decision = &result.shadowed[0];
        assert_eq!(decision.processor_id, "no-refunds");
        assert_eq!(
            decision.reason,
            "would have aborted the run: refunds need a person"
        );
        assert_eq!(decision.details["metadata"], json!({"score": 0.9}));
        let heard = heard.all();
        assert_eq!(heard.len(), 1);
        assert_eq!(heard[0].kind, ViolationKind::Shadow);
        assert_eq!(heard[0].reason, decision.reason);
        assert_eq!(heard[0].metadata.as_ref().unwrap()["action"], "block");
        assert_eq!(
            heard[0].metadata.as_ref().unwrap()["hook"],
            "process_output_step"
        );
    }
);

on_every_path!(b99_a_retry_in_shadow_calls_the_model_once, |path| {
    let model = ScriptedModel::new([Turn::text("Yes"), Turn::text("Yes, it is.")]);
    let guard = Probe::new("sentences")
        .output_step(|a| Err(a.abort().reason("answer in a sentence").retry(true).into()));
    let agent = build_agent!(path, model: model, max_processor_retries: 2, output: [shadow(guard)]);
    let result = generate(&*agent, "Open?").await;
    assert_eq!(result.text, "Yes");
    assert_eq!(model.calls(), 1);
    assert_eq!(actions(&result), [(Hook::OutputStep, ShadowAction::Retry)]);
    assert!(
        result.shadowed[0]
            .reason
            .starts_with("would have rejected the step for a retry")
    );
});

on_every_path!(b100_changes_to_messages_and_the_list_are_withheld, |path| {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let rewrite = Probe::new("rewrite").input(|a| {
        let mut m = a.messages[0].clone();
        m.set_text("[removed]");
        Ok(InputOutcome::Messages(vec![m]))
    });
    let noting = Probe::new("noting").input_step(|a| {
        a.message_list
            .add_system(Message::system("Be terse."), Some("noting"));
        Ok(StepOverrides::default())
    });
    let same = Probe::new("same").input(|a| Ok(InputOutcome::Messages(a.messages.clone())));
    let agent =
        build_agent!(path, model: model, input: [shadow(rewrite), shadow(noting), shadow(same)]);
    let result = generate(&*agent, "my card is 4111").await;

    let prompt = &model.requests()[0].prompt;
    assert_eq!(texts_of(prompt, Role::User), ["my card is 4111"]);
    assert_eq!(texts_of(prompt, Role::System), ["You are a test."]);
    assert_eq!(
        actions(&result),
        [
            (Hook::Input, ShadowAction::Change),
            (Hook::InputStep, ShadowAction::Change)
        ],
        "returning the messages unchanged is no decision"
    );
    assert_eq!(result.shadowed[0].reason, "would have changed the input");
    let would_have: Vec<Message> =
        serde_json::from_value(result.shadowed[0].details["messages"].clone()).unwrap();
    assert_eq!(would_have[0].text(), "[removed]");
    assert_eq!(
        result.shadowed[1].reason,
        "would have edited the message list"
    );
});

on_every_path!(
    b101_a_stream_in_shadow_reaches_the_client_as_the_model_sent_it,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["my key ", "is sk-1", "23 ok"])]);
        let mask = Probe::new("mask").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(t) if t.contains("sk-") => {
                    a.chunk.clone().map_text(|_| "[key]".to_owned()).into()
                }
                _ => StreamAction::Pass,
            })
        });
        // Holds every delta and lets them out at once at the step's end: the same text.
        let batch = Probe::new("batch").stream(|a| {
            let held = a.state.as_array().cloned().unwrap_or_default();
            if let Some(t) = a.chunk.text_delta() {
                let mut held = held;
                held.push(json!(t));
                *a.state = Value::Array(held);
                return Ok(StreamAction::Drop);
            }
            if !matches!(a.chunk.kind, ChunkKind::TextEnd { .. }) || held.is_empty() {
                return Ok(StreamAction::Pass);
            }
            let text: String = held.iter().filter_map(Value::as_str).collect();
            *a.state = Value::Null;
            let ChunkKind::TextEnd { id } = &a.chunk.kind else {
                unreachable!()
            };
            let delta = Chunk {
                kind: ChunkKind::TextDelta {
                    id: id.clone(),
                    text,
                },
                ..a.chunk.clone()
            };
            Ok(StreamAction::Many(vec![delta, a.chunk.clone()]))
        });
        let agent = build_agent!(path, model: model, output: [shadow(mask), shadow(batch)]);
        let (chunks, result) = collect(&*agent, "hi", GenerateOptions::default()).await;
        let result = result.unwrap();

        assert_eq!(deltas(&chunks), ["my key ", "is sk-1", "23 ok"]);
        assert_eq!(result.text, "my key is sk-123 ok");
        assert_eq!(
            actions(&result),
            [
                (Hook::OutputStream, ShadowAction::Change),
                (Hook::OutputStream, ShadowAction::Change)
            ],
            "one decision per processor per step"
        );
        let mask = &result.shadowed[0];
        assert_eq!(mask.processor_id, "mask");
        assert_eq!(
            mask.reason,
            r#"would have streamed "[key]23 ok" instead of "is sk-123 ok""#
        );
        assert_eq!(mask.details["replaced"], 1);
        let batch = &result.shadowed[1];
        assert_eq!(
            batch.reason,
            "would have changed 4 of the stream's chunks, its text the same"
        );
        assert_eq!(batch.details["dropped"], 3);
    }
);

on_every_path!(
    b102_an_abort_in_a_shadowed_stream_is_recorded_once_per_step,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["bad ", "worse ", "worst"])]);
        let seen = Log::new();
        let stop = {
            let seen = seen.clone();
            Probe::new("stop").stream(move |a| match a.chunk.text_delta() {
                Some(t) => {
                    seen.push(t);
                    Err(a.abort().reason(format!("saw {t:?}")).into())
                }
                None => Ok(StreamAction::Pass),
            })
        };
        let agent = build_agent!(path, model: model, output: [shadow(stop)]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.text, "bad worse worst");
        assert_eq!(
            seen.entries(),
            ["bad ", "worse ", "worst"],
            "it sees every chunk"
        );
        assert_eq!(
            actions(&result),
            [(Hook::OutputStream, ShadowAction::Block)]
        );
        assert_eq!(
            result.shadowed[0].reason,
            r#"would have aborted the run: saw "bad ""#
        );
    }
);

on_every_path!(
    b103_a_failure_or_a_panic_in_shadow_does_not_fail_the_run,
    |path| {
        let model = ScriptedModel::new([Turn::text("fine")]);
        let failing =
            Probe::new("failing").input(|_| Err(ProcessorError::msg("judge unreachable")));
        let panicking = Probe::new("panicking").output_result(|_| panic!("a bug"));
        let agent =
            build_agent!(path, model: model, input: [shadow(failing)], output: [shadow(panicking)]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.text, "fine");
        assert_eq!(
            actions(&result),
            [
                (Hook::Input, ShadowAction::Fail),
                (Hook::OutputResult, ShadowAction::Fail)
            ]
        );
        assert_eq!(
            result.shadowed[0].reason,
            "would have failed the run: judge unreachable"
        );
        assert_eq!(
            result.shadowed[1].reason,
            "would have failed the run: it panicked: a bug"
        );
    }
);

on_every_path!(
    b104_tool_decisions_in_shadow_let_the_tool_run_as_called,
    |path| {
        let model = ScriptedModel::new([
            Turn::empty().tool_call("c1", "delete", json!({"all": true})),
            Turn::text("Deleted."),
        ]);
        let refuse =
            Probe::new("refuse").tool_call(|_| Ok(ToolCallAction::Refuse("not allowed".into())));
        let strip =
            Probe::new("strip").tool_result(|_| Ok(ToolResultAction::Replace(json!("stripped"))));
        let agent = build_agent!(path, model: model, tools: [echo_tool("delete")], output: [shadow(refuse), shadow(strip)]);
        let result = generate(&*agent, "delete all").await;
        assert_eq!(
            result.tool_results[0].result,
            json!({"ok": true, "echo": {"all": true}})
        );
        assert!(!result.tool_results[0].is_error);
        assert_eq!(
            actions(&result),
            [
                (Hook::ToolCall, ShadowAction::Block),
                (Hook::ToolResult, ShadowAction::Change)
            ]
        );
        assert_eq!(
            result.shadowed[0].reason,
            "would have refused `delete`: not allowed"
        );
        assert_eq!(result.shadowed[0].details["toolCallId"], "c1");
        assert_eq!(
            result.shadowed[1].reason,
            "would have replaced the result of `delete`"
        );
    }
);

on_every_path!(
    b105_a_shadowed_processor_keeps_its_state_context_and_usage,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["a", "b", "c"])]);
        let counter = Probe::new("counter")
            .stream(|a| {
                if a.chunk.text_delta().is_some() {
                    *a.state = json!(a.state.as_u64().unwrap_or(0) + 1);
                }
                Ok(StreamAction::Drop)
            })
            .output_result(|a| {
                let usage = Usage {
                    total_tokens: 7,
                    ..Usage::default()
                };
                a.request_context.record_usage("counter", usage);
                a.request_context.insert(format!("counted {}", a.state));
                Ok(OutputOutcome::Unchanged)
            });
        let seen = Log::new();
        let reader = {
            let seen = seen.clone();
            Probe::new("reader").output_result(move |a| {
                seen.push(
                    a.request_context
                        .get::<String>()
                        .cloned()
                        .unwrap_or_default(),
                );
                Ok(OutputOutcome::Unchanged)
            })
        };
        let agent = build_agent!(path, model: model, output: [shadow(counter), reader]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.text, "abc");
        assert_eq!(seen.entries(), ["counted 3"]);
        assert_eq!(result.processor_usage["counter"].total_tokens, 7);
    }
);

on_every_path!(
    b106_a_warning_in_shadow_is_a_warning_and_no_decision,
    |path| {
        let model = ScriptedModel::new([Turn::text("ok")]);
        let warn = Probe::new("warn").output_step(|a| Err(a.abort().reason("unsure").warn()));
        let heard = Heard::default();
        let agent = build_agent!(path, model: model, on_violation: heard.callback(), output: [shadow(warn)]);
        let result = generate(&*agent, "hi").await;
        assert!(result.shadowed.is_empty());
        let heard = heard.all();
        assert_eq!(
            (heard.len(), heard[0].kind, heard[0].reason.as_str()),
            (1, ViolationKind::Warn, "unsure")
        );
    }
);

#[tokio::test]
async fn answering_in_the_models_place_or_retrying_an_error_in_shadow_is_recorded() {
    let model = ScriptedModel::new([Turn::error(ApiError::new(400, "too long"))]);
    let canned = Probe::new("canned").llm_request(|_| {
        Ok(LlmRequestAction::Respond(LlmResponse {
            chunks: vec![
                ChunkKind::TextDelta {
                    id: "t".into(),
                    text: "cached".into(),
                },
                ChunkKind::Finish {
                    finish_reason: FinishReason::Stop,
                    usage: Usage::default(),
                },
            ],
        }))
    });
    let retry = Probe::new("retry").api_error(|a| {
        a.message_list
            .add_system(Message::system("Be brief."), Some("retry"));
        Ok(ApiErrorAction::Retry)
    });
    let heard = Heard::default();
    let agent = Agent::builder()
        .model(model.clone())
        .input(shadow(canned))
        .error(shadow(retry))
        .on_violation(heard.callback())
        .build()
        .unwrap();
    let error = agent.generate("hi").await.unwrap_err();
    assert!(
        matches!(error, AgentError::Api(e) if e.status == Some(400)),
        "the model was called, the error not retried"
    );
    assert_eq!(model.calls(), 1);
    let reasons: Vec<String> = heard.all().into_iter().map(|v| v.reason).collect();
    assert_eq!(
        reasons,
        [
            r#"would have answered in the model's place: "cached""#.to_owned(),
            format!(
                "would have called the model again after: {}",
                ApiError::new(400, "too long")
            ),
        ]
    );
}

#[tokio::test]
async fn a_harness_reports_what_a_shadowed_processor_would_do() {
    let guard = Probe::new("guard").input(|a| Err(a.abort().reason("no").into()));
    let mut h = Harness::new(shadow(guard));
    let report = h.input("hello").await.unwrap();
    assert!(report.tripwire.is_none());
    assert_eq!(report.texts(), ["hello"]);
    assert_eq!(report.warnings.len(), 1);
    assert_eq!(report.warnings[0].kind, ViolationKind::Shadow);
    assert_eq!(report.warnings[0].reason, "would have aborted the run: no");
}

#[tokio::test]
async fn a_processor_out_of_shadow_applies_what_it_decides() {
    let guard = Probe::new("guard").input(|a| Err(a.abort().reason("no").into()));
    let enforced = shadow(guard).into_inner();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .input(enforced)
        .build()
        .unwrap();
    let result = agent.generate("hi").await.unwrap();
    assert_eq!(result.tripwire.unwrap().reason, "no");
    assert!(result.shadowed.is_empty());
}

on_every_path!(
    b101_a_shadowed_streams_step_cut_short_by_a_trip_wire_is_still_recorded,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["my key ", "is sk-1"])]);
        let mask = Probe::new("mask").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(t) if t.contains("sk-") => {
                    a.chunk.clone().map_text(|_| "[key]".to_owned()).into()
                }
                _ => StreamAction::Pass,
            })
        });
        let guard = Probe::new("guard").output_step(|a| Err(a.abort().reason("no keys").into()));
        let agent = build_agent!(path, model: model, output: [shadow(mask), guard]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.tripwire.as_ref().unwrap().reason, "no keys");
        assert_eq!(
            actions(&result),
            [(Hook::OutputStream, ShadowAction::Change)]
        );
        assert_eq!(
            result.shadowed[0].reason,
            r#"would have streamed "[key]" instead of "is sk-1" (the run ended before the step's stream did)"#
        );
    }
);

on_every_path!(b101_text_held_to_the_runs_finish_is_one_decision, |path| {
    let model = ScriptedModel::new([Turn::deltas(["a", "b", "c"])]);
    let hold = Probe::new("hold").stream(|a| {
        if let Some(t) = a.chunk.text_delta() {
            *a.state = json!(format!("{}{t}", a.state.as_str().unwrap_or_default()));
            return Ok(StreamAction::Drop);
        }
        if !matches!(a.chunk.kind, ChunkKind::Finish { .. }) {
            return Ok(StreamAction::Pass);
        }
        let text = a.state.as_str().unwrap_or_default().to_owned();
        let delta = Chunk {
            kind: ChunkKind::TextDelta {
                id: "t".into(),
                text,
            },
            ..a.chunk.clone()
        };
        Ok(StreamAction::Many(vec![delta, a.chunk.clone()]))
    });
    let agent = build_agent!(path, model: model, output: [shadow(hold)]);
    let result = generate(&*agent, "hi").await;
    assert_eq!(result.text, "abc");
    assert_eq!(
        actions(&result),
        [(Hook::OutputStream, ShadowAction::Change)]
    );
    assert_eq!(
        result.shadowed[0].reason,
        "would have changed 4 of the stream's chunks, its text the same"
    );
});

on_every_path!(
    b102_a_stream_failure_passes_the_chunk_on_and_a_stream_retry_is_an_abort,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["one ", "two ", "three"])]);
        let flaky = Probe::new("flaky").stream(|a| match a.chunk.text_delta() {
            Some("one ") => Err(ProcessorError::msg("judge down")),
            Some("two ") => Ok(a.chunk.clone().map_text(|_| "2 ".to_owned()).into()),
            _ => Ok(StreamAction::Pass),
        });
        let retrying = Probe::new("retrying").stream(|a| match a.chunk.text_delta() {
            Some("three") => Err(a.abort().reason("bad ending").retry(true).into()),
            _ => Ok(StreamAction::Pass),
        });
        let heard = Heard::default();
        let agent = build_agent!(path, model: model, max_processor_retries: 2, on_violation: heard.callback(), output: [shadow(flaky), shadow(retrying)]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.text, "one two three");
        assert_eq!(
            actions(&result),
            [
                (Hook::OutputStream, ShadowAction::Block),
                (Hook::OutputStream, ShadowAction::Change)
            ]
        );
        assert_eq!(
            result.shadowed[0].reason,
            "would have aborted the run: bad ending"
        );
        assert_eq!(
            result.shadowed[1].reason, r#"would have streamed "2 three" instead of "two three""#,
            "the failure passed its chunk on and the change after it counts"
        );
    }
);

on_every_path!(
    b106_a_warning_after_a_shadowed_abort_is_still_reported,
    |path| {
        let model = ScriptedModel::new([Turn::deltas(["a", "b"])]);
        let noisy = Probe::new("noisy").stream(|a| match a.chunk.text_delta() {
            Some("a") => Err(a.abort().reason("stop").into()),
            Some("b") => Err(a.abort().reason("unsure about b").warn()),
            _ => Ok(StreamAction::Pass),
        });
        let heard = Heard::default();
        let agent = build_agent!(path, model: model, on_violation: heard.callback(), output: [shadow(noisy)]);
        let result = generate(&*agent, "hi").await;
        assert_eq!(result.text, "ab");
        let kinds: Vec<(ViolationKind, String)> = heard
            .all()
            .into_iter()
            .map(|v| (v.kind, v.reason))
            .collect();
        assert!(
            kinds.contains(&(ViolationKind::Warn, "unsure about b".to_owned())),
            "{kinds:?}"
        );
        assert!(kinds.contains(&(
            ViolationKind::Shadow,
            "would have aborted the run: stop".to_owned()
        )));
    }
);

#[tokio::test]
async fn b100_step_settings_equal_to_the_steps_are_no_decision() {
    let model = ScriptedModel::new([Turn::text("ok")]);
    let same = Probe::new("same").input_step(|a| {
        Ok(StepOverrides::new()
            .tool_choice(a.config.tool_choice.clone())
            .model_settings(a.config.model_settings.clone())
            .provider_options(a.config.provider_options.clone())
            .model(a.config.model.clone()))
    });
    let other =
        Probe::new("other").input_step(|_| Ok(StepOverrides::new().tool_choice(ToolChoice::None)));
    let agent = Agent::builder()
        .model(model)
        .input(shadow(same))
        .input(shadow(other))
        .build()
        .unwrap();
    let result = agent.generate("hi").await.unwrap();
    let reasons: Vec<&str> = result.shadowed.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(reasons, ["would have set the step's tool_choice"]);
}

#[test]
fn memory_cannot_run_in_shadow() {
    let memory = Memory::new(InMemoryStore::new());
    let error = Agent::builder()
        .model(ScriptedModel::new([]))
        .memory(memory.clone())
        .output(shadow(memory))
        .build()
        .err()
        .unwrap();
    assert_eq!(
        error.to_string(),
        "memory is in shadow in the output list: memory loads and saves the conversation, which is not a decision to record; put `memory` there as it is"
    );
}

#[tokio::test]
async fn a_processor_and_its_shadow_need_two_ids() {
    let guard = || Probe::new("guard").output_step(|a| Err(a.abort().reason("no").into()));
    let same = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .output(guard())
        .output(shadow(guard()))
        .build();
    let error = match same {
        Err(e) => e.to_string(),
        Ok(agent) => agent.generate("hi").await.unwrap_err().to_string(),
    };
    assert_eq!(
        error,
        "processors share the id `guard` but not a state type (`serde_json::value::Value` and `processors_runtime::shadow::ShadowState<serde_json::value::Value>`); give one of them another id"
    );
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .output(shadow(guard()).with_id("guard-candidate"))
        .build()
        .unwrap();
    let result = agent.generate("hi").await.unwrap();
    assert_eq!(result.shadowed[0].processor_id, "guard-candidate");
}
