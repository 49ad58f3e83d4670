//! The facade's integration tests, in one binary: one module a subject, the helpers they share
//! at the root. Apart, in binaries of their own: the compile-fail suites (`ui`, `ui_lints`),
//! `allocations`, `memory` and `soak` (each counts allocations with a global allocator of its
//! own), `workflows` (which CI also runs under Miri) and `otel` (run with its feature).

#[path = "../common/mod.rs"]
#[macro_use]
mod common;
#[path = "../../benches/support/mod.rs"]
mod support;

mod behaviours;
mod file_options;
mod middleware;
mod readme_testing;
mod robustness;
mod scripted_model;
mod shadow;
mod sync_hooks;
mod sync_stream;
mod tools;
mod trace_page;
mod tracing;
mod typed_tools;
mod yardsticks;
