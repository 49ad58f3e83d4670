//! Compile-time behaviour of `#[processor]` and `agent!`: what compiles, and the error every
//! mistake gets.

/// The flags trybuild gives rustc (`--cfg trybuild --verbose -A dead_code`), plus the width
/// it asks for when it builds the cases. trybuild builds the cases' dependencies once with the
/// first flags and then the cases with the second, and since the flags are part of every
/// crate's fingerprint, cargo built the whole dependency tree twice. Given to cargo as
/// `CARGO_ENCODED_RUSTFLAGS`, which takes precedence over the flags trybuild passes as
/// `--config`, one set serves both builds; the diagnostics are those trybuild would get.
const RUSTFLAGS: &[&str] = &[
    "--cfg",
    "trybuild",
    "--verbose",
    "-A",
    "dead_code",
    "--diagnostic-width=140",
];

#[test]
fn ui() {
    if std::env::var_os("CARGO_ENCODED_RUSTFLAGS").is_none() {
        // SAFETY: this binary's one test, before trybuild starts a thread or a process; no
        // other thread reads the environment meanwhile.
        unsafe { std::env::set_var("CARGO_ENCODED_RUSTFLAGS", RUSTFLAGS.join("\x1f")) };
    }
    let t = trybuild::TestCases::new();
    // The pass cases make trybuild build the fail cases too (`cargo build`, not `cargo
    // check`), which the cases checked when the code is instantiated need
    // (`agent_in_generic_code_checked_when_instantiated`, `agent_processors_by_hand_…`): run
    // the suite whole, not filtered to those.
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
