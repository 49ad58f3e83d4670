//! The gateway through the official OpenAI and Anthropic Python SDKs (installed from PyPI into
//! `target/sdk-venv` by `scripts/sdk-venv.sh`) and through `curl`.

mod support;

use std::process::Command;
use support::*;

/// The models of tests/sdk/clients.py, before the fake upstream's.
fn config(upstream: &Upstream) -> String {
    format!(
        r#"max_body_bytes = 4096

[upstreams.offline]
protocol = "scripted"
turns = [["Write to ", "jane@example.com", "."]]

[upstreams.leaky]
protocol = "scripted"
turns = [["The answer is long enough to stream. ", "Then ", "it says jane@example.com", " and more."]]

[upstreams.tools]
protocol = "openai"
base_url = "{tools}"
max_retries = 0

[upstreams.busy]
protocol = "openai"
base_url = "{busy}"
max_retries = 0

[models.assistant]
upstream = "offline"
policy = "guarded"

[models.leaky]
upstream = "leaky"
policy = "strict"

[models.tools]
upstream = "tools"

[models.busy]
upstream = "busy"

{key}
[policies.guarded]
input = [{{ processor = "regex-filter", presets = ["secrets"], strategy = "block" }}]
output = [{{ processor = "regex-filter", presets = ["pii"] }}]

[policies.strict]
output = [{{ processor = "regex-filter", presets = ["pii"], strategy = "block" }}]
"#,
        tools = upstream.base_url("openai", "tool"),
        busy = upstream.base_url("openai", "status-429"),
        key = key_entry(""),
    )
}

fn python() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new("bash")
        .arg(format!("{root}/scripts/sdk-venv.sh"))
        .output()
        .expect("bash runs scripts/sdk-venv.sh");
    assert!(
        out.status.success(),
        "scripts/sdk-venv.sh could not install the SDKs from PyPI:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdks_speak_to_the_gateway() {
    let python = tokio::task::spawn_blocking(python).await.unwrap();
    let upstream = Upstream::start().await;
    let gw = start(&config(&upstream)).await;
    let url = gw.url("");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk/clients.py"))
            .env("GATEWAY_URL", url)
            .env("GATEWAY_KEY", KEY)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.ends_with("all checks passed\n"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_streams_an_answer() {
    let upstream = Upstream::start().await;
    let gw = start(&config(&upstream)).await;
    let url = gw.url("/v1/chat/completions");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("curl")
            .args(["-sSN", "--fail-with-body", &url, "-H"])
            .arg(format!("Authorization: Bearer {KEY}"))
            .args([
                "-H",
                "content-type: application/json",
                "-d",
                r#"{"model":"assistant","stream":true,"messages":[{"role":"user","content":"Who can help?"}]}"#,
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{body}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(openai_text(&body).0, "Write to [EMAIL].");
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
}
