//! Procedural macros of the processors framework: `#[processor]` and `agent!`.
//!
//! Use them through the `processors` crate, which documents every option.

mod agent;
mod errors;
mod hooks;
mod names;
mod processor;

use proc_macro::TokenStream;

/// Turns a function or an `impl` block of hook methods into a processor.
///
/// See `processors::processor` for the options and examples.
#[proc_macro_attribute]
pub fn processor(attr: TokenStream, item: TokenStream) -> TokenStream {
    processor::expand(attr.into(), item.into()).into()
}

/// Declares a statically dispatched agent, checking its configuration at compile time.
///
/// See `processors::agent` for the syntax and the rules.
#[proc_macro]
pub fn agent(input: TokenStream) -> TokenStream {
    agent::expand(input.into()).into()
}
