//! `agent!`: parse the fields, check them into a configuration, expand to a statically
//! dispatched agent with compile-time checks.

mod config;
mod expand;
mod key;
mod parse;

use crate::errors::Errors;
use config::Config;
use parse::AgentInput;
use proc_macro2::TokenStream;
use quote::quote;

pub fn expand(input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let input = errors.ok(syn::parse2::<AgentInput>(input));
    let config = input.map(|input| {
        input.errors.into_iter().for_each(|e| errors.push(e));
        Config::from_fields(input.fields, &mut errors)
    });
    match (errors.finish(), config) {
        (result, Some(config)) => expand::agent(&config, result.err()),
        (result, None) => {
            let errors = result.err().map(syn::Error::into_compile_error);
            // A value of the right kind, so code using the agent reports nothing more.
            quote!({ #errors ::core::unreachable!() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::compile_errors_in;
    use quote::ToTokens;
    use syn::{Expr, Stmt};

    fn expanded(tokens: TokenStream) -> syn::Block {
        syn::parse2(expand(tokens)).expect("the expansion parses as a block")
    }

    fn errors_of(tokens: TokenStream) -> Vec<String> {
        compile_errors_in(&expanded(tokens))
    }

    /// The methods of the builder chain that ends the block, in call order, and the path the
    /// chain starts from.
    fn builder_chain(block: &syn::Block) -> (String, Vec<String>) {
        let Some(Stmt::Expr(mut e, None)) = block.stmts.last().cloned() else {
            panic!("the block ends in an expression");
        };
        let mut methods = Vec::new();
        while let Expr::MethodCall(call) = e {
            methods.push(call.method.to_string());
            e = *call.receiver;
        }
        methods.reverse();
        (e.to_token_stream().to_string(), methods)
    }

    #[test]
    fn a_valid_agent_expands_to_a_builder_chain() {
        let block = expanded(quote!(
            model: m, input: [A], output: [B, memory], memory: mem, max_steps: 2, name: "a"
        ));
        assert!(compile_errors_in(&block).is_empty());
        let (start, methods) = builder_chain(&block);
        assert_eq!(start, ":: processors :: __private :: Agent :: builder ()");
        assert_eq!(
            methods,
            [
                "name",
                "memory",
                "max_steps",
                "input_pipeline",
                "output_pipeline",
                "error_pipeline",
                "__build_checked"
            ]
        );
    }

    #[test]
    fn the_crate_key_anywhere_sets_the_path_of_everything_generated() {
        let block = expanded(quote!(output: [B], crate: processors_runtime, model: m));
        assert!(compile_errors_in(&block).is_empty());
        let (start, _) = builder_chain(&block);
        assert_eq!(
            start,
            "processors_runtime :: __private :: Agent :: builder ()"
        );
        assert!(
            !block
                .to_token_stream()
                .to_string()
                .contains(":: processors ::"),
            "nothing names the default path"
        );
    }

    #[test]
    fn unknown_key_suggests_the_closest_and_lists_all() {
        let errors = errors_of(quote!(model: m, ouput: [A]));
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0]
                .starts_with("unknown key `ouput` (did you mean `output`?); valid keys: name,"),
            "{errors:?}"
        );
        assert!(errors[0].ends_with(", on_violation, crate"), "{errors:?}");
    }

    #[test]
    fn a_duplicate_key_is_reported_at_both_places() {
        let errors = errors_of(quote!(model: m, max_steps: 1, model: n));
        assert_eq!(
            errors,
            [
                "`model` is given twice; keep one",
                "`model` is first given here"
            ]
        );
    }

    #[test]
    fn parse_and_validation_mistakes_are_reported_together() {
        let errors = errors_of(quote!(
            model: m, output: [A B], input: [memory], max_processor_retries: -1, colour: 1
        ));
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert_eq!(errors[0], "expected `,`", "the parse error comes first");
        for expected in [
            "non-negative integer literal",
            "unknown key `colour`",
            "there is no `memory:` key",
        ] {
            assert!(errors.iter().any(|e| e.contains(expected)), "{errors:?}");
        }
    }

    #[test]
    fn a_model_whose_value_does_not_parse_is_not_also_missing() {
        let errors = errors_of(quote!(model: 1 +, output: [A]));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(!errors[0].contains("needs a model"), "{errors:?}");
        assert!(errors_of(quote!(input: [A]))[0].starts_with("agent! needs a model"));
    }

    #[test]
    fn a_missing_colon_is_reported_and_the_next_fields_still_checked() {
        let errors = errors_of(quote!(model m, max_steps: 0));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert_eq!(errors[0], "expected `:` after `model`, as in `model: ...`");
        assert!(errors[1].starts_with("`max_steps: 0`"), "{errors:?}");
    }

    #[test]
    fn list_and_single_values_are_kept_apart() {
        let errors = errors_of(quote!(model: [m], output: B));
        assert_eq!(
            errors,
            [
                "`model` takes one value, not a list",
                "`output` takes a list in brackets: `output: [...]`"
            ]
        );
        assert!(errors_of(quote!(model: m, name: ["a", "b"].join("-"))).is_empty());
    }

    #[test]
    fn entries_are_typed_by_the_compiler_not_by_their_spelling() {
        let block = expanded(quote!(
            model: m, output: [Filter { words: vec!["x"] }, Strict, (Guard)]
        ));
        let text = block.to_token_stream().to_string();
        for entry in ["Filter { words : vec ! [\"x\"] }", "Strict", "Guard"] {
            assert!(
                text.contains(&format!(":: processors :: __private :: Entry ({entry})")),
                "{entry} is bound through the probe, its parentheses gone: {text}"
            );
        }
        assert!(
            !text.contains("Filter as"),
            "no type is read off an entry's spelling"
        );
        assert!(
            text.contains("const OUTPUT_2_AND_0"),
            "ids are compared by the compiler"
        );
    }

    #[test]
    fn the_checks_of_entries_stay_when_the_invocation_has_other_mistakes() {
        let block = expanded(quote!(model: m, input: [Shout], colour: 1));
        assert_eq!(compile_errors_in(&block).len(), 1);
        let text = block.to_token_stream().to_string();
        assert!(
            text.contains("as :: processors :: __private :: InputProcessor > :: __in_input"),
            "the placement check is emitted, so it is reported in the same build: {text}"
        );
        assert!(!text.contains("__build_checked"), "no agent is built");
    }

    #[test]
    fn numeric_keys_take_literals_and_constants() {
        let block = expanded(quote!(model: m, max_steps: limits::STEPS, max_processor_retries: 2));
        assert!(compile_errors_in(&block).is_empty());
        let text = block.to_token_stream().to_string();
        assert!(text.contains("const __PROCESSORS_MAX_STEPS : u32 = limits :: STEPS ;"));
        assert!(text.contains(". max_steps (__PROCESSORS_MAX_STEPS)"));
        assert!(text.contains(". max_processor_retries (2)"));
        let errors = errors_of(quote!(model: m, max_steps: steps + 1));
        assert!(
            errors[0]
                .starts_with("`max_steps` takes a non-negative integer literal or a `const` item"),
            "{errors:?}"
        );
    }
}
