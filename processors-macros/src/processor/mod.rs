//! `#[processor]`: parse the attribute and the item, check them into a [`model::Processor`],
//! expand it (or, after errors, a fallback).

mod attr;
mod expand;
mod model;

use crate::errors::Errors;
use proc_macro2::TokenStream;
use quote::quote;

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let options = errors.ok(syn::parse2::<attr::RawOptions>(attr));
    let parsed: syn::Item = match syn::parse2(item.clone()) {
        Ok(parsed) => parsed,
        Err(e) => {
            errors.push(e);
            let errors = errors.into_compile_errors();
            return quote!(#errors #item);
        }
    };
    let Some(processor) = model::Processor::from_item(&parsed, options, &mut errors) else {
        let errors = errors.into_compile_errors();
        return quote!(#errors #parsed);
    };
    match errors.finish() {
        Ok(()) => expand::processor(&processor),
        Err(e) => expand::fallback(&processor, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{compile_errors, impl_of, impls_of};
    use syn::{ImplItem, Item};

    fn expanded(attr: TokenStream, item: TokenStream) -> syn::File {
        syn::parse2(expand(attr, item)).expect("the expansion parses as items")
    }

    fn assoc_type(imp: &syn::ItemImpl, name: &str) -> String {
        imp.items
            .iter()
            .find_map(|i| match i {
                ImplItem::Type(t) if t.ident == name => Some(t.ty.to_token_stream().to_string()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no `type {name}`"))
    }

    fn assoc_const(imp: &syn::ItemImpl, name: &str) -> String {
        imp.items
            .iter()
            .find_map(|i| match i {
                ImplItem::Const(c) if c.ident == name => Some(c.expr.to_token_stream().to_string()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no `const {name}`"))
    }

    /// The inherent `ID` constant generated for `self_ty`.
    fn id_of(file: &syn::File, self_ty: &str) -> String {
        let generated = impls_of(file, "", self_ty)
            .into_iter()
            .filter(|imp| {
                imp.items
                    .iter()
                    .any(|i| matches!(i, ImplItem::Const(c) if c.ident == "ID"))
            })
            .collect::<Vec<_>>();
        assert_eq!(generated.len(), 1, "one inherent impl with `ID`");
        assoc_const(generated[0], "ID")
    }

    fn methods(imp: &syn::ItemImpl) -> Vec<String> {
        imp.items
            .iter()
            .filter_map(|i| match i {
                ImplItem::Fn(f) => Some(f.sig.ident.to_string()),
                _ => None,
            })
            .collect()
    }

    /// The where clause of an impl, as text.
    fn bound_of(imp: &syn::ItemImpl) -> String {
        let predicates = &imp
            .generics
            .where_clause
            .as_ref()
            .expect("a where clause")
            .predicates;
        predicates.to_token_stream().to_string()
    }

    /// The predicates of an impl's where clause, as text.
    fn where_text(imp: &syn::ItemImpl) -> String {
        bound_of(imp)
    }

    /// The bound every generated impl carries: the type can be a processor.
    fn shared_bound(self_ty: &str) -> String {
        format!(
            "for < '__processors_shared > {self_ty} : :: core :: marker :: Send + :: core :: marker :: Sync + 'static"
        )
    }

    fn has_await(f: &syn::ImplItemFn) -> bool {
        f.block.to_token_stream().to_string().contains(". await")
    }

    use quote::ToTokens;

    #[test]
    fn a_step_hook_that_calls_retry_true_says_it_asks_for_retries() {
        let asks = |hook: TokenStream, item: TokenStream| {
            let file = expanded(hook, item);
            assert!(compile_errors(&file).is_empty());
            !impls_of(&file, "Retries", "Check").is_empty()
        };
        assert!(asks(
            quote!(output_step),
            quote!(
                fn check(text: &str, abort: Abort) -> Result<(), ProcessorError> {
                    if text.is_empty() {
                        return Err(abort.reason("say something").retry(true).into());
                    }
                    Ok(())
                }
            )
        ));
        assert!(
            asks(
                quote!(tool_call),
                quote!(
                    fn check(abort: Abort) -> Result<ToolCallAction, ProcessorError> {
                        Err(abort.reason("not this tool").retry(true).into())
                    }
                )
            ),
            "a tool call's abort retries the step"
        );
        assert!(
            !asks(
                quote!(output_step),
                quote!(
                    fn check(abort: Abort, state: &mut bool) -> Result<(), ProcessorError> {
                        Err(abort.retry(*state).into())
                    }
                )
            ),
            "a retry that depends on a value is not counted"
        );
        assert!(
            !asks(
                quote!(output_stream),
                quote!(
                    fn check(abort: Abort) -> Result<StreamAction, ProcessorError> {
                        Err(abort.retry(true).into())
                    }
                )
            ),
            "a stream hook's abort never retries"
        );
        assert!(
            !asks(
                quote!(output_step),
                quote!(
                    fn check(text: &str) -> Result<(), ProcessorError> {
                        let _ = text;
                        retry(true);
                        Ok(())
                    }
                )
            ),
            "a call of a function named `retry` is not the abort's"
        );
    }

    #[test]
    fn a_function_becomes_a_unit_struct_with_its_hook() {
        let file = expanded(
            quote!(output_stream),
            quote!(
                async fn redact_pii(chunk: &Chunk, state: &mut usize) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(compile_errors(&file).is_empty());
        assert!(
            file.items
                .iter()
                .any(|i| matches!(i, Item::Fn(f) if f.sig.ident == "redact_pii")),
            "the function is kept"
        );
        assert!(file.items.iter().any(
            |i| matches!(i, Item::Struct(s) if s.ident == "RedactPii" && s.fields.is_empty())
        ));
        let processor = impl_of(&file, "Processor", "RedactPii");
        assert_eq!(assoc_type(processor, "State"), "usize");
        assert!(assoc_const(processor, "HOOKS").ends_with(":: Hooks :: OUTPUT_STREAM)"));
        assert_eq!(
            assoc_const(processor, "STATIC_ID"),
            ":: core :: option :: Option :: Some (\"redact-pii\")"
        );
        assert_eq!(
            methods(processor),
            ["id", "keeps_stream_history", "process_output_stream"],
            "whether a parameter reads the stream history is left to its type"
        );
        let hook = processor
            .items
            .iter()
            .find_map(|i| match i {
                ImplItem::Fn(f) if f.sig.ident == "process_output_stream" => Some(f),
                _ => None,
            })
            .unwrap();
        assert!(has_await(hook), "an async function is awaited");
        assert_eq!(
            where_text(impl_of(&file, "OutputProcessor", "RedactPii")),
            shared_bound("RedactPii"),
            "the marker holds for a type that can be a processor"
        );
        for other in ["InputProcessor", "ErrorProcessor"] {
            assert_eq!(
                bound_of(impl_of(&file, other, "RedactPii")),
                format!(
                    "{} , & '__processors RedactPii : :: processors :: __private :: BelongsInOutput < RedactPii >",
                    shared_bound("RedactPii")
                ),
                "a marker of another list never holds, saying where the processor belongs"
            );
        }
        assert_eq!(id_of(&file, "RedactPii"), "\"redact-pii\"");
    }

    #[test]
    fn options_set_the_id_name_flags_and_crate() {
        let file = expanded(
            quote!(
                output_stream,
                id = "pii",
                name = Pii,
                process_data_parts,
                stream_history,
                crate = processors_runtime
            ),
            quote!(
                fn redact(chunk: &Chunk) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(compile_errors(&file).is_empty());
        let processor = impl_of(&file, "Processor", "Pii");
        let trait_path = processor.trait_.as_ref().unwrap().0.to_token_stream();
        assert_eq!(
            trait_path.to_string(),
            "processors_runtime :: __private :: Processor"
        );
        assert_eq!(
            methods(processor),
            [
                "id",
                "process_data_parts",
                "keeps_stream_history",
                "process_output_stream"
            ]
        );
        let sync = assoc_const(processor, "SYNC_HOOKS");
        assert!(
            sync.contains("Hooks :: OUTPUT_STREAM)"),
            "a plain stream function never waits: {sync}"
        );
    }

    #[test]
    fn an_impl_block_gets_every_hook_and_both_markers() {
        let file = expanded(
            quote!(),
            quote! {
                impl HTTPGuard {
                    fn helper(&self) {}
                    async fn process_input(&self, messages: Vec<Message>) {}
                    fn process_output_step(&self, text: &str, state: &mut Counter) {}
                }
            },
        );
        assert!(compile_errors(&file).is_empty());
        let processor = impl_of(&file, "Processor", "HTTPGuard");
        let hooks = assoc_const(processor, "HOOKS");
        assert!(
            hooks.contains("Hooks :: INPUT)") && hooks.contains("Hooks :: OUTPUT_STEP)"),
            "{hooks}"
        );
        assert_eq!(assoc_type(processor, "State"), "Counter");
        assert_eq!(
            methods(processor),
            ["id", "process_input", "process_output_step"]
        );
        let sync = assoc_const(processor, "SYNC_HOOKS");
        assert!(
            sync.contains("Hooks :: OUTPUT_STEP)") && !sync.contains("INPUT"),
            "{sync}"
        );
        for side in ["InputProcessor", "OutputProcessor"] {
            assert_eq!(
                where_text(impl_of(&file, side, "HTTPGuard")),
                shared_bound("HTTPGuard")
            );
        }
        assert!(
            bound_of(impl_of(&file, "ErrorProcessor", "HTTPGuard"))
                .ends_with("BelongsInInputAndOutput < HTTPGuard >")
        );
        assert_eq!(id_of(&file, "HTTPGuard"), "\"http-guard\"");
    }

    #[test]
    fn the_attributes_state_type_wins_and_parameters_are_checked_against_it() {
        let file = expanded(
            quote!(output_result, state = Vec<String>),
            quote!(
                fn report(state: &mut Vec<String>) {}
            ),
        );
        assert!(compile_errors(&file).is_empty());
        let processor = impl_of(&file, "Processor", "Report");
        assert_eq!(assoc_type(processor, "State"), "Vec < String >");
        let body = processor.to_token_stream().to_string();
        assert!(body.contains(":: StateType <"), "{body}");
    }

    #[test]
    fn two_parameters_that_may_take_one_part_get_a_const_check() {
        let file = expanded(
            quote!(output_step),
            quote!(
                fn check(list: &mut MessageList, again: L<'_>, text: &str) {}
            ),
        );
        assert!(compile_errors(&file).is_empty());
        let checks: Vec<_> = file
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Const(c) if c.ident == "_" => Some(c.expr.to_token_stream().to_string()),
                _ => None,
            })
            .filter(|c| c.contains("taken_twice"))
            .collect();
        assert_eq!(checks.len(), 1, "one check per hook");
        assert_eq!(
            checks[0].matches("taken_twice").count(),
            2,
            "one assertion per parameter after the first: {}",
            checks[0]
        );
        assert!(checks[0].contains("Takes :: < L < '_ > > :: PARTS"));
    }

    #[test]
    fn every_mistake_is_reported_and_the_item_is_kept() {
        let file = expanded(
            quote!(ouput_stream, id = "Bad Id", colour = 3, id = "x"),
            quote!(
                fn shout(chunk: &Chunk) -> StreamAction {
                    todo!()
                }
            ),
        );
        let errors = compile_errors(&file);
        assert!(
            errors[0].contains("did you mean `output_stream`"),
            "{errors:?}"
        );
        assert!(errors[1].contains("not a valid processor id"), "{errors:?}");
        assert!(
            errors[2].starts_with("unknown option `colour`"),
            "{errors:?}"
        );
        assert_eq!(errors[3], "`id` is given twice; keep one");
        assert_eq!(errors[4], "`id` is first given here");
        assert_eq!(
            errors.len(),
            5,
            "the misspelt hook is not reported as missing too"
        );
        assert!(
            file.items
                .iter()
                .any(|i| matches!(i, Item::Fn(f) if f.sig.ident == "shout")),
            "the function is still emitted"
        );
        for marker in ["InputProcessor", "OutputProcessor", "ErrorProcessor"] {
            assert!(
                impl_of(&file, marker, "Shout")
                    .generics
                    .where_clause
                    .is_none(),
                "stub impls limit fallout"
            );
        }
    }

    #[test]
    fn an_item_that_is_no_function_or_impl_is_kept_with_the_error() {
        let file = expanded(
            quote!(input),
            quote!(
                struct Shout;
            ),
        );
        assert_eq!(compile_errors(&file).len(), 1);
        assert!(matches!(&file.items[1], Item::Struct(s) if s.ident == "Shout"));
    }

    #[test]
    fn config_parameters_become_fields_and_a_constructor() {
        let file = expanded(
            quote!(output_stream),
            quote!(
                pub fn max_len(
                    chunk: &Chunk,
                    #[config] limit: usize,
                    #[config] words: &[String],
                    #[config] prefix: &str,
                ) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(compile_errors(&file).is_empty());
        let Some(Item::Fn(f)) = file.items.first() else {
            panic!("the function comes first")
        };
        assert!(
            f.sig.inputs.iter().all(|a| match a {
                syn::FnArg::Typed(pt) => pt.attrs.is_empty(),
                syn::FnArg::Receiver(_) => false,
            }),
            "`#[config]` is removed from the function"
        );
        let strukt = file
            .items
            .iter()
            .find_map(|i| match i {
                Item::Struct(s) if s.ident == "MaxLen" => Some(s),
                _ => None,
            })
            .expect("the struct");
        let fields: Vec<String> = strukt
            .fields
            .iter()
            .map(|f| f.to_token_stream().to_string())
            .collect();
        assert_eq!(
            fields,
            [
                "pub limit : usize",
                "pub words : :: std :: vec :: Vec < String >",
                "pub prefix : :: std :: string :: String"
            ]
        );
        let constructor = impls_of(&file, "", "MaxLen")
            .into_iter()
            .flat_map(|imp| &imp.items)
            .find_map(|i| match i {
                ImplItem::Fn(f) if f.sig.ident == "new" => Some(f),
                _ => None,
            })
            .expect("`MaxLen::new`");
        assert!(constructor.sig.constness.is_some());
        assert_eq!(constructor.sig.inputs.len(), 3);
        let hook = impl_of(&file, "Processor", "MaxLen")
            .to_token_stream()
            .to_string();
        assert!(
            hook.contains("ConfigValue > :: copied (& self . limit)"),
            "{hook}"
        );
        assert!(hook.contains("= & self . words ;"), "{hook}");
    }

    #[test]
    fn a_config_parameter_on_a_method_is_an_error() {
        let file = expanded(
            quote!(),
            quote!(
                impl Guard {
                    fn process_input(&self, #[config] limit: usize) {}
                }
            ),
        );
        let errors = compile_errors(&file);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("`#[config]` is for processor functions"));
    }

    #[test]
    fn an_id_method_is_the_id() {
        let file = expanded(
            quote!(),
            quote!(
                impl Limiter {
                    fn id(&self) -> &str {
                        &self.id
                    }
                    fn process_input(&self) {}
                }
            ),
        );
        assert!(compile_errors(&file).is_empty());
        let processor = impl_of(&file, "Processor", "Limiter");
        assert_eq!(
            assoc_const(processor, "STATIC_ID"),
            ":: core :: option :: Option :: None"
        );
        let id = processor
            .items
            .iter()
            .find_map(|i| match i {
                ImplItem::Fn(f) if f.sig.ident == "id" => Some(f),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            id.block.to_token_stream().to_string(),
            "{ < Limiter > :: id (self) }"
        );
        assert!(
            !impls_of(&file, "", "Limiter").iter().any(|imp| imp
                .items
                .iter()
                .any(|i| matches!(i, ImplItem::Const(c) if c.ident == "ID"))),
            "no `ID` constant: the id is per value"
        );
    }

    #[test]
    fn an_id_method_and_an_id_option_are_one_id_too_many() {
        let file = expanded(
            quote!(id = "limiter"),
            quote!(
                impl Limiter {
                    fn id(&self) -> &str {
                        "x"
                    }
                    fn process_input(&self) {}
                }
            ),
        );
        let errors = compile_errors(&file);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("the id is set twice"));
    }

    #[test]
    fn a_name_that_makes_no_struct_name_asks_for_one() {
        for name in [quote!(_2nd_pass), quote!(self_)] {
            let file = expanded(
                quote!(output_stream, id = "pass"),
                quote!(
                    fn #name(chunk: &Chunk) {}
                ),
            );
            let errors = compile_errors(&file);
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(
                errors[0].contains("name it with `name = ...`"),
                "{errors:?}"
            );
            assert!(
                impls_of(&file, "Processor", "Self").is_empty(),
                "nothing is generated for a struct without a name"
            );
        }
        let file = expanded(
            quote!(output_stream, id = "pass", name = SecondPass),
            quote!(
                fn _2nd_pass(chunk: &Chunk) {}
            ),
        );
        assert!(compile_errors(&file).is_empty());
    }

    #[test]
    fn a_borrowing_processor_is_reported_once_and_its_stubs_are_static() {
        let file = expanded(
            quote!(),
            quote!(
                impl<'a> Filter<'a> {
                    fn process_input(&self) {}
                }
            ),
        );
        let errors = compile_errors(&file);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("a processor is `'static`"));
        assert_eq!(impls_of(&file, "Processor", "Filter < 'static >").len(), 1);
    }

    #[test]
    fn borrowed_state_and_impl_trait_parameters_are_reported() {
        let file = expanded(
            quote!(output_step),
            quote!(
                fn check(state: &mut Vec<&str>, text: impl AsRef<str>) {}
            ),
        );
        let errors = compile_errors(&file);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("per-request state is `'static`"));
        assert!(errors[1].starts_with("a hook parameter has one type"));
    }

    #[test]
    fn a_history_parameter_keeps_the_history() {
        let file = expanded(
            quote!(output_stream),
            quote!(
                fn sentences(chunk: &Chunk, history: &[Chunk]) {}
            ),
        );
        let processor = impl_of(&file, "Processor", "Sentences");
        assert!(methods(processor).contains(&"keeps_stream_history".to_owned()));
        let body = processor.to_token_stream().to_string();
        assert!(
            body.contains("reads_stream_history (0 | :: processors :: __private :: Takes :: < & Chunk > :: PARTS | :: processors :: __private :: Takes :: < & [Chunk] > :: PARTS)"),
            "{body}"
        );
    }

    #[test]
    fn a_misspelt_hook_method_name_suggests_the_hook() {
        let file = expanded(
            quote!(process_ouput_stream),
            quote!(
                fn f() {}
            ),
        );
        let errors = compile_errors(&file);
        assert!(
            errors[0].starts_with(
                "unknown hook or option `process_ouput_stream` (did you mean `output_stream`?)"
            ),
            "{errors:?}"
        );
    }
}
