//! Behaviour 42: a workflow of processors behaves as one processor, on every dispatch path.

mod common;

use common::*;
use processors::prelude::*;
use serde_json::json;

fn model(turns: impl IntoIterator<Item = Turn>) -> ScriptedModel {
    ScriptedModel::new(turns)
}

fn suffix(id: &str, s: &'static str) -> Probe {
    Probe::new(id).input(move |a| {
        let mut ms = a.messages.clone();
        for m in &mut ms {
            let t = format!("{}{s}", m.text());
            m.set_text(t);
        }
        Ok(ms.into())
    })
}

on_every_path!(b42_sequence_runs_in_order_and_stream_steps_chain, |path| {
    let m = model([Turn::deltas(["hello", "drop"])]);
    let flow = Workflow::new("stream-flow")
        .then(Probe::new("upper").stream(upper))
        .then(Probe::new("filter").stream(|a| {
            Ok(if a.chunk.text_delta() == Some("DROP") {
                StreamAction::Drop
            } else {
                StreamAction::Pass
            })
        }))
        .then(Probe::new("bang").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(_) => a.chunk.clone().map_text(|t| format!("{t}!")).into(),
                None => StreamAction::Pass,
            })
        }));
    let agent = build_agent!(path, model: m, output: [flow]);
    let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["HELLO!"]);
    assert_eq!(r.unwrap().text, "HELLO!");
});

on_every_path!(b42_parallel_keeps_the_selected_branch, |path| {
    let m = model([Turn::text("ok")]);
    let log = Log::new();
    let l = log.clone();
    let flow = Workflow::new("fan-out")
        .then(suffix("first", " [seq]"))
        .parallel(
            [
                boxed(suffix("left", " [left]").input(move |a| {
                    l.push(format!("left saw {}", a.messages[0].text()));
                    Ok(().into())
                })),
                boxed(suffix("right", " [right]")),
            ],
            1,
        )
        .map(|mut ms| {
            ms.push(Message::user("mapped"));
            ms
        });
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "q").await;
    assert_eq!(
        texts_of(&m.requests()[0].prompt, Role::User),
        ["q [seq] [right]", "mapped"]
    );
    assert_eq!(
        log.entries(),
        ["left saw q [seq]"],
        "the unselected branch ran on the same input"
    );
});

on_every_path!(b42_condition_branch_runs_the_first_match, |path| {
    let m = ScriptedModel::cycle([Turn::text("ok")]);
    let long = |input: &WorkflowInput<'_>| matches!(input, WorkflowInput::Messages(ms) if ms[0].text().len() > 5);
    let flow = Workflow::new("router")
        .branch(long, suffix("long", " [long]"))
        .branch(|_| true, suffix("short", " [short]"));
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "a long question").await;
    generate(&*agent, "hi").await;
    let reqs = m.requests();
    assert_eq!(
        texts_of(&reqs[0].prompt, Role::User),
        ["a long question [long]"]
    );
    assert_eq!(texts_of(&reqs[1].prompt, Role::User), ["hi [short]"]);
});

on_every_path!(b42_tripwire_inside_bubbles_out_with_the_inner_id, |path| {
    let m = model([Turn::text("bad"), Turn::text("good")]);
    let flow =
        Workflow::new("guards")
            .then(Probe::new("noop"))
            .then(Probe::new("judge").output_step(|a| {
                if a.text == "bad" {
                    return Err(a
                        .abort()
                        .reason("not good")
                        .retry(true)
                        .metadata(json!({"k": 1}))
                        .into());
                }
                Ok(().into())
            }));
    let agent = build_agent!(path, model: m, max_processor_retries: 1, output: [flow]);
    let r = generate(&*agent, "hi").await;
    assert_eq!(r.text, "good");
    let tw = r.steps[0].tripwire.clone().unwrap();
    assert_eq!(
        (tw.processor_id.as_str(), tw.retry, tw.metadata),
        ("judge", true, Some(json!({"k": 1})))
    );
});

on_every_path!(
    b42_stream_abort_inside_a_workflow_names_the_inner_processor,
    |path| {
        let m = model([Turn::deltas(["a", "b"])]);
        let flow = Workflow::new("stream-guards").then(Probe::new("block-b").stream(|a| {
            if a.chunk.text_delta() == Some("b") {
                return Err(a.abort().into());
            }
            Ok(StreamAction::Pass)
        }));
        let agent = build_agent!(path, model: m, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["a"]);
        let tw = r.unwrap().tripwire.unwrap();
        assert_eq!(tw.processor_id, "block-b");
        assert_eq!(tw.reason, "Tripwire triggered by block-b");
    }
);

on_every_path!(
    b42_inner_state_is_kept_per_processor_for_the_request,
    |path| {
        let m = ScriptedModel::cycle([Turn::deltas(["a", "b", "c"])]);
        let log = Log::new();
        let l = log.clone();
        let flow = Workflow::new("count-flow").then(
            Probe::new("count")
                .stream(|a| {
                    if a.chunk.text_delta().is_some() {
                        *a.state = json!(a.state.as_u64().unwrap_or(0) + 1);
                    }
                    Ok(StreamAction::Pass)
                })
                .output_result(move |a| {
                    l.push(a.state.to_string());
                    Ok(().into())
                }),
        );
        let agent = build_agent!(path, model: m, output: [flow]);
        generate(&*agent, "one").await;
        generate(&*agent, "two").await;
        assert_eq!(log.entries(), ["3", "3"]);
    }
);

on_every_path!(b42_direct_list_edits_inside_a_workflow_stand, |path| {
    let m = model([Turn::text("ok")]);
    let flow = Workflow::new("notes").then(Probe::new("note").input(|a| {
        a.message_list
            .add_system(Message::system("added directly"), None);
        Ok(().into())
    }));
    let agent = build_agent!(path, model: m, input: [flow]);
    generate(&*agent, "q").await;
    assert!(texts_of(&m.requests()[0].prompt, Role::System).contains(&"added directly".to_owned()));
});

on_every_path!(b42_inner_stream_processors_keep_their_history, |path| {
    let m = model([Turn::deltas(["Hel", "lo", " world."])]);
    let flow = Workflow::new("sentences").then(Probe::new("hold").history().stream(|a| {
        let Some(t) = a.chunk.text_delta() else {
            return Ok(StreamAction::Pass);
        };
        if !t.contains('.') {
            return Ok(StreamAction::Drop);
        }
        let all: String = a
            .stream_history
            .iter()
            .filter_map(Chunk::text_delta)
            .collect();
        Ok(a.chunk.clone().map_text(|_| all).into())
    }));
    let agent = build_agent!(path, model: m, output: [flow]);
    let (chunks, _) = collect(&*agent, "x", GenerateOptions::new()).await;
    assert_eq!(deltas(&chunks), ["Hello world."]);
});

on_every_path!(
    b42_a_warning_inside_a_workflow_keeps_the_earlier_steps_changes,
    |path| {
        let m = model([Turn::deltas(["hello"])]);
        let log = Log::new();
        let l = log.clone();
        let on_violation = move |v: &Violation| {
            l.push(format!("{:?} {} {}", v.kind, v.processor_id, v.reason));
        };
        let flow = Workflow::new("guarded")
            .then(Probe::new("upper").stream(upper))
            .then(Probe::new("watch").stream(|a| match a.chunk.text_delta() {
                Some(_) => Err(a.abort().reason("looks odd").warn()),
                None => Ok(StreamAction::Pass),
            }))
            .then(Probe::new("bang").stream(|a| {
                Ok(match a.chunk.text_delta() {
                    Some(_) => a.chunk.clone().map_text(|t| format!("{t}!")).into(),
                    None => StreamAction::Pass,
                })
            }));
        let agent = build_agent!(path, model: m, on_violation: on_violation, output: [flow]);
        let (chunks, r) = collect(&*agent, "hi", GenerateOptions::new()).await;
        assert_eq!(deltas(&chunks), ["HELLO!"]);
        assert_eq!(r.unwrap().text, "HELLO!");
        assert_eq!(log.entries(), ["Warn watch looks odd"]);
    }
);

on_every_path!(
    b42_a_warning_inside_a_workflow_message_hook_is_reported_and_the_workflow_goes_on,
    |path| {
        let m = model([Turn::text("ok")]);
        let log = Log::new();
        let l = log.clone();
        let on_violation = move |v: &Violation| l.push(format!("{:?} {}", v.kind, v.processor_id));
        let flow = Workflow::new("input-flow")
            .then(suffix("first", " [1]"))
            .then(Probe::new("watch").input(|a| Err(a.abort().reason("hm").warn())))
            .then(suffix("second", " [2]"));
        let agent = build_agent!(path, model: m.clone(), on_violation: on_violation, input: [flow]);
        generate(&*agent, "hi").await;
        assert_eq!(log.entries(), ["Warn watch"]);
        let prompt = &m.requests()[0].prompt;
        assert_eq!(
            prompt.last().map(Message::text).as_deref(),
            Some("hi [1] [2]")
        );
    }
);
