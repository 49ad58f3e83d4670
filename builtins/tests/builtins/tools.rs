//! The tool built-ins (`processors_builtins::tools`), on a real agent: their options, their
//! refusals as the model reads them, and their configuration errors.

use processors_builtins::ConfigError;
use processors_builtins::tokenizer::Tokenizer;
use processors_builtins::tools::{
    ToolApproval, ToolInjection, ToolParameters, ToolResultLimiter, ToolValidation,
};
use processors_runtime::agent::Approval;
use processors_runtime::prelude::*;
use processors_runtime::testing::Harness;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A tool that counts its runs and answers with its arguments.
fn counted(name: &str, schema: Value, runs: &Arc<AtomicUsize>) -> Arc<dyn Tool> {
    let runs = runs.clone();
    tool(name, "A test tool", schema, move |args| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok(args)
        }
    })
}

/// One call of `tool` with `args`, then a text answer.
fn one_call(tool: &str, args: Value) -> ScriptedModel {
    ScriptedModel::new([
        Turn::empty().tool_call("c1", tool, args),
        Turn::text("done"),
    ])
}

/// The error text of the run's first tool result (panics when it did not fail).
fn refusal(r: &GenerateResult) -> String {
    let result = &r.tool_results[0];
    assert!(result.is_error, "the call was refused: {result:?}");
    result.result.as_str().unwrap().to_owned()
}

#[tokio::test]
async fn bi_60_validation_refuses_arguments_its_tools_schema_rejects_and_says_why() {
    let runs = Arc::new(AtomicUsize::new(0));
    let schema = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "minLength": 1 },
            "limit": { "type": "integer", "maximum": 100 }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let model = one_call("search", json!({ "limit": 500, "mode": "deep" }));
    let agent = Agent::builder()
        .model(model.clone())
        .tool(counted("search", schema, &runs))
        .output(ToolValidation::builder().build().unwrap())
        .build()
        .unwrap();
    let r = agent.generate("find").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let why = refusal(&r);
    assert!(why.starts_with("the arguments of `search` were refused, so it did not run: "));
    assert!(why.contains("\"query\" is a required property"), "{why}");
    assert!(
        why.contains("`/limit`: 500 is greater than the maximum of 100"),
        "{why}"
    );
    assert!(why.contains("mode"), "{why}");
    assert!(why.ends_with("Correct them and call it again."));
    // The model read the refusal as the tool's error, and the loop went on.
    assert_eq!(r.text, "done");
    assert_eq!(model.calls(), 2);
}

#[tokio::test]
async fn bi_61_validation_lets_a_valid_call_run_and_refuses_a_broken_schema() {
    let runs = Arc::new(AtomicUsize::new(0));
    let good = counted(
        "search",
        json!({ "type": "object", "properties": { "query": { "type": "string" } } }),
        &runs,
    );
    let broken = counted("broken", json!({ "type": "no-such-type" }), &runs);
    let model = ScriptedModel::new([
        Turn::empty()
            .tool_call("c1", "search", json!({ "query": "rust" }))
            .tool_call("c2", "broken", json!({})),
        Turn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model)
        .tool(good)
        .tool(broken)
        .output(ToolValidation::builder().build().unwrap())
        .build()
        .unwrap();
    let r = agent.generate("find").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!r.tool_results[0].is_error);
    assert!(r.tool_results[1].is_error);
    assert!(
        r.tool_results[1]
            .result
            .as_str()
            .unwrap()
            .contains("the tool's declared JSON Schema does not compile")
    );
}

#[tokio::test]
async fn bi_62_validation_rules_deny_values_and_keep_paths_and_hosts_inside() {
    let root = std::env::temp_dir().join(format!("tool-validation-{}", std::process::id()));
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let outside = std::env::temp_dir().join(format!("tool-outside-{}", std::process::id()));
    std::fs::create_dir_all(&outside).unwrap();
    #[cfg(unix)]
    {
        let link = root.join("escape");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&outside, &link).unwrap();
    }
    let guard = || {
        ToolValidation::builder()
            .schemas(false)
            .deny_for(["shell"], r"rm\s+-rf")
            .paths(["path"], [root.clone()])
            .hosts(["url"], ["example.com", "*.rust-lang.org"])
            .build()
            .unwrap()
    };
    let call = |tool: &str, args: Value| ToolCall {
        tool_call_id: "c".into(),
        tool_name: tool.into(),
        args,
    };
    // Each case through the harness: a refusal is the tool's error, what the model reads.
    let cases: Vec<(ToolCall, Option<&str>)> = vec![
        (call("shell", json!({ "cmd": "ls" })), None),
        (
            call("shell", json!({ "cmd": "sudo rm  -rf /" })),
            Some("matches the denied pattern `rm\\s+-rf`"),
        ),
        (call("other", json!({ "cmd": "rm -rf /" })), None),
        (call("read", json!({ "path": "docs/a.md" })), None),
        (
            call(
                "read",
                json!({ "path": root.join("docs/new.md").to_str().unwrap() }),
            ),
            None,
        ),
        (
            call("read", json!({ "path": "../secrets" })),
            Some("climbs out with `..`"),
        ),
        (
            call("read", json!({ "path": "/etc/passwd" })),
            Some("is not under an allowed root"),
        ),
        (
            call("read", json!({ "files": [{ "path": "/etc/shadow" }] })),
            Some("`/files/0/path`"),
        ),
        (
            call("fetch", json!({ "url": "https://example.com/a" })),
            None,
        ),
        (
            call("fetch", json!({ "url": "https://doc.rust-lang.org/std" })),
            None,
        ),
        (
            call("fetch", json!({ "url": "https://rust-lang.org" })),
            None,
        ),
        (
            call("fetch", json!({ "url": "https://evil-rust-lang.org" })),
            Some("the host `evil-rust-lang.org`"),
        ),
        (
            call("fetch", json!({ "url": "https://example.com.evil.io/" })),
            Some("is not allowed"),
        ),
        (
            call("fetch", json!({ "url": "file:///etc/passwd" })),
            Some("not an http or https URL"),
        ),
        (call("fetch", json!({ "url": 7 })), Some("7 is not a URL")),
    ];
    #[cfg(unix)]
    let cases = {
        let mut cases = cases;
        cases.push((
            call("read", json!({ "path": "escape/x" })),
            Some("is not under an allowed root"),
        ));
        cases
    };
    for (c, expected) in cases {
        let mut h = Harness::new(guard()).with_tools([echo(&c.tool_name)]);
        let action = h.tool_call(c.clone()).await.unwrap().outcome.action;
        match (expected, action) {
            (None, action) => assert_eq!(action, ToolCallAction::Continue, "{c:?}"),
            (Some(part), ToolCallAction::Refuse(why)) => {
                assert!(why.contains(part), "{c:?}: {why}")
            }
            (Some(_), action) => panic!("{c:?}: expected a refusal, got {action:?}"),
        }
    }
}

fn echo(name: &str) -> Arc<dyn Tool> {
    tool(
        name,
        "Echoes",
        json!({ "type": "object" }),
        |args| async move { Ok(args) },
    )
}

#[test]
fn bi_63_validation_configuration_errors() {
    assert!(matches!(
        ToolValidation::builder().deny("a|").build(),
        Err(ConfigError::Pattern { .. })
    ));
    assert!(matches!(
        ToolValidation::builder()
            .deny_for(Vec::<String>::new(), "x")
            .build(),
        Err(ConfigError::Empty { .. })
    ));
    assert!(matches!(
        ToolValidation::builder().hosts(["url"], ["*."]).build(),
        Err(ConfigError::Empty { .. })
    ));
    assert!(matches!(
        ToolValidation::builder().schemas(false).build(),
        Err(ConfigError::NothingToDo(_))
    ));
}

#[tokio::test]
async fn bi_64_parameters_fill_cap_and_pin_per_tool_and_history_records_the_rewrite() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        Turn::empty()
            .tool_call(
                "c1",
                "search",
                json!({ "q": "a", "limit": 5000, "tenant": "other" }),
            )
            .tool_call("c2", "fetch", json!({ "limit": 5000 })),
        Turn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(counted("search", json!({ "type": "object" }), &runs))
        .tool(counted("fetch", json!({ "type": "object" }), &runs))
        .output(
            ToolParameters::builder()
                .default_value("search", "lang", json!("en"))
                .max("search", "limit", 100.0)
                .pin("search", "tenant", |cx: &RequestContext| {
                    cx.resource_id().map(Into::into)
                })
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let cx = RequestContext::new().with_thread("t", "acme");
    let r = agent
        .generate_with("go", GenerateOptions::new().request_context(cx))
        .await
        .unwrap();
    let rewritten = json!({ "q": "a", "limit": 100, "tenant": "acme", "lang": "en" });
    assert_eq!(r.tool_results[0].result, rewritten);
    assert_eq!(r.tool_calls[0].args, rewritten);
    assert_eq!(
        r.tool_results[1].result,
        json!({ "limit": 5000 }),
        "another tool"
    );
    let recorded = model.requests()[1]
        .prompt
        .iter()
        .flat_map(|m| m.tool_calls())
        .next()
        .unwrap()
        .args
        .clone();
    assert_eq!(recorded, rewritten);
}

#[tokio::test]
async fn bi_65_approval_by_tool_and_by_arguments_pauses_and_resumes() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        Turn::empty()
            .tool_call("c1", "refund", json!({ "amount": 20 }))
            .tool_call("c2", "refund", json!({ "amount": 500 }))
            .tool_call("c3", "delete", json!({})),
        Turn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model)
        .tool(counted("refund", json!({ "type": "object" }), &runs))
        .tool(counted("delete", json!({ "type": "object" }), &runs))
        .output(
            ToolApproval::builder()
                .when("refund", |a| a["amount"].as_f64().is_none_or(|n| n > 100.0))
                .tool("delete")
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let paused = agent.generate("go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let waiting: Vec<(&str, &str)> = paused
        .pending_approvals
        .iter()
        .map(|p| (p.tool_call_id.as_str(), p.reason.as_str()))
        .collect();
    assert_eq!(
        waiting,
        [
            ("c2", "`refund` needs a person's approval"),
            ("c3", "`delete` needs a person's approval")
        ]
    );
    assert!(
        paused
            .pending_approvals
            .iter()
            .all(|p| p.processor_id == "tool-approval")
    );
    let done = agent
        .resume(
            Approval::new(&paused.run_id)
                .approve("c2")
                .deny("c3", "never delete"),
        )
        .await
        .unwrap();
    assert_eq!(done.text, "done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(done.tool_results[2].result, json!("never delete"));
}

#[tokio::test]
async fn bi_66_the_result_limiter_cuts_what_the_model_reads_and_only_that() {
    let log = "line of the log\n".repeat(500);
    let read = {
        let log = log.clone();
        tool(
            "read_log",
            "Reads",
            json!({ "type": "object" }),
            move |_| {
                let log = log.clone();
                async move { Ok(json!(log)) }
            },
        )
    };
    let small = tool("status", "Status", json!({ "type": "object" }), |_| async {
        Ok(json!({ "ok": true }))
    });
    let model = ScriptedModel::new([
        Turn::empty()
            .tool_call("c1", "read_log", json!({}))
            .tool_call("c2", "status", json!({})),
        Turn::text("done"),
    ]);
    let store = InMemoryStore::new();
    let agent = Agent::builder()
        .model(model.clone())
        .tool(read)
        .tool(small)
        .memory(Memory::new(store.clone()))
        .output(
            ToolResultLimiter::builder(50)
                .tokenizer(Tokenizer::Estimate)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let cx = RequestContext::new().with_thread("t", "u");
    let r = agent
        .generate_with("go", GenerateOptions::new().request_context(cx))
        .await
        .unwrap();
    assert_eq!(r.tool_results[0].result, json!(log), "the result is whole");
    let read_by_model = model.requests()[1]
        .prompt
        .iter()
        .flat_map(|m| m.content.parts.iter())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.result.clone()),
            _ => None,
        })
        .collect::<Vec<_>>();
    let cut = read_by_model[0].as_str().unwrap();
    assert!(cut.starts_with(&log[..200]));
    assert!(cut.ends_with("[cut: the result has 2000 tokens; the first 50 are shown]"));
    assert_eq!(
        read_by_model[1],
        json!({ "ok": true }),
        "a small result is read whole"
    );
    let saved = store.list_messages("t", None).await.unwrap();
    let kept = saved
        .iter()
        .flat_map(|m| m.content.parts.iter())
        .find_map(|p| match p {
            Part::ToolResult(r) if r.tool_call_id == "c1" => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(kept.result, json!(log));
    assert_eq!(kept.for_model().as_str(), Some(cut));
}

#[tokio::test]
async fn bi_67_injection_offers_tools_by_context_and_step() {
    #[derive(Clone)]
    struct Plan(&'static str);
    let runs = Arc::new(AtomicUsize::new(0));
    let inject = ToolInjection::builder()
        .when(
            counted("export", json!({ "type": "object" }), &runs),
            |cx: &RequestContext, _| cx.get::<Plan>().is_some_and(|p| p.0 == "pro"),
        )
        .when(
            counted("summarise", json!({ "type": "object" }), &runs),
            |_: &RequestContext, step| step >= 1,
        )
        .build()
        .unwrap();
    let model = ScriptedModel::new([
        Turn::empty().tool_call("c1", "export", json!({})),
        Turn::text("done"),
    ]);
    let agent = Agent::builder()
        .model(model.clone())
        .tool(echo("search"))
        .input(inject)
        .build()
        .unwrap();
    let cx = RequestContext::new().with(Plan("pro"));
    let r = agent
        .generate_with("go", GenerateOptions::new().request_context(cx))
        .await
        .unwrap();
    assert!(!r.tool_results[0].is_error, "the injected tool ran");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let names = |n: usize| {
        model.requests()[n]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(0), ["search", "export"]);
    assert_eq!(names(1), ["search", "export", "summarise"]);
    assert!(matches!(
        ToolInjection::builder()
            .always(echo("a"))
            .always(echo("a"))
            .build(),
        Err(ConfigError::Duplicate { .. })
    ));
}

#[test]
fn bi_68_tool_builtins_configuration_errors() {
    assert!(matches!(
        ToolParameters::builder().build(),
        Err(ConfigError::NothingToDo(_))
    ));
    assert!(matches!(
        ToolParameters::builder()
            .min("t", "n", f64::INFINITY)
            .build(),
        Err(ConfigError::OutOfRange { option: "min", .. })
    ));
    assert!(matches!(
        ToolParameters::builder()
            .default_value("", "k", json!(1))
            .build(),
        Err(ConfigError::Empty { .. })
    ));
    assert!(matches!(
        ToolApproval::builder().tool("").build(),
        Err(ConfigError::Empty { .. })
    ));
    assert!(matches!(
        ToolApproval::builder().tool("x").reason(" ").build(),
        Err(ConfigError::Empty { .. })
    ));
    assert!(matches!(
        ToolResultLimiter::builder(10)
            .tools(Vec::<String>::new())
            .build(),
        Err(ConfigError::Empty { .. })
    ));
}

#[tokio::test]
async fn bi_69_a_rewrite_the_tools_schema_rejects_is_refused_before_the_tool_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let schema = json!({
        "type": "object",
        "properties": { "tenant": { "type": "string" } },
        "required": ["tenant"]
    });
    let agent = Agent::builder()
        .model(one_call("report", json!({ "tenant": "acme" })))
        .tool(counted("report", schema, &runs))
        .output(
            ToolParameters::builder()
                .pin("report", "tenant", |_: &RequestContext| Some(json!(42)))
                .build()
                .unwrap(),
        )
        .output(ToolValidation::builder().build().unwrap())
        .build()
        .unwrap();
    let r = agent.generate("go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let why = refusal(&r);
    assert!(
        why.contains("`/tenant`: 42 is not of type \"string\""),
        "{why}"
    );
    assert_eq!(
        r.tool_calls[0].args,
        json!({ "tenant": 42 }),
        "the call as rewritten"
    );
}
