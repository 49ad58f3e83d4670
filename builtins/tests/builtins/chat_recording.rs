//! ChatRecording and Recording::replay (behaviour 92 of docs/builtins.md): runs recorded, and
//! replayed through another pipeline with the model's recorded answers.

use crate::common;

use common::{Violations, temp_dir, thread};
use futures::executor::block_on;
use processors_builtins::chat_recording::{
    Change, ChatRecording, JsonLines, Recording, Recordings, ReplayModel,
};
use processors_runtime::prelude::*;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn counting_tool(runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    tool(
        "weather",
        "The weather in a city.",
        json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
        move |args| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({ "city": args["city"], "sky": "clear" })) }
        },
    )
}

/// A builder of an agent that replays, with the recordings' tools.
fn replaying(tools: Vec<Arc<dyn Tool>>) -> processors_runtime::agent::AgentBuilder {
    Agent::builder().model(ReplayModel::new()).tools(tools)
}

/// Tags the newest input message, as an input processor of the recorded pipeline.
fn tag() -> impl InputProcessor {
    input_fn("tag", |a: &mut InputArgs<'_, ()>| {
        let mut ms = a.messages.clone();
        if let Some(last) = ms.last_mut() {
            let t = format!("{} [tagged]", last.text());
            last.set_text(t);
        }
        ms
    })
}

/// One recorded run with memory, a tool call, and the recorder in input and output.
fn recorded() -> (Recording, Arc<AtomicUsize>) {
    let recordings = Recordings::new();
    let recorder = ChatRecording::new(recordings.clone());
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        Turn::text("Hello, Ada.").usage(10, 3),
        Turn::empty()
            .tool_call("c1", "weather", json!({ "city": "Paris" }))
            .usage(20, 5),
        Turn::text("It is clear in Paris.").usage(30, 6),
    ]);
    let agent = Agent::builder()
        .model(model)
        .tool(counting_tool(&runs))
        .memory(Memory::new(InMemoryStore::new()))
        .input(recorder.clone())
        .input(tag())
        .output(recorder)
        .build()
        .unwrap();
    block_on(agent.generate_with("I am Ada.", thread())).unwrap();
    block_on(agent.generate_with("Weather in Paris?", thread())).unwrap();
    let mut all = recordings.all();
    assert_eq!(all.len(), 2);
    (all.remove(1), runs)
}

#[test]
fn bi_92_a_run_is_recorded_with_its_input_history_calls_steps_and_messages() {
    let (r, runs) = recorded();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(r.thread_id.as_deref(), Some("thread-1"));
    assert_eq!(r.resource_id.as_deref(), Some("user-1"));
    // The input as the caller gave it (the recorder was before the tagger), and memory's
    // history as loaded (tagged: saved after the tagger ran).
    assert!(r.input_as_given);
    let texts = |ms: &[Message]| ms.iter().map(Message::text).collect::<Vec<_>>();
    assert_eq!(texts(&r.input), ["Weather in Paris?"]);
    assert_eq!(texts(&r.history), ["I am Ada. [tagged]", "Hello, Ada."]);
    // Two model calls: each request as sent (tagged) and the model's chunks.
    assert_eq!(r.calls.len(), 2);
    assert_eq!(
        texts(&r.calls[0].request.prompt).last().unwrap(),
        "Weather in Paris? [tagged]"
    );
    assert_eq!(r.calls[0].request.tools[0].name, "weather");
    assert!(
        r.calls[0]
            .response
            .iter()
            .any(|c| matches!(c, ChunkKind::ToolCall(call) if call.tool_name == "weather"))
    );
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.steps[0].tool_results[0].result["sky"], "clear");
    assert_eq!(r.text, "It is clear in Paris.");
    assert_eq!(r.usage.total_tokens, 61);
    assert_eq!(r.finish_reason, FinishReason::Stop);
    assert_eq!(texts(&r.messages).last().unwrap(), "It is clear in Paris.");
}

#[test]
fn bi_92_in_output_alone_the_input_is_recorded_as_the_processors_left_it() {
    let recordings = Recordings::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("Hi.")]))
        .input(tag())
        .output(ChatRecording::new(recordings.clone()))
        .build()
        .unwrap();
    block_on(agent.generate("hello")).unwrap();
    let r = &recordings.all()[0];
    assert!(!r.input_as_given);
    assert_eq!(r.input[0].text(), "hello [tagged]");
}

#[test]
fn bi_92_a_run_that_ends_in_a_trip_wire_is_not_recorded() {
    let recordings = Recordings::new();
    let block = input_fn(
        "block",
        |_: &mut InputArgs<'_, ()>| -> Result<(), ProcessorError> {
            Err(Abort::new().reason("no").into())
        },
    );
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("Hi.")]))
        .input(block)
        .output(ChatRecording::new(recordings.clone()))
        .build()
        .unwrap();
    let r = block_on(agent.generate("hello")).unwrap();
    assert!(r.tripwire.is_some());
    assert!(recordings.all().is_empty());
}

#[test]
fn bi_92_recordings_are_json_lines_read_back_whole_and_a_failed_write_only_warns() {
    let dir = temp_dir("recording");
    let path = dir.join("runs.jsonl");
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::text("Hi.")]))
        .output(ChatRecording::to_file(&path))
        .build()
        .unwrap();
    block_on(agent.generate("one")).unwrap();
    block_on(agent.generate("two")).unwrap();
    let lines = std::fs::read_to_string(&path).unwrap();
    assert_eq!(lines.lines().count(), 2);
    let read = JsonLines::read(&path).unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read[1].input[0].text(), "two");
    assert_eq!(read[1].calls[0].response, read[0].calls[0].response);

    // A path that cannot be written: the run goes on, with a warning.
    let violations = Violations::new();
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("Hi.")]))
        .output(ChatRecording::to_file(&dir))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    assert_eq!(block_on(agent.generate("three")).unwrap().text, "Hi.");
    let warnings: Vec<String> = violations.all().into_iter().map(|v| v.reason).collect();
    assert!(
        warnings[0].starts_with("the run could not be recorded:"),
        "{warnings:?}"
    );
}

#[test]
fn bi_92_a_replay_through_the_same_pipeline_changes_nothing_and_calls_no_tool() {
    let (r, runs) = recorded();
    let agent = replaying(Recording::tools_of(std::slice::from_ref(&r)))
        .input(tag())
        .build()
        .unwrap();
    // The recorded history and input go in as the input.
    let replay = block_on(r.replay(&agent)).unwrap();
    assert_eq!(replay.changes, []);
    assert_eq!(replay.result.text, "It is clear in Paris.");
    assert_eq!(replay.result.tool_results[0].result["sky"], "clear");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the real tool did not run again"
    );
}

#[test]
fn bi_92_a_replay_reports_what_the_new_processors_changed() {
    let (r, _) = recorded();
    let tools = Recording::tools_of(std::slice::from_ref(&r));
    // Without the tagger: the prompt differs from the recorded one.
    let plain = replaying(tools.clone()).build().unwrap();
    let replay = block_on(r.replay(&plain)).unwrap();
    assert!(
        matches!(
            &replay.changes[..],
            [
                Change::Prompt { call: 0, .. },
                Change::Prompt { call: 1, .. }
            ]
        ),
        "{:?}",
        replay.changes
    );

    // An output guard that rewrites the answer: the text differs.
    let shout = output_result_fn("shout", |a: &mut OutputResultArgs<'_, ()>| {
        let mut ms = a.messages.clone();
        if let Some(m) = ms.iter_mut().rev().find(|m| m.role == Role::Assistant) {
            let t = m.text().to_uppercase();
            m.set_text(t);
        }
        ms
    });
    let loud = replaying(tools.clone()).output(shout).build().unwrap();
    let replay = block_on(r.replay(&loud)).unwrap();
    assert!(replay.changes.contains(&Change::Text {
        recorded: "It is clear in Paris.".into(),
        replayed: "IT IS CLEAR IN PARIS.".into(),
    }));

    // A guard that ends the run: blocked, with one call where two were recorded, and no
    // tool call.
    let block = output_step_fn(
        "no-weather",
        |a: &mut OutputStepArgs<'_, ()>| -> Result<(), ProcessorError> {
            match a.tool_calls.is_empty() {
                true => Ok(()),
                false => Err(Abort::new().reason("no tools today").into()),
            }
        },
    );
    let strict = replaying(tools).output(block).build().unwrap();
    let replay = block_on(r.replay(&strict)).unwrap();
    assert!(
        replay
            .changes
            .iter()
            .any(|c| matches!(c, Change::Blocked(t) if t.reason == "no tools today")),
        "{:?}",
        replay.changes
    );
    assert!(replay.changes.contains(&Change::Calls {
        recorded: 2,
        replayed: 1
    }));
}

#[test]
fn bi_92_the_replay_model_answers_only_inside_a_replay_and_only_what_was_recorded() {
    let agent = Agent::builder().model(ReplayModel::new()).build().unwrap();
    let error = block_on(agent.generate("hi")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("only inside `Recording::replay`"),
        "{error}"
    );

    // A pipeline that asks for one call more than was recorded: an empty answer, and the
    // changes say so.
    let (mut r, _) = recorded();
    r.calls.truncate(1);
    let agent = replaying(Recording::tools_of(std::slice::from_ref(&r)))
        .input(tag())
        .build()
        .unwrap();
    let replay = block_on(r.replay(&agent)).unwrap();
    assert!(
        replay.changes.contains(&Change::Unanswered { call: 1 }),
        "{:?}",
        replay.changes
    );
    assert!(replay.changes.contains(&Change::Calls {
        recorded: 1,
        replayed: 2
    }));
}

#[test]
fn bi_92_a_retry_in_the_replay_gets_its_steps_answer_again_and_shifts_nothing() {
    let (r, _) = recorded();
    // Rejects the first final answer once, asking for another.
    let once = output_step_fn(
        "once-more",
        |a: &mut OutputStepArgs<'_, u32>| -> Result<(), ProcessorError> {
            if a.text.is_empty() || *a.state > 0 {
                return Ok(());
            }
            *a.state += 1;
            Err(Abort::new().retry(true).reason("once more").into())
        },
    );
    let agent = replaying(Recording::tools_of(std::slice::from_ref(&r)))
        .input(tag())
        .output(once)
        .max_processor_retries(1)
        .build()
        .unwrap();
    let replay = block_on(r.replay(&agent)).unwrap();
    assert_eq!(replay.result.text, "It is clear in Paris.");
    // The retry was sent the feedback besides what its step was sent: the only prompt that
    // differs; the text and the tool calls are the recorded ones.
    assert!(
        matches!(
            &replay.changes[..],
            [Change::Prompt { call: 2, replayed, .. }, Change::Calls { recorded: 2, replayed: 3 }]
                if replayed[0].text().contains("once more")
        ),
        "{:?}",
        replay.changes
    );
}

#[test]
fn bi_92_recordings_kept_in_the_memory_store_per_thread_the_newest_kept() {
    use processors_builtins::chat_recording::StoreRecordings;
    let memory = Memory::new(InMemoryStore::new());
    let violations = Violations::new();
    let sink = StoreRecordings::new(&memory).keep(2);
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::text("Hi.")]))
        .memory(memory.clone())
        .output(ChatRecording::new(sink.clone()))
        .on_violation(violations.hook())
        .build()
        .unwrap();
    for text in ["one", "two", "three"] {
        block_on(agent.generate_with(text, thread())).unwrap();
    }
    let kept = block_on(sink.read("user-1", "thread-1")).unwrap();
    let inputs: Vec<String> = kept.iter().map(|r| r.input[0].text()).collect();
    assert_eq!(inputs, ["two", "three"]);
    // Another resource's thread of the same id has none.
    assert!(
        block_on(sink.read("user-2", "thread-1"))
            .unwrap()
            .is_empty()
    );
    // A run without a thread: recorded nowhere, with a warning.
    block_on(agent.generate("four")).unwrap();
    let warnings: Vec<String> = violations.all().into_iter().map(|v| v.reason).collect();
    assert!(
        warnings[0].contains("no thread and resource"),
        "{warnings:?}"
    );
    // A kept recording replays.
    let replay = block_on(kept[1].replay(&replaying(Vec::new()).build().unwrap())).unwrap();
    assert_eq!(replay.result.text, "Hi.");
}
