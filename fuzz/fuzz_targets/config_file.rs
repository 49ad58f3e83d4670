//! Agent and list files from arbitrary text: loading never panics, and every mistake it
//! reports has a place inside the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use processors_config::{LoadError, Loader};

/// Each diagnostic names a line and column of the text (a column may be one past the line's
/// end, where a missing token was expected).
fn check(text: &str, result: Result<(), LoadError>) {
    let Err(error) = result else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    for d in error.diagnostics() {
        assert!(d.line >= 1 && d.line <= lines.len(), "{d} in {text:?}");
        let width = lines[d.line - 1].chars().count();
        assert!(d.column >= 1 && d.column <= width + 1, "{d} in {text:?}");
        assert!(!d.message.is_empty());
    }
    assert!(!error.to_string().is_empty());
}

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    // No provider key: a model named by id fails to build instead of reaching the network.
    let loader = Loader::new().env(|_| None);
    check(&text, loader.agent_str("fuzz.toml", &text).map(|_| ()));
    check(&text, loader.lists_str("fuzz.toml", &text).map(|_| ()));
});
