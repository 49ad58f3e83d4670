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

    fn has_await(f: &syn::ImplItemFn) -> bool {
        f.block.to_token_stream().to_string().contains(". await")
    }

    use quote::ToTokens;

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
        assert_eq!(methods(processor), ["id", "process_output_stream"]);
        let hook = processor
            .items
            .iter()
            .find_map(|i| match i {
                ImplItem::Fn(f) if f.sig.ident == "process_output_stream" => Some(f),
                _ => None,
            })
            .unwrap();
        assert!(has_await(hook), "an async function is awaited");
        assert_eq!(impls_of(&file, "HasOutputHook", "RedactPii").len(), 1);
        assert!(impls_of(&file, "HasInputHook", "RedactPii").is_empty());
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
        let trait_path = processor.trait_.as_ref().unwrap().1.to_token_stream();
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
                "process_output_stream_now",
                "process_output_stream"
            ],
            "a plain stream function is called without a future"
        );
        assert_eq!(assoc_const(processor, "OUTPUT_STREAM_IS_SYNC"), "true");
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
        assert_eq!(impls_of(&file, "HasInputHook", "HTTPGuard").len(), 1);
        assert_eq!(impls_of(&file, "HasOutputHook", "HTTPGuard").len(), 1);
        assert!(impls_of(&file, "HasErrorHook", "HTTPGuard").is_empty());
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
        for marker in ["HasInputHook", "HasOutputHook", "HasErrorHook"] {
            assert_eq!(
                impls_of(&file, marker, "Shout").len(),
                1,
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
}
