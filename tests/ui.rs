//! Compile-time behaviour of `#[processor]` and `agent!`: what compiles, and the error every
//! mistake gets.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    // The pass cases make trybuild build the fail cases too (`cargo build`, not `cargo
    // check`), which the cases checked when the code is instantiated need
    // (`agent_in_generic_code_checked_when_instantiated`, `agent_processors_by_hand_…`): run
    // the suite whole, not filtered to those.
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
