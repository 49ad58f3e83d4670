//! What a run reports to `tracing`: a span per run, step, model call and processor hook call,
//! with their fields and outcomes; one summary per stream processor per step instead of a span
//! per chunk; events for trip wires and retries.

use crate::common;

use common::*;
use processors::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// A span or an event as the subscriber saw it.
#[derive(Debug, Clone, Default)]
struct Seen {
    name: String,
    target: String,
    fields: BTreeMap<String, String>,
    /// The name of the span it is in (an event) or under (a span).
    parent: Option<String>,
}

impl Seen {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

#[derive(Default)]
struct Log {
    spans: Vec<Seen>,
    events: Vec<Seen>,
    stack: Vec<u64>,
}

/// Records every span and event, at every level.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Log>>);

impl Recorder {
    fn spans(&self, name: &str) -> Vec<Seen> {
        let log = self.0.lock().unwrap();
        log.spans
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }
    fn events(&self, message: &str) -> Vec<Seen> {
        let log = self.0.lock().unwrap();
        log.events
            .iter()
            .filter(|e| e.field("message") == Some(message))
            .cloned()
            .collect()
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let mut log = self.0.lock().unwrap();
        let mut seen = Seen {
            name: attrs.metadata().name().to_owned(),
            target: attrs.metadata().target().to_owned(),
            ..Seen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        let parent = match attrs.parent() {
            Some(p) => Some(p.into_u64()),
            None if attrs.is_contextual() => log.stack.last().copied(),
            None => None,
        };
        seen.parent = parent.map(|p| log.spans[p as usize - 1].name.clone());
        log.spans.push(seen);
        Id::from_u64(log.spans.len() as u64)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        let mut log = self.0.lock().unwrap();
        let seen = &mut log.spans[span.into_u64() as usize - 1];
        values.record(&mut Fields(&mut seen.fields));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut log = self.0.lock().unwrap();
        let mut seen = Seen {
            name: event.metadata().name().to_owned(),
            target: event.metadata().target().to_owned(),
            ..Seen::default()
        };
        event.record(&mut Fields(&mut seen.fields));
        let parent = match event.parent() {
            Some(p) => Some(p.into_u64()),
            None if event.is_contextual() => log.stack.last().copied(),
            None => None,
        };
        seen.parent = parent.map(|p| log.spans[p as usize - 1].name.clone());
        log.events.push(seen);
    }
    fn enter(&self, span: &Id) {
        self.0.lock().unwrap().stack.push(span.into_u64());
    }
    fn exit(&self, _: &Id) {
        self.0.lock().unwrap().stack.pop();
    }
}

/// Runs `f` with the recorder as the thread's subscriber, one test at a time: `tracing`
/// caches whether a callsite is enabled once for the whole process, so with the cache rebuilt
/// under this recorder every callsite asks it, whatever another test's thread did first.
fn traced<T>(f: impl FnOnce() -> T) -> (Recorder, T) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let recorder = Recorder::default();
    let out = tracing::subscriber::with_default(recorder.clone(), || {
        tracing::callsite::rebuild_interest_cache();
        f()
    });
    (recorder, out)
}

#[test]
fn a_run_has_spans_for_itself_its_steps_its_model_calls_and_each_hook_call() {
    let m = ScriptedModel::new([
        Turn::empty().tool_call("call-1", "weather", serde_json::json!({"city": "Oslo"})),
        Turn::deltas(["sunny", " today"]),
    ])
    .named("gpt-test");
    let agent = Agent::builder()
        .name("support")
        .model(m)
        .tool(echo_tool("weather"))
        .input(Probe::new("tag").input(|a| {
            let mut ms = a.messages.clone();
            ms[0].set_text("tagged");
            Ok(ms.into())
        }))
        .output(Probe::new("upper").stream(upper))
        .build()
        .unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    let r = r.unwrap();
    assert_eq!(r.text, "SUNNY TODAY");

    let run = rec.spans("agent.run");
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].field("agent"), Some("support"));
    assert_eq!(run[0].field("outcome"), Some("completed"));
    assert_eq!(run[0].field("steps"), Some("2"));
    assert!(run[0].field("run_id").is_some_and(|id| id == r.run_id));

    let steps = rec.spans("agent.step");
    let numbers: Vec<_> = steps
        .iter()
        .map(|s| s.field("step").unwrap().to_owned())
        .collect();
    assert_eq!(numbers, ["0", "1"]);
    let reasons: Vec<_> = steps
        .iter()
        .map(|s| s.field("finish_reason").unwrap())
        .collect();
    assert_eq!(reasons, ["tool-calls", "stop"]);
    assert!(
        steps
            .iter()
            .all(|s| s.parent.as_deref() == Some("agent.run"))
    );

    let chats = rec.spans("chat");
    assert_eq!(chats.len(), 2);
    assert!(
        chats
            .iter()
            .all(|c| c.parent.as_deref() == Some("agent.step"))
    );
    assert_eq!(chats[0].field("gen_ai.operation.name"), Some("chat"));
    assert_eq!(chats[0].field("gen_ai.request.model"), Some("gpt-test"));
    assert_eq!(
        chats[0].field("gen_ai.response.finish_reasons"),
        Some("tool-calls")
    );
    assert_eq!(
        chats[1].field("gen_ai.response.finish_reasons"),
        Some("stop")
    );
    assert!(chats[1].field("gen_ai.usage.output_tokens").is_some());
    assert!(chats[0].field("gen_ai.provider.name").is_some());

    let hooks = rec.spans("processor");
    let input: Vec<_> = hooks
        .iter()
        .filter(|h| h.field("hook") == Some("process_input"))
        .collect();
    assert_eq!(input.len(), 1);
    assert_eq!(input[0].field("id"), Some("tag"));
    assert_eq!(input[0].field("outcome"), Some("replaced"));
    assert!(input[0].field("duration_us").is_some());
    assert_eq!(input[0].parent.as_deref(), Some("agent.run"));
    assert!(
        hooks
            .iter()
            .all(|h| h.field("hook") != Some("process_output_stream")),
        "no span per chunk"
    );
}

#[test]
fn stream_hooks_are_summed_per_processor_per_step() {
    let m = ScriptedModel::new([Turn::deltas(["a", "drop", "b", "c"])]);
    let agent = Agent::builder()
        .model(m)
        .output(Probe::new("upper").stream(upper))
        .output(Probe::new("filter").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some("DROP") => StreamAction::Drop,
                _ => StreamAction::Pass,
            })
        }))
        .build()
        .unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    assert_eq!(r.unwrap().text, "ABC");
    let sums = rec.events("stream hook calls of the step");
    let of = |id: &str| -> Vec<Seen> {
        sums.iter()
            .filter(|e| e.field("processor") == Some(id))
            .cloned()
            .collect()
    };
    let (upper, filter) = (of("upper"), of("filter"));
    assert!(sums.iter().all(|e| e.target == "processors::stream"));
    // One summary each for the one step: its step-start, text-start, four deltas, text-end
    // and step-finish.
    assert_eq!((upper.len(), filter.len()), (1, 1), "{sums:?}");
    assert_eq!(upper[0].field("step"), Some("0"));
    assert_eq!(upper[0].parent.as_deref(), Some("agent.step"));
    assert_eq!(upper[0].field("chunks"), Some("8"));
    assert_eq!(upper[0].field("replaced"), Some("4"));
    assert_eq!(upper[0].field("dropped"), Some("0"));
    assert_eq!(filter[0].field("chunks"), Some("8"));
    assert_eq!(filter[0].field("dropped"), Some("1"));
    assert!(upper[0].field("duration_us").is_some());
}

#[test]
fn trip_wires_and_retries_are_events() {
    let m = ScriptedModel::new([Turn::text("bad"), Turn::text("good")]);
    let agent = Agent::builder()
        .model(m)
        .max_processor_retries(1)
        .output(Probe::new("judge").output_step(|a| {
            if a.text == "bad" {
                return Err(a.abort().reason("not good").retry(true).into());
            }
            Ok(().into())
        }))
        .build()
        .unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    assert_eq!(r.unwrap().text, "good");
    let retries = rec.events("step rejected; retrying with the reason as feedback");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].field("processor"), Some("judge"));
    assert_eq!(retries[0].field("retry_count"), Some("1"));
    assert_eq!(retries[0].parent.as_deref(), Some("agent.step"));
    let judged: Vec<_> = rec
        .spans("processor")
        .into_iter()
        .filter(|s| {
            s.field("id") == Some("judge") && s.field("hook") == Some("process_output_step")
        })
        .map(|s| s.field("outcome").unwrap().to_owned())
        .collect();
    assert_eq!(judged, ["retried", "pass"]);
    let steps = rec.spans("agent.step");
    assert_eq!(steps[0].field("finish_reason"), Some("retry"));

    let m = ScriptedModel::new([Turn::text("bad")]);
    let agent = Agent::builder()
        .model(m)
        .output(Probe::new("judge").output_step(|a| Err(a.abort().reason("blocked").into())))
        .build()
        .unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    assert!(r.unwrap().tripwire.is_some());
    let wires = rec.events("trip wire: the run ends");
    assert_eq!(wires.len(), 1);
    assert_eq!(wires[0].field("processor"), Some("judge"));
    assert_eq!(wires[0].field("reason"), Some("blocked"));
    assert_eq!(rec.spans("agent.run")[0].field("outcome"), Some("tripwire"));

    // A run that fails is recorded as failed.
    let m = ScriptedModel::new([Turn::error(ApiError::other("down", false))]);
    let agent = Agent::builder().model(m).build().unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    assert!(r.is_err());
    assert_eq!(rec.spans("agent.run")[0].field("outcome"), Some("failed"));
}

#[test]
fn a_workflows_inner_hook_calls_have_spans_of_their_own_inside_the_workflows() {
    let m = ScriptedModel::new([Turn::text("ok")]);
    let flow = Workflow::new("guards")
        .then(Probe::new("first").input(|a| {
            let mut ms = a.messages.clone();
            ms[0].set_text("changed");
            Ok(ms.into())
        }))
        .then(Probe::new("second"));
    let agent = Agent::builder().model(m).input(flow).build().unwrap();
    let (rec, r) = traced(|| futures::executor::block_on(agent.generate("hi")));
    assert_eq!(r.unwrap().text, "ok");
    let input: Vec<_> = rec
        .spans("processor")
        .into_iter()
        .filter(|h| h.field("hook") == Some("process_input"))
        .map(|h| {
            (
                h.field("id").unwrap().to_owned(),
                h.field("outcome").unwrap().to_owned(),
                h.parent.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        input,
        [
            ("guards".into(), "replaced".into(), "agent.run".into()),
            ("first".into(), "replaced".into(), "processor".into()),
            ("second".into(), "pass".into(), "processor".into()),
        ]
    );
}
