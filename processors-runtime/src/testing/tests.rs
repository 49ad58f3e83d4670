//! The harness's behaviours: each hook as an agent runs it, through the runtime's dispatcher
//! and stream chain.

use super::{Answer, Harness};
use crate::model::ModelRequest;
use crate::prelude::*;
use crate::processor::HookError;
use crate::processor::boxed;
use futures::executor::block_on;
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args,
    }
}

fn delta(text: &str) -> ChunkKind {
    ChunkKind::TextDelta {
        id: "t".into(),
        text: text.into(),
    }
}

/// Holds every text delta back until the step's `step-finish`, then lets it all go before it.
fn hold_to_step_finish() -> impl Processor<State = String> {
    output_stream_fn("hold", |a: &mut OutputStreamArgs<'_, String>| {
        match &a.chunk.kind {
            ChunkKind::TextDelta { text, .. } => {
                a.state.push_str(text);
                StreamAction::Drop
            }
            ChunkKind::StepFinish { .. } if !a.state.is_empty() => {
                let held = std::mem::take(a.state);
                let run = a.chunk.run_id.clone();
                StreamAction::Many(vec![Chunk::new(run, delta(&held)), a.chunk.clone()])
            }
            _ => StreamAction::Pass,
        }
    })
}

#[test]
fn returned_input_messages_are_reconciled_by_id_with_the_list() {
    block_on(async {
        let keep_first = input_fn("keep-first", |a: &mut InputArgs<'_, ()>| {
            let mut first = a.messages[0].clone();
            first.set_text("first, edited");
            vec![first, Message::user("added")]
        });
        let mut h = Harness::new(keep_first);
        let first = Message::user("first");
        let first_id = first.id.clone();
        let report = h.input(vec![first, Message::user("second")]).await.unwrap();
        // The first replaced in place, the second (missing) removed, the new one appended.
        assert_eq!(report.texts(), ["first, edited", "added"]);
        assert_eq!(report.messages[0].id, first_id);
        assert_eq!(h.list().input().count(), 2);
    });
}

#[test]
fn a_returned_system_set_replaces_the_untagged_system_messages() {
    block_on(async {
        let rewrite = input_fn("rewrite", |a: &mut InputArgs<'_, ()>| {
            InputOutcome::MessagesAndSystem {
                messages: a.messages.clone(),
                system: vec![Message::system("Be terse.")],
            }
        });
        let mut h = Harness::new(rewrite).with_system("Be kind.");
        let report = h.input("hi").await.unwrap();
        assert_eq!(report.system_texts(), ["Be terse."]);
        assert_eq!(report.texts(), ["hi"]);
    });
}

#[test]
fn text_held_back_to_the_step_finish_comes_out_and_is_reported_as_released() {
    block_on(async {
        let mut h = Harness::new(hold_to_step_finish());
        let report = h.output_stream(["Hel", "lo"]).await.unwrap();
        assert_eq!(report.text(), "Hello");
        assert_eq!(report.outcome.released, "Hello");
        // The held text comes out just before the step-finish that let it go.
        let types = report.outcome.types();
        let at = types.iter().position(|t| t == "step-finish").unwrap();
        assert_eq!(types[at - 1], "text-delta");
        assert_eq!(
            types,
            [
                "start",
                "step-start",
                "text-start",
                "text-end",
                "text-delta",
                "step-finish",
                "finish"
            ]
        );
    });
}

#[test]
fn text_held_back_to_the_runs_finish_comes_out_too() {
    block_on(async {
        let hold = output_stream_fn("hold", |a: &mut OutputStreamArgs<'_, String>| {
            match &a.chunk.kind {
                ChunkKind::TextDelta { text, .. } => {
                    a.state.push_str(text);
                    StreamAction::Drop
                }
                ChunkKind::Finish { .. } => {
                    let held = delta(&std::mem::take(a.state));
                    let run = a.chunk.run_id.clone();
                    StreamAction::Many(vec![Chunk::new(run, held), a.chunk.clone()])
                }
                _ => StreamAction::Pass,
            }
        });
        let report = Harness::new(hold).output_stream(["a", "b"]).await.unwrap();
        assert_eq!(report.text(), "ab");
        assert_eq!(report.outcome.released, "ab");
        assert_eq!(
            report.outcome.finish_reasons(),
            [FinishReason::Stop, FinishReason::Stop]
        );
    });
}

#[test]
fn text_that_streams_at_once_is_not_released_text() {
    block_on(async {
        let pass = output_stream_fn("pass", |_: &mut OutputStreamArgs<'_, ()>| {
            StreamAction::Pass
        });
        let report = Harness::new(pass).output_stream(["a", "b"]).await.unwrap();
        assert_eq!(report.deltas(), ["a", "b"]);
        assert_eq!(report.outcome.released, "");
    });
}

#[test]
fn the_models_finish_ends_the_step_and_a_tool_steps_finish_passes_the_chain_by() {
    block_on(async {
        let seen = output_stream_fn("seen", |a: &mut OutputStreamArgs<'_, Vec<String>>| {
            a.state.push(a.chunk.kind.type_name().into_owned());
        });
        let mut h = Harness::new(seen);
        let chunks = [
            ChunkKind::ToolCall(call("c1", "search", json!({}))),
            ChunkKind::Finish {
                finish_reason: FinishReason::ToolCalls,
                usage: Usage::new(3, 4),
            },
        ];
        let report = h.output_stream_chunks(chunks).await.unwrap();
        assert_eq!(
            report.outcome.finish_reasons(),
            [FinishReason::ToolCalls, FinishReason::ToolCalls]
        );
        assert!(matches!(
            report.chunks()[3].kind,
            ChunkKind::StepFinish {
                is_continued: true,
                usage,
                ..
            } if usage.output_tokens == 4
        ));
        // The step's end went through the chain; the run's finish with `tool-calls` did not.
        assert_eq!(
            *h.state(),
            ["start", "step-start", "tool-call", "step-finish"]
        );
    });
}

#[test]
fn raw_chunks_are_sent_alone_and_the_start_only_once() {
    block_on(async {
        let seen = output_stream_fn("seen", |a: &mut OutputStreamArgs<'_, Vec<String>>| {
            a.state.push(a.chunk.kind.type_name().into_owned());
        });
        let mut h = Harness::new(seen);
        let report = h.output_stream_raw([delta("x")]).await.unwrap();
        assert_eq!(report.outcome.types(), ["text-delta"]);
        h.output_stream(["y"]).await.unwrap();
        h.output_stream(["z"]).await.unwrap();
        let starts = h.state().iter().filter(|t| *t == "start").count();
        assert_eq!(starts, 1);
    });
}

#[test]
fn the_state_carries_across_the_calls_of_one_harness_and_not_to_another() {
    block_on(async {
        let count = output_stream_fn("count", |a: &mut OutputStreamArgs<'_, usize>| {
            if a.chunk.text_delta().is_some() {
                *a.state += 1;
            }
        });
        let mut h = Harness::new(count);
        h.output_stream(["a", "b"]).await.unwrap();
        h.output_stream(["c"]).await.unwrap();
        assert_eq!(*h.state(), 3);
        *h.state_mut() = 10;
        h.output_stream(["d"]).await.unwrap();
        assert_eq!(*h.state(), 11);
        let count = output_stream_fn("count", |a: &mut OutputStreamArgs<'_, usize>| {
            *a.state += 1;
        });
        assert_eq!(*Harness::new(count).state(), 0);
    });
}

#[test]
fn more_chunks_than_a_batch_all_come_out_on_any_executor() {
    // More than the outbox hands over before the run waits for its consumer.
    let deltas: Vec<String> = (0..200).map(|i| format!("{i} ")).collect();
    let pass = output_stream_fn("pass", |_: &mut OutputStreamArgs<'_, ()>| {
        StreamAction::Pass
    });
    let mut h = Harness::new(pass);
    let report = block_on(h.output_stream(deltas.clone())).unwrap();
    assert_eq!(report.text(), deltas.concat());
    assert_eq!(report.chunks().len(), 200 + 6);
}

/// Ready at its second poll, having woken its task at the first: a hook that really waits.
struct WaitOnce(bool);

impl Future for WaitOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Upper-cases text after waiting, and keeps its stream history (the number of chunks it had
/// received at each delta, in its state).
struct SlowUpper;

impl Processor for SlowUpper {
    type State = Vec<usize>;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    fn id(&self) -> &str {
        "slow-upper"
    }
    fn keeps_stream_history(&self) -> bool {
        true
    }
    async fn process_output_stream(
        &self,
        args: OutputStreamArgs<'_, Vec<usize>>,
    ) -> Result<StreamAction, ProcessorError> {
        WaitOnce(false).await;
        if args.chunk.text_delta().is_some() {
            args.state.push(args.stream_history.len());
        }
        Ok(args.chunk.clone().map_text(|t| t.to_uppercase()).into())
    }
}

#[test]
fn a_stream_hook_that_waits_is_awaited() {
    let mut h = Harness::new(SlowUpper);
    let report = block_on(h.output_stream(["a", "b"])).unwrap();
    assert_eq!(report.deltas(), ["A", "B"]);
}

#[test]
fn the_stream_history_carries_across_the_stream_calls_of_one_harness() {
    block_on(async {
        let mut h = Harness::new(SlowUpper);
        h.output_stream(["a"]).await.unwrap();
        h.output_stream(["b"]).await.unwrap();
        // start, step-start, text-start, a; then text-end, step-finish, finish, step-start,
        // text-start, b: one history across the calls, as across a run's steps.
        assert_eq!(*h.state(), [4, 10]);
    });
}

/// Counts the data chunks it gets, and writes one on each text delta.
struct DataCounter;

impl Processor for DataCounter {
    type State = usize;
    const HOOKS: Hooks = Hooks::OUTPUT_STREAM;
    fn id(&self) -> &str {
        "data-counter"
    }
    fn process_data_parts(&self) -> bool {
        true
    }
    async fn process_output_stream(
        &self,
        mut args: OutputStreamArgs<'_, usize>,
    ) -> Result<StreamAction, ProcessorError> {
        if args.chunk.is_data() {
            *args.state += 1;
        }
        if args.chunk.text_delta().is_some() {
            args.writer.write("progress", json!(1));
        }
        Ok(StreamAction::Pass)
    }
}

#[test]
fn data_chunks_reach_a_processor_that_opts_in_and_what_it_writes_comes_out_after_its_chunk() {
    block_on(async {
        let mut h = Harness::new(DataCounter);
        let data = ChunkKind::Data {
            name: "source".into(),
            data: json!("a"),
            transient: false,
        };
        let report = h.output_stream_chunks([data, delta("x")]).await.unwrap();
        let types = report.outcome.types();
        let x = types.iter().position(|t| t == "text-delta").unwrap();
        assert_eq!(types[x + 1], "data-progress");
        // It saw the model's data chunk, not the one it wrote (that starts after it).
        assert_eq!(*h.state(), 1);
        // A processor that does not opt in never sees one.
        let seen = output_stream_fn("seen", |a: &mut OutputStreamArgs<'_, usize>| {
            *a.state += usize::from(a.chunk.is_data());
        });
        let mut h = Harness::new(seen);
        let data = ChunkKind::Data {
            name: "source".into(),
            data: json!("a"),
            transient: false,
        };
        let report = h.output_stream_chunks([data]).await.unwrap();
        assert!(report.outcome.types().contains(&"data-source".to_owned()));
        assert_eq!(*h.state(), 0);
    });
}

#[test]
fn a_stream_abort_stops_the_stream_with_its_trip_wire() {
    block_on(async {
        let stop = output_stream_fn("no-b", |a: &mut OutputStreamArgs<'_, ()>| {
            match a.chunk.text_delta() {
                Some("b") => Err(a.abort().reason("no b").metadata(json!({ "at": "b" }))),
                _ => Ok(StreamAction::Pass),
            }
        });
        let report = Harness::new(stop)
            .output_stream(["a", "b", "c"])
            .await
            .unwrap();
        assert_eq!(report.deltas(), ["a"]);
        let tw = report.tripwire.expect("aborted");
        assert_eq!(tw.reason, "no b");
        assert_eq!(tw.processor_id, "no-b");
        assert_eq!(tw.metadata, Some(json!({ "at": "b" })));
        assert!(!tw.retry);
        assert!(!report.outcome.types().contains(&"finish".to_owned()));
    });
}

#[test]
fn a_stream_warning_is_reported_and_the_chunk_passes() {
    block_on(async {
        let warn = output_stream_fn("warn-b", |a: &mut OutputStreamArgs<'_, ()>| {
            match a.chunk.text_delta() {
                Some("b") => Err(a.abort().reason("a b").warn()),
                _ => Ok(StreamAction::Pass),
            }
        });
        let report = Harness::new(warn).output_stream(["a", "b"]).await.unwrap();
        assert_eq!(report.text(), "ab");
        assert_eq!(report.warning_reasons(), ["a b"]);
        assert_eq!(report.warnings[0].kind, ViolationKind::Warn);
        assert_eq!(report.warnings[0].processor_id, "warn-b");
    });
}

#[test]
fn a_stream_hook_that_fails_passes_its_chunk_on_as_in_an_agent() {
    block_on(async {
        let fail = output_stream_fn("fail", |a: &mut OutputStreamArgs<'_, ()>| {
            match a.chunk.text_delta() {
                Some(_) => Err(ProcessorError::Failed("broken".into())),
                None => Ok(StreamAction::Pass),
            }
        });
        let report = Harness::new(fail).output_stream(["a"]).await.unwrap();
        assert_eq!(report.text(), "a");
        assert!(report.tripwire.is_none());
    });
}

#[test]
fn a_panic_in_a_stream_hook_is_the_calls_error_with_its_message() {
    let boom = output_stream_fn("boom", |a: &mut OutputStreamArgs<'_, ()>| {
        if a.chunk.text_delta() == Some("b") {
            panic!("boom at b");
        }
    });
    match block_on(Harness::new(boom).output_stream(["a", "b"])) {
        Err(HookError::Panicked { id, hook, message }) => {
            assert_eq!(id, "boom");
            assert_eq!(hook, Hook::OutputStream);
            assert_eq!(message, "boom at b");
        }
        other => panic!("expected the panic, got {other:?}"),
    }
}

#[test]
fn a_panic_in_a_hook_is_the_calls_error_and_the_harness_goes_on() {
    block_on(async {
        let boom = input_fn("boom", |a: &mut InputArgs<'_, u32>| {
            *a.state += 1;
            if *a.state == 1 {
                panic!("first input");
            }
        });
        let mut h = Harness::new(boom);
        let err = h.input("one").await.unwrap_err();
        assert!(matches!(&err, HookError::Panicked { message, .. } if message == "first input"));
        assert_eq!(
            err.to_string(),
            "processor `boom` panicked in process_input: first input; the run was stopped and nothing was saved"
        );
        assert!(h.input("two").await.unwrap().tripwire.is_none());
    });
}

#[test]
fn a_failure_is_the_calls_error_naming_the_processor_and_the_hook() {
    block_on(async {
        let fail = tool_call_fn("fail", |_: &mut ToolCallArgs<'_, ()>| {
            Err::<ToolCallAction, _>(ProcessorError::Failed("no network".into()))
        });
        let err = Harness::new(fail)
            .tool_call(call("c1", "search", json!({})))
            .await
            .unwrap_err();
        match err {
            HookError::Failed { id, hook, source } => {
                assert_eq!((id.as_str(), hook), ("fail", Hook::ToolCall));
                assert_eq!(source.to_string(), "no network");
            }
            other => panic!("expected the failure, got {other:?}"),
        }
    });
}

#[test]
fn an_input_warning_is_reported_and_the_input_is_kept() {
    block_on(async {
        let warn = input_fn("warn", |a: &mut InputArgs<'_, ()>| {
            Err::<(), _>(a.abort().reason("suspicious").warn())
        });
        let mut h = Harness::new(warn);
        let report = h.input("hi").await.unwrap();
        assert_eq!(report.texts(), ["hi"]);
        assert_eq!(report.warning_reasons(), ["suspicious"]);
        // Reported once: the next call's report starts empty.
        h.add_input("again");
        assert!(h.llm_request().await.unwrap().warnings.is_empty());
    });
}

#[test]
fn a_warning_given_through_the_request_context_is_reported_with_the_result() {
    block_on(async {
        let tidy = output_result_fn("tidy", |a: &mut OutputResultArgs<'_, ()>| {
            let warning = a.abort().reason("not checked").warn();
            if let ProcessorError::Warning(w) = warning {
                a.request_context.report_warning(w.into_tripwire("tidy"));
            }
        });
        let mut h = Harness::new(tidy);
        h.add_answer("done");
        let report = h.output_result().await.unwrap();
        assert_eq!(report.warning_reasons(), ["not checked"]);
    });
}

#[test]
fn an_abort_is_a_trip_wire_with_its_reason_retry_metadata_and_processor() {
    block_on(async {
        let guard = output_step_fn("guard", |a: &mut OutputStepArgs<'_, ()>| {
            Err::<(), _>(
                a.abort()
                    .reason("again")
                    .retry(true)
                    .metadata(json!({ "n": 1 })),
            )
        });
        let mut h = Harness::new(guard);
        let report = h.output_step("answer").await.unwrap();
        let tw = report.tripwire.expect("aborted");
        assert_eq!(tw.reason, "again");
        assert!(tw.retry);
        assert_eq!(tw.metadata, Some(json!({ "n": 1 })));
        assert_eq!(tw.processor_id, "guard");
        // A rejected step is not recorded.
        assert!(h.steps().is_empty());
        // Without a reason, the runtime's own.
        let bare = input_fn("bare", |a: &mut InputArgs<'_, ()>| Err::<(), _>(a.abort()));
        let tw = Harness::new(bare).input("hi").await.unwrap().tripwire;
        assert_eq!(tw.unwrap().reason, "Tripwire triggered by bare");
    });
}

#[test]
fn input_step_reports_the_settings_after_it_and_each_call_starts_from_the_harnesses() {
    block_on(async {
        let search = tool(
            "search",
            "Searches",
            json!({ "type": "object" }),
            |_| async { Ok(json!(null)) },
        );
        let clock = tool(
            "clock",
            "Tells the time",
            json!({ "type": "object" }),
            |_| async { Ok(json!(null)) },
        );
        let narrow = input_step_fn("narrow", |a: &mut InputStepArgs<'_, Vec<usize>>| {
            a.state.push(a.config.tools.len());
            StepOverrides::new()
                .active_tools(["clock"])
                .tool_choice(ToolChoice::Required)
        });
        let mut h = Harness::new(narrow).with_tools([search, clock]);
        let report = h.input_step().await.unwrap();
        assert_eq!(report.outcome.active_tools, Some(vec!["clock".to_owned()]));
        assert_eq!(report.outcome.tool_choice, ToolChoice::Required);
        let again = h.input_step().await.unwrap();
        assert_eq!(again.outcome.tool_choice, ToolChoice::Required);
        // Both calls were given the harness's two tools and its tool choice.
        assert_eq!(*h.state(), [2, 2]);
        // An active tool that is not among the step's tools is an invalid result.
        let unknown = input_step_fn("unknown", |_: &mut InputStepArgs<'_, ()>| {
            StepOverrides::new().active_tools(["missing"])
        });
        let err = Harness::new(unknown).input_step().await.unwrap_err();
        assert!(matches!(err, HookError::InvalidResult { .. }), "{err}");
    });
}

#[test]
fn a_request_prompt_is_for_this_call_only_and_a_response_answers_the_call() {
    block_on(async {
        let cache = llm_request_fn("cache", |a: &mut LlmRequestArgs<'_, ()>| {
            match a.request.prompt.len() {
                1 => LlmRequestAction::Respond(LlmResponse {
                    chunks: vec![delta("cached")],
                }),
                _ => LlmRequestAction::Prompt(a.request.prompt[1..].to_vec()),
            }
        });
        let mut h = Harness::new(cache).with_system("Be brief.");
        h.add_input(vec![Message::user("a"), Message::user("b")]);
        let report = h.llm_request().await.unwrap();
        assert_eq!(report.outcome.prompt_texts(), ["a", "b"]);
        assert!(report.outcome.response.is_none());
        assert_eq!(report.texts(), ["a", "b"], "the list keeps its messages");
        let one = ModelRequest {
            prompt: vec![Message::user("q")],
            ..ModelRequest::default()
        };
        let report = h.llm_request_with(one).await.unwrap();
        let response = report.outcome.response.expect("answered");
        assert_eq!(response.chunks, [delta("cached")]);
    });
}

#[test]
fn the_response_hook_sees_the_request_and_whether_it_came_from_a_cache() {
    block_on(async {
        let seen = llm_response_fn("seen", |a: &mut LlmResponseArgs<'_, Vec<(usize, bool)>>| {
            let step = (a.request.prompt.len(), a.from_cache);
            a.state.push(step);
        });
        let mut h = Harness::new(seen);
        h.add_input("q");
        let response = LlmResponse {
            chunks: vec![delta("a")],
        };
        h.llm_response(response.clone(), false).await.unwrap();
        h.llm_response(response, true).await.unwrap();
        assert_eq!(*h.state(), [(1, false), (1, true)]);
    });
}

#[test]
fn an_accepted_output_step_is_recorded_and_the_next_call_is_the_next_step() {
    block_on(async {
        let numbers = output_step_fn("numbers", |a: &mut OutputStepArgs<'_, Vec<u32>>| {
            a.state.push(a.step_number);
            let usage = a.run_usage.output_tokens;
            a.state.push(u32::try_from(usage).unwrap_or(u32::MAX));
        });
        let mut h = Harness::new(numbers);
        let answer = Answer::new("Looking.")
            .tool_call("c1", "search", json!({}))
            .usage(Usage::new(1, 2));
        let report = h.output_step(answer).await.unwrap();
        assert_eq!(report.outcome.len(), 1);
        assert_eq!(report.outcome[0].tool_calls().count(), 1);
        h.output_step(Answer::new("Done.").usage(Usage::new(1, 3)))
            .await
            .unwrap();
        assert_eq!(*h.state(), [0, 2, 1, 5]);
        let steps = h.steps();
        assert_eq!(steps[0].finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (steps[0].text.as_ref(), steps[1].text.as_ref()),
            ("Looking.", "Done.")
        );
    });
}

#[test]
fn output_step_messages_are_reconciled_and_the_step_keeps_what_they_say() {
    block_on(async {
        let polite = output_step_fn("polite", |a: &mut OutputStepArgs<'_, ()>| {
            let mut m = a.messages[0].clone();
            m.set_text(format!("{} Thanks.", m.text()));
            vec![m]
        });
        let mut h = Harness::new(polite);
        let report = h.output_step("Done.").await.unwrap();
        assert_eq!(report.outcome[0].text(), "Done. Thanks.");
        assert_eq!(report.texts(), ["Done. Thanks."]);
        assert_eq!(h.steps()[0].text.as_ref(), "Done. Thanks.");
    });
}

#[test]
fn the_output_results_summary_text_follows_a_changed_response() {
    block_on(async {
        let sign = output_result_fn("sign", |a: &mut OutputResultArgs<'_, Vec<usize>>| {
            a.state.push(a.result.steps.len());
            let mut m = a.messages[0].clone();
            m.set_text(format!("{} -- bot", m.text()));
            vec![m]
        });
        let mut h = Harness::new(sign);
        h.output_step("Hi.").await.unwrap();
        let report = h.output_result().await.unwrap();
        assert_eq!(report.outcome.text, "Hi. -- bot");
        assert_eq!(report.texts(), ["Hi. -- bot"]);
        assert_eq!(*h.state(), [1]);
        assert_eq!(h.steps().len(), 1, "the steps are lent, not taken");
    });
}

#[test]
fn a_tool_call_finds_its_tool_and_a_rewrite_is_the_call_its_result_belongs_to() {
    block_on(async {
        let schema = json!({ "type": "object", "required": ["q"] });
        let search = tool("search", "Searches", schema.clone(), |_| async {
            Ok(json!(null))
        });
        let cap = tool_call_fn(
            "cap",
            |a: &mut ToolCallArgs<'_, Option<serde_json::Value>>| {
                *a.state = a.tool.map(|t| t.spec().parameters);
                ToolCallAction::Rewrite(json!({ "q": a.tool_call.args["q"], "limit": 10 }))
            },
        );
        let mut h = Harness::new(cap).with_tools([search]);
        let report = h
            .tool_call(call("c1", "search", json!({ "q": "rust", "limit": 500 })))
            .await
            .unwrap();
        let rewritten = json!({ "q": "rust", "limit": 10 });
        assert_eq!(
            report.outcome.action,
            ToolCallAction::Rewrite(rewritten.clone())
        );
        assert_eq!(report.outcome.call.args, rewritten);
        assert_eq!(h.state().as_ref(), Some(&schema));
        // No tool of that name: the hook sees none.
        h.tool_call(call("c2", "other", json!({}))).await.unwrap();
        assert_eq!(*h.state(), None);

        // A result of a call the harness saw is that call's, as it was rewritten.
        let echo = tool_result_fn("echo", |a: &mut ToolResultArgs<'_, ()>| {
            ToolResultAction::Replace(a.tool_call.args.clone())
        });
        let mut h = Harness::new(echo);
        h.tool_call(call("c1", "search", rewritten.clone()))
            .await
            .unwrap();
        let report = h
            .tool_result(ToolResult::new("c1", "search", json!("found")))
            .await
            .unwrap();
        assert_eq!(report.outcome.result, rewritten);
        let unseen = h
            .tool_result(ToolResult::new("c9", "search", json!("found")))
            .await
            .unwrap();
        assert_eq!(unseen.outcome.result, serde_json::Value::Null);
    });
}

#[test]
fn a_decided_call_reports_the_decision() {
    block_on(async {
        let ask = tool_call_fn("ask", |_: &mut ToolCallArgs<'_, ()>| {
            ToolCallAction::approval("moves money")
        });
        let report = Harness::new(ask)
            .tool_call(call("c1", "refund", json!({})))
            .await
            .unwrap();
        assert_eq!(
            report.outcome.action,
            ToolCallAction::approval("moves money")
        );
        let pass = tool_call_fn("pass", |_: &mut ToolCallArgs<'_, ()>| {
            ToolCallAction::Continue
        });
        let report = Harness::new(pass)
            .tool_call(call("c1", "refund", json!({})))
            .await
            .unwrap();
        assert_eq!(report.outcome.action, ToolCallAction::Continue);
    });
}

#[test]
fn a_tool_result_keeps_its_error_and_reports_the_models_copy() {
    block_on(async {
        let shorten = tool_result_fn("shorten", |a: &mut ToolResultArgs<'_, Vec<bool>>| {
            a.state.push(a.is_error);
            ToolResultAction::ForModel(json!("short"))
        });
        let mut h = Harness::new(shorten);
        let report = h
            .tool_result(ToolResult::error("c1", "search", "timed out"))
            .await
            .unwrap();
        assert!(report.outcome.is_error);
        assert_eq!(report.outcome.result, json!("timed out"));
        assert_eq!(report.outcome.model_output, Some(json!("short")));
        assert_eq!(*h.state(), [true]);
    });
}

#[test]
fn api_error_retries_are_counted_within_a_step() {
    block_on(async {
        let retry = api_error_fn("retry", |a: &mut ApiErrorArgs<'_, Vec<u32>>| {
            a.state.push(a.retry_count);
            ApiErrorAction::Retry
        });
        let mut h = Harness::new(retry);
        let error = ApiError::new(429, "slow down");
        let report = h.api_error(error.clone()).await.unwrap();
        assert_eq!(report.outcome, ApiErrorAction::Retry);
        h.api_error(error.clone()).await.unwrap();
        h.output_step("ok").await.unwrap();
        h.api_error(error).await.unwrap();
        assert_eq!(*h.state(), [0, 1, 0]);
        let none = api_error_fn("none", |_: &mut ApiErrorArgs<'_, ()>| {
            ApiErrorAction::Unhandled
        });
        let report = Harness::new(none)
            .api_error(ApiError::new(400, "bad"))
            .await
            .unwrap();
        assert_eq!(report.outcome, ApiErrorAction::Unhandled);
    });
}

#[test]
fn a_shared_processor_reads_its_state_by_type() {
    block_on(async {
        let count = input_fn("count", |a: &mut InputArgs<'_, u8>| *a.state += 1);
        let mut h = Harness::shared(boxed(count));
        h.input("a").await.unwrap();
        assert_eq!(h.state_as::<u8>(), Some(&1));
        assert_eq!(h.state_as::<u16>(), None);
    });
}

#[test]
fn the_request_context_and_the_history_are_what_the_hooks_see() {
    block_on(async {
        let seen = input_fn("seen", |a: &mut InputArgs<'_, Vec<String>>| {
            let thread = a.request_context.thread_id().unwrap_or("none").to_owned();
            let listed = a.message_list.all().count().to_string();
            a.state.extend([thread, listed]);
            a.request_context.set_value("seen", json!(true));
        });
        let cx = RequestContext::new().with_thread("t-1", "ada");
        let mut h = Harness::new(seen)
            .with_context(cx)
            .with_history([Message::user("before"), Message::assistant("reply")]);
        h.input("now").await.unwrap();
        assert_eq!(*h.state(), ["t-1", "3"]);
        assert_eq!(h.context().value("seen"), Some(&json!(true)));
        assert_eq!(
            h.list().input().map(Message::text).collect::<Vec<_>>(),
            ["now"]
        );
    });
}

#[test]
fn a_warning_after_a_new_context_is_still_reported() {
    block_on(async {
        let tidy = output_result_fn("tidy", |a: &mut OutputResultArgs<'_, ()>| {
            if let ProcessorError::Warning(w) = a.abort().reason("later").warn() {
                a.request_context.report_warning(w.into_tripwire("tidy"));
            }
        });
        let mut h = Harness::new(tidy).with_context(RequestContext::new());
        let report = h.output_result().await.unwrap();
        assert_eq!(report.warning_reasons(), ["later"]);
    });
}

#[test]
fn the_retry_count_is_what_the_hooks_see() {
    block_on(async {
        let seen = output_step_fn("seen", |a: &mut OutputStepArgs<'_, u32>| {
            *a.state = a.retry_count;
        });
        let mut h = Harness::new(seen).with_retry_count(2);
        h.output_step("again").await.unwrap();
        assert_eq!(*h.state(), 2);
    });
}

#[test]
fn a_warning_a_stream_hook_gives_through_the_request_context_is_in_its_report() {
    block_on(async {
        let note = output_stream_fn("note", |a: &mut OutputStreamArgs<'_, ()>| {
            if a.chunk.text_delta().is_some()
                && let ProcessorError::Warning(w) = a.abort().reason("unjudged").warn()
            {
                a.request_context.report_warning(w.into_tripwire("note"));
            }
        });
        let report = Harness::new(note).output_stream(["a"]).await.unwrap();
        assert_eq!(report.warning_reasons(), ["unjudged"]);
    });
}

#[test]
fn the_warnings_of_a_failed_call_go_with_its_error() {
    block_on(async {
        let fail = input_fn("fail", |a: &mut InputArgs<'_, u8>| {
            *a.state += 1;
            if *a.state > 1 {
                return Ok(());
            }
            if let ProcessorError::Warning(w) = a.abort().reason("first").warn() {
                a.request_context.report_warning(w.into_tripwire("fail"));
            }
            Err(ProcessorError::Failed("broken".into()))
        });
        let mut h = Harness::new(fail);
        assert!(h.input("one").await.is_err());
        assert!(h.input("two").await.unwrap().warnings.is_empty());
    });
}
