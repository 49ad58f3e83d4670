//! A run you can look at: the recorder's timeline, as JSON and as a page, rendered in a real
//! browser.

use crate::common;

use common::*;
use processors::prelude::*;
use processors::trace::{EntryKind, Recorder, Timeline};
use std::path::PathBuf;
use std::process::Command;
use tracing::instrument::WithSubscriber;

/// A run with two steps (a tool call, then an answer), a stream processor that replaces one
/// delta and drops another, an input processor, and a guard that rejects the first answer.
async fn recorded_run() -> (Timeline, GenerateResult) {
    let m = ScriptedModel::new([
        Turn::empty().tool_call("call-1", "weather", serde_json::json!({"city": "Oslo"})),
        Turn::deltas(["<b>first</b>"]),
        Turn::deltas(["sunny", " secret", " today"]),
    ]);
    let agent = Agent::builder()
        .name("weather-desk")
        .model(m)
        .tool(echo_tool("weather"))
        .max_processor_retries(1)
        .input(Probe::new("tag").input(|a| {
            let mut ms = a.messages.clone();
            ms[0].set_text("tagged");
            Ok(ms.into())
        }))
        .output(Probe::new("redact").stream(|a| {
            Ok(match a.chunk.text_delta() {
                Some(" secret") => StreamAction::Drop,
                Some("sunny") => a.chunk.clone().map_text(|_| "SUNNY".to_owned()).into(),
                _ => StreamAction::Pass,
            })
        }))
        .output(Probe::new("judge").output_step(|a| {
            if a.text.contains("first") {
                return Err(a.abort().reason("too bold").retry(true).into());
            }
            Ok(().into())
        }))
        .build()
        .unwrap();
    record(&agent).await
}

/// Runs `agent` on "hi" under a recorder: its timeline and its result.
async fn record(agent: &Agent) -> (Timeline, GenerateResult) {
    let recorder = Recorder::new();
    let result = agent
        .generate("hi")
        .with_subscriber(recorder.clone())
        .await
        .unwrap();
    (recorder.timeline(), result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_has_the_run_its_steps_hooks_chunks_tools_and_retries() {
    let (t, r) = recorded_run().await;
    assert_eq!(r.text, "SUNNY today");
    let run: Vec<_> = t.runs().collect();
    assert_eq!(run.len(), 1);
    assert_eq!(run[0].field("run_id").as_deref(), Some(r.run_id.as_str()));
    assert_eq!(run[0].field("outcome").as_deref(), Some("completed"));
    let steps: Vec<_> = t
        .steps()
        .map(|s| (s.field("step").unwrap(), s.field("finish_reason").unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("0".into(), "tool-calls".into()),
            ("1".into(), "retry".into()),
            ("2".into(), "stop".into())
        ]
    );
    let last = t.steps().last().unwrap();
    let chunks: Vec<_> = t
        .within(last.index)
        .filter(|e| e.target == "processors::chunks")
        .filter(|e| e.field("processor").as_deref() == Some("redact"))
        .filter_map(|e| Some((e.field("text")?, e.field("outcome")?, e.field("text_out"))))
        .collect();
    assert_eq!(
        chunks,
        [
            (
                "sunny".to_owned(),
                "replaced".to_owned(),
                Some("SUNNY".to_owned())
            ),
            (" secret".to_owned(), "dropped".to_owned(), None),
            (" today".to_owned(), "pass".to_owned(), None),
        ]
    );
    let tools: Vec<_> = t.spans("tool").map(|e| e.field("name").unwrap()).collect();
    assert_eq!(tools, ["weather"]);
    let retry = t
        .entries
        .iter()
        .find(|e| e.kind == EntryKind::Event && e.name.starts_with("step rejected"))
        .expect("a retry event");
    assert_eq!(retry.field("reason").as_deref(), Some("too bold"));
    let tag = t
        .spans("processor")
        .find(|e| {
            e.field("id").as_deref() == Some("tag")
                && e.field("hook").as_deref() == Some("process_input")
        })
        .unwrap();
    assert_eq!(tag.field("outcome").as_deref(), Some("replaced"));
    assert!(tag.end_us.is_some());

    let json = t.to_json();
    assert_eq!(json["entries"].as_array().unwrap().len(), t.entries.len());
    let page = t.to_html();
    for id in ["step-0", "step-1", "step-2"] {
        assert!(page.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
    assert!(
        page.contains("&lt;b&gt;first&lt;/b&gt;"),
        "chunk text is escaped"
    );
    assert!(!page.contains("<b>first</b>"));
    assert!(!page.contains("<script"), "the page runs no script");
}

/// A model call the provider refused and an error processor had tried again is a step of the
/// result's (finish reason `retry`): the page shows it as a card of its own, numbered as the
/// result numbers it, so the page has as many step cards as the result has steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_each_step_of_the_result_with_its_number() {
    let model = ScriptedModel::new([
        Turn::error(ApiError::new(400, "prompt too long")),
        Turn::text("Short enough."),
    ]);
    let agent = Agent::builder()
        .name("retrying")
        .model(model)
        .error(Probe::new("shorten").api_error(|_| Ok(ApiErrorAction::Retry)))
        .build()
        .unwrap();
    let (timeline, result) = record(&agent).await;
    let numbers: Vec<u32> = result.steps.iter().map(|s| s.step_number).collect();
    assert_eq!(numbers, [0, 1]);
    assert_eq!(result.steps[0].finish_reason, FinishReason::Retry);
    let page = timeline.to_html();
    assert_eq!(
        page.matches("<section class=\"step ").count(),
        result.steps.len()
    );
    assert!(page.contains("<section class=\"step retry\" id=\"step-0\"><h2>Step 0 "));
    assert!(
        page.contains("prompt too long"),
        "the refusal is on its card"
    );
    assert!(page.contains("id=\"step-1\""));
    assert!(
        page.contains("· 2 steps ·"),
        "the header counts the result's steps"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_models_call_outside_a_run_is_a_card_of_its_own() {
    use processors::model::{LanguageModelExt, ModelRequest};
    let shout = Probe::new("shout").stream(|a| {
        Ok(match a.chunk.text_delta() {
            Some(t) => a.chunk.clone().map_text(|_| t.to_uppercase()).into(),
            None => StreamAction::Pass,
        })
    });
    let model = ScriptedModel::new([Turn::deltas(["hello ", "there"])])
        .named("small")
        .with_processors()
        .output(shout)
        .build()
        .unwrap();
    let recorder = Recorder::new();
    let request = ModelRequest {
        prompt: vec![Message::user("hi")],
        ..Default::default()
    };
    async {
        let stream = model.stream(request).await.unwrap();
        let _: Vec<_> = futures::StreamExt::collect(stream).await;
    }
    .with_subscriber(recorder.clone())
    .await;
    let page = recorder.timeline().to_html();
    assert!(!page.contains("No run recorded"), "{page}");
    assert!(page.contains("<h1>Model call <code>small</code>"), "{page}");
    assert!(
        page.contains("<section class=\"step completed\" id=\"call\">"),
        "{page}"
    );
    assert!(
        page.contains("<code>shout</code>"),
        "its stream processor is on the card"
    );
}

/// A recorder with a limit keeps the first entries of a long run and counts the rest: the
/// page and its JSON say how many were not kept, and the memory it holds is bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorder_with_a_limit_keeps_the_first_entries_and_counts_the_rest() {
    let agent = Agent::builder()
        .model(ScriptedModel::cycle([Turn::repeated("word ", 500)]))
        .output(Probe::new("pass").stream(|_| Ok(StreamAction::Pass)))
        .build()
        .unwrap();
    let unlimited = Recorder::new();
    let whole = agent
        .generate("hi")
        .with_subscriber(unlimited.clone())
        .await
        .unwrap();
    let all = unlimited.timeline().entries.len();
    assert!(all > 500, "each chunk's way is recorded: {all}");
    let recorder = Recorder::with_limit(100);
    let result = agent
        .generate("hi")
        .with_subscriber(recorder.clone())
        .await
        .unwrap();
    assert_eq!(result.text, whole.text, "the run is the same");
    let timeline = recorder.timeline();
    assert_eq!(timeline.entries.len(), 100);
    assert_eq!(timeline.dropped as usize, all - 100);
    assert_eq!(timeline.runs().count(), 1, "the run's span came first");
    assert_eq!(timeline.to_json()["dropped"], all as u64 - 100);
    assert!(
        timeline
            .to_html()
            .contains(&format!("{} more spans and events came after", all - 100))
    );
    assert!(unlimited.timeline().to_json().get("dropped").is_none());
    // Cleared, it keeps its limit.
    recorder.clear();
    agent
        .generate("hi")
        .with_subscriber(recorder.clone())
        .await
        .unwrap();
    assert_eq!(recorder.timeline().entries.len(), 100);
}

/// The browser, when the machine has one (`scripts/chromium.sh` installs it).
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("which").arg(name).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

fn headless(browser: &PathBuf, profile: &std::path::Path) -> Command {
    let mut c = Command::new(browser);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// The page's DOM after the browser rendered it, and the browser's log.
fn render_dom(
    browser: &PathBuf,
    dir: &std::path::Path,
    page: &std::path::Path,
) -> (String, String) {
    let out = headless(browser, &dir.join("profile"))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), log)
}

/// A screenshot of the page, 1200 by 2400 pixels, as PNG bytes.
fn screenshot(
    browser: &PathBuf,
    dir: &std::path::Path,
    page: &std::path::Path,
    name: &str,
) -> Vec<u8> {
    let shot = dir.join(name);
    let out = headless(browser, &dir.join("profile"))
        .arg("--window-size=1200,2400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    png
}

/// The console messages in a browser's log (`--enable-logging=stderr` writes each as a line
/// tagged `CONSOLE`, whatever its level).
fn console(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_renders_in_a_browser_with_every_step_and_nothing_on_the_console() {
    // The test's setup installs the browser when the machine has none.
    let browser = chromium().or_else(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/chromium.sh");
        let installed = Command::new("bash").arg(script).status().ok()?;
        installed.success().then(chromium).flatten()
    });
    let Some(browser) = browser else {
        if std::env::var_os("PROCESSORS_SKIP_BROWSER").is_some() {
            eprintln!("skipped: no browser, and PROCESSORS_SKIP_BROWSER is set");
            return;
        }
        panic!(
            "no chromium on this machine and `scripts/chromium.sh` could not install Debian's; install one, or set PROCESSORS_SKIP_BROWSER=1 to skip this test"
        );
    };
    let (t, _) = recorded_run().await;
    let dir = std::env::temp_dir().join(format!("processors-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("run.html");
    std::fs::write(&page, t.to_html()).unwrap();

    // The check for console messages finds them: a page that logs an error is caught.
    let control = dir.join("control.html");
    std::fs::write(
        &control,
        "<html><body><script>console.error('control-error')</script></body></html>",
    )
    .unwrap();
    let seen = render_dom(&browser, &dir, &control);
    assert!(
        console(&seen.1).iter().any(|l| l.contains("control-error")),
        "the console check misses a logged error: {}",
        seen.1
    );

    let (dom_text, log) = render_dom(&browser, &dir, &page);
    for step in ["Step 0", "Step 1", "Step 2"] {
        assert!(dom_text.contains(step), "the rendered page lacks {step}");
    }
    assert!(dom_text.contains("weather-desk"));
    assert_eq!(
        console(&log),
        Vec::<&str>::new(),
        "the page logged to the console"
    );

    // A screenshot of the timeline against one of an empty page of the same size: a blank
    // or unstyled render compresses to nearly nothing, the timeline does not.
    let blank = dir.join("blank.html");
    std::fs::write(&blank, "<html><body></body></html>").unwrap();
    let empty = screenshot(&browser, &dir, &blank, "blank.png");
    let png = screenshot(&browser, &dir, &page, "run.png");
    assert!(
        png.len() > 8 * empty.len(),
        "the screenshot looks blank ({} bytes; an empty page: {} bytes)",
        png.len(),
        empty.len()
    );
    if let Some(keep) = std::env::var_os("PROCESSORS_KEEP_SCREENSHOT") {
        std::fs::write(keep, &png).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A processor in shadow: its decision is an event on the page.
#[tokio::test]
async fn the_run_page_lists_shadow_decisions() {
    let recorder = Recorder::new();
    let guard = Probe::new("guard").output_step(|a| Err(a.abort().reason("too blunt").into()));
    let agent = Agent::builder()
        .model(ScriptedModel::new([Turn::text("ok")]))
        .output(shadow(guard))
        .build()
        .unwrap();
    // The decision is recorded while the run goes on (docs/semantics.md, "Shadow").
    agent
        .generate("hi")
        .with_subscriber(recorder.clone())
        .await
        .unwrap();
    let page = recorder.timeline().to_html();
    assert!(page.contains("shadow decision"), "{page}");
    assert!(page.contains("would have aborted the run: too blunt"));
}
