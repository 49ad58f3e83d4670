//! The gateway's file: every mistake reported at once, each with its line and column.

use processors_config::Loader;
use processors_gateway::{Config, Gateway, KeyHash};

fn errors(text: &str) -> String {
    let config = match Config::from_str("gateway.toml", text, None) {
        Ok(config) => config,
        Err(e) => return e.to_string(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    match runtime.block_on(Gateway::with(&config, &Loader::new(), &|_| None)) {
        Ok(_) => panic!("the file loaded"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_embedded_default_config_builds() {
    let mut config = Config::from_str("default", processors_gateway::DEFAULT_CONFIG, None).unwrap();
    assert!(config.keys.is_empty());
    let key = config.add_development_key().unwrap();
    assert!(key.starts_with("pgw-dev-"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(Gateway::with(&config, &Loader::new(), &|_| None))
        .unwrap();
}

#[test]
fn every_mistake_of_the_routes_and_policies_is_reported_with_its_place() {
    let text = format!(
        r#"[upstreams.openai]
protocol = "openai"
api_key_env = "NO_SUCH_KEY"

[models.a]
upstream = "opneai"

[models.b]
upstream = "openai"
policy = "strict"

[models.c]
upstream = "openai"
policy = "missing"

[[keys]]
name = "k"
sha256 = "{}"
models = ["zzz"]

[policies.strict]
input = ["unicode-normalizr"]
output = ["unicode-normalizer"]
"#,
        KeyHash::of("x")
    );
    assert_eq!(
        errors(&text),
        "gateway.toml:1:1: the upstream's key is read from the environment variable NO_SUCH_KEY, which is not set; set it, or remove `api_key_env` for an upstream without a key\n\
         gateway.toml:6:12: there is no upstream `opneai`; the upstreams: openai\n\
         gateway.toml:14:10: there is no policy `missing`; the policies: strict\n\
         gateway.toml:19:11: the key `k` may call `zzz`, which is not a model alias; the aliases: a, b, c\n\
         gateway.toml:22:10: unknown processor `unicode-normalizr` (did you mean `unicode-normalizer`?)\n\
         gateway.toml:23:11: `unicode-normalizer` is in `output` but has no output hook (its hooks: {\"process_input\"}); it belongs in `input`"
    );
}

#[test]
fn a_key_hash_must_be_sha256_hex() {
    let text = "[[keys]]\nname = \"k\"\nsha256 = \"plain-text-key\"\n";
    let e = errors(text);
    assert!(
        e.starts_with("gateway.toml:3:10: a key's `sha256` is 64 hex digits"),
        "{e}"
    );
}

#[test]
fn an_unknown_key_is_named() {
    let e = errors("listen = \"127.0.0.1:1\"\nmax_body = 10\n");
    assert!(
        e.starts_with("gateway.toml:2:1: unknown field `max_body`"),
        "{e}"
    );
}

#[test]
fn a_scripted_upstream_needs_turns() {
    let e = errors("[upstreams.s]\nprotocol = \"scripted\"\n\n[models.m]\nupstream = \"s\"\n");
    assert!(
        e.contains("a `scripted` upstream answers with its `turns`"),
        "{e}"
    );
}

#[test]
fn a_key_without_slots_is_refused() {
    let text = format!(
        "[upstreams.s]\nprotocol = \"scripted\"\nturns = [\"hi\"]\n\n[models.m]\nupstream = \"s\"\n\n[[keys]]\nname = \"k\"\nsha256 = \"{}\"\nmax_concurrent = 0\n",
        KeyHash::of("x")
    );
    assert!(errors(&text).contains("has `max_concurrent = 0`"));
}

#[test]
fn memory_needs_its_store_settings() {
    let e = errors("[memory]\nstore = \"sqlite\"\n");
    assert!(
        e.starts_with("gateway.toml:1:1: `store = \"sqlite\"` needs a `path`"),
        "{e}"
    );
    let e = errors("[memory]\nstore = \"postgres\"\nurl_env = \"NO_SUCH_URL\"\n");
    assert!(e.contains("NO_SUCH_URL"), "{e}");
}
