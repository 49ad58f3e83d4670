//! Procedural macros of the processors framework: `#[processor]`, `agent!` and `#[tool]`.
//!
//! Use them through the `processors` crate, which documents every option. Generated code names
//! `::processors::__private`; a crate that depends on the runtime directly, not on the facade,
//! says so with `crate = processors_runtime`. Set `PROCESSORS_DEBUG_EXPANSION=1` while building
//! to print what each invocation expands to.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod agent;
mod errors;
mod hooks;
mod names;
mod processor;
#[cfg(test)]
mod test_support;
mod tool;
mod types;

use proc_macro::TokenStream;

/// Turns a function or an `impl` block of hook methods into a processor.
///
/// See `processors::processor` for the options and examples.
#[proc_macro_attribute]
pub fn processor(attr: TokenStream, item: TokenStream) -> TokenStream {
    debug("#[processor]", processor::expand(attr.into(), item.into())).into()
}

/// Declares a statically dispatched agent, checking its configuration at compile time.
///
/// See `processors::agent` for the syntax and the rules.
#[proc_macro]
pub fn agent(input: TokenStream) -> TokenStream {
    debug("agent!", agent::expand(input.into())).into()
}

/// Turns an `async fn` into a tool: its doc comment is the description, its parameters give
/// the JSON Schema, and a type named after it (`weather` → `WeatherTool`) goes in an agent's
/// tools.
///
/// See `processors::tool` for the rules and examples.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    debug("#[tool]", tool::expand(attr.into(), item.into())).into()
}

/// Prints an expansion to stderr when `PROCESSORS_DEBUG_EXPANSION` is set.
fn debug(what: &str, tokens: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    if std::env::var_os("PROCESSORS_DEBUG_EXPANSION").is_some() {
        eprintln!("{what} expands to:\n{tokens}\n");
    }
    tokens
}
