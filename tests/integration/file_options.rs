//! A processor of one's own in files, its `#[config]` parameters its options
//! (`#[processor(.., options)]`, docs/config.md "Your processors").

use processors::config::{Loader, Registry};
use processors::prelude::*;

/// Ends the run when the input holds one of the words.
#[processor(input, options)]
fn blocklist(
    messages: Vec<Message>,
    /// The words that end the run, lowercase.
    #[config]
    words: &[String],
    /// Whether a match only warns.
    #[config]
    warn_only: Option<bool>,
) -> Result<(), ProcessorError> {
    let text = messages
        .iter()
        .map(|m| m.text().to_lowercase())
        .collect::<String>();
    match words.iter().find(|w| text.contains(w.as_str())) {
        Some(w) if warn_only == Some(true) => Err(Abort::new().reason(format!("`{w}`")).warn()),
        Some(w) => Err(ProcessorError::abort(format!("`{w}` is not allowed"))),
        None => Ok(()),
    }
}

fn loader() -> Loader {
    Loader::new().registry(Registry::new().register::<Blocklist>("blocklist"))
}

#[tokio::test]
async fn a_processors_config_parameters_are_its_options_in_files() {
    let file = r#"
model = { scripted = ["ok"] }
input = [{ processor = "blocklist", words = ["refund"] }]
"#;
    let agent = loader().agent_str("agent.toml", file).unwrap();
    let result = agent.generate("I want a refund").await.unwrap();
    let tripwire = result.tripwire.expect("the word ends the run");
    assert_eq!(tripwire.reason, "`refund` is not allowed");
    assert_eq!(tripwire.processor_id, "blocklist");
    // An option left out is `None`; given, it is read.
    let file = file.replace(
        "words = [\"refund\"]",
        "words = [\"refund\"], warn_only = true",
    );
    let agent = loader().agent_str("agent.toml", &file).unwrap();
    let result = agent.generate("I want a refund").await.unwrap();
    assert!(result.tripwire.is_none());
    assert_eq!(result.text, "ok");
    // The struct is still built in Rust as before.
    assert_eq!(Blocklist::new(vec!["x".into()], None).words, ["x"]);
}

#[tokio::test]
async fn an_unknown_or_mistyped_option_is_refused_at_its_place_in_the_file() {
    let file =
        "model = { scripted = [] }\ninput = [{ processor = \"blocklist\", word = [\"refund\"] }]\n";
    let error = loader()
        .agent_str("agent.toml", file)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        "agent.toml:2:10: `blocklist`: the option `words` is required; add it, like `words = ...`\n\
         agent.toml:2:37: `blocklist` has no option `word` (did you mean `words`?); its options: words, warn_only"
    );

    let file =
        "model = { scripted = [] }\ninput = [{ processor = \"blocklist\", words = \"refund\" }]\n";
    let error = loader()
        .agent_str("agent.toml", file)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("invalid type: string \"refund\", expected a sequence"),
        "{error}"
    );
}
