//! Code generation from a checked processor: the user's item, the `Processor` impl, marker
//! traits and compile-time checks; or, after errors, stub impls that keep one mistake from
//! causing more.

use super::model::{HookFn, Param, Processor, Source};
use crate::hooks::{Hook, Side};
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ReturnType, Type};

pub fn processor(p: &Processor) -> TokenStream {
    let private = &p.private;
    let item = source(p);
    let self_ty = p.self_ty();
    let (impl_g, _, where_c) = p.generics.split_for_impl();
    let id = &p.id;
    let state = match &p.state {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    let constants = p.hooks.iter().map(|h| h.hook.constant());
    let data_parts = p.process_data_parts.then(|| {
        quote! {
            fn process_data_parts(&self) -> bool {
                true
            }
        }
    });
    let history = p.stream_history.then(|| {
        quote! {
            fn keeps_stream_history(&self) -> bool {
                true
            }
        }
    });
    let methods = p.hooks.iter().map(|h| hook_method(p, h));
    let markers = Side::ALL
        .into_iter()
        .filter(|side| p.hooks.iter().any(|h| h.hook.side() == *side))
        .map(|side| {
            let marker = side.marker();
            quote!(impl #impl_g #private::#marker for #self_ty #where_c {})
        });
    let checks = p.hooks.iter().filter_map(|h| params_taken_once(p, h));
    quote! {
        #item

        impl #impl_g #self_ty #where_c {
            /// The processor's id.
            pub const ID: &'static str = #id;
        }

        impl #impl_g #private::Processor for #self_ty #where_c {
            type State = #state;
            const HOOKS: #private::Hooks = #private::Hooks::NONE #(.with(#private::Hooks::#constants))*;
            const STATIC_ID: ::core::option::Option<&'static str> = ::core::option::Option::Some(#id);
            fn id(&self) -> &str {
                #id
            }
            #data_parts
            #history
            #(#methods)*
        }

        #(#markers)*
        #(#checks)*
    }
}

/// The user's item, the errors, and stub impls in place of the real ones, so code using the
/// processor reports nothing more.
pub fn fallback(p: &Processor, errors: syn::Error) -> TokenStream {
    let private = &p.private;
    let errors = errors.into_compile_error();
    let item = source(p);
    let self_ty = p.self_ty();
    let (impl_g, _, where_c) = p.generics.split_for_impl();
    let id = &p.id;
    quote! {
        #errors
        #item
        impl #impl_g #self_ty #where_c {
            pub const ID: &'static str = #id;
        }
        impl #impl_g #private::Processor for #self_ty #where_c {
            type State = ();
            const HOOKS: #private::Hooks = #private::Hooks::NONE;
            fn id(&self) -> &str {
                #id
            }
        }
        impl #impl_g #private::HasInputHook for #self_ty #where_c {}
        impl #impl_g #private::HasOutputHook for #self_ty #where_c {}
        impl #impl_g #private::HasErrorHook for #self_ty #where_c {}
    }
}

/// The user's item as written, and for a function the unit struct that stands for it.
fn source(p: &Processor) -> TokenStream {
    match &p.source {
        Source::Fn { item, name } => {
            let vis = &item.vis;
            let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
            quote! {
                #item

                #(#docs)*
                #[derive(
                    ::core::fmt::Debug,
                    ::core::clone::Clone,
                    ::core::marker::Copy,
                    ::core::default::Default,
                    ::core::cmp::PartialEq,
                    ::core::cmp::Eq,
                    ::core::hash::Hash,
                )]
                #vis struct #name;
            }
        }
        Source::Impl(imp) => imp.to_token_stream(),
    }
}

/// The trait method of one hook: take each parameter out of the hook's arguments, call the
/// user's function, convert what it returns.
fn hook_method(p: &Processor, h: &HookFn) -> TokenStream {
    let private = &p.private;
    let id = &p.id;
    let hook = h.hook;
    let method = hook.method_ident();
    let (args, parts, extractor) = (hook.args(), hook.parts(), hook.extractor());
    let out = hook.outcome(private);
    let state = quote!(<Self as #private::Processor>::State);
    let names: Vec<Ident> = (0..h.params.len())
        .map(|i| format_ident!("__processors_p{i}"))
        .collect();
    let binds = h.params.iter().zip(&names).map(|(param, name)| match param {
        Param::State(ty) => quote_spanned! {ty.span()=>
            let #name = match __processors_parts.state.take() {
                ::core::option::Option::Some(s) => <#ty as #private::StateType<#state>>::cast(s),
                ::core::option::Option::None => {
                    return ::core::result::Result::Err(#private::param_taken(#id, "state"));
                }
            };
        },
        Param::Extract(ty) => {
            let text = ty.to_token_stream().to_string();
            quote_spanned! {ty.span()=>
                let #name = match <#ty as #private::#extractor<'_, #state>>::extract(
                    &mut __processors_parts,
                ) {
                    ::core::option::Option::Some(v) => v,
                    ::core::option::Option::None => {
                        return ::core::result::Result::Err(#private::param_taken(#id, #text));
                    }
                };
            }
        }
    });
    let call = match &p.source {
        Source::Fn { item, .. } => {
            let f = &item.sig.ident;
            quote!(#f(#(#names),*))
        }
        Source::Impl(imp) => {
            let (ty, m) = (&imp.self_ty, &h.sig.ident);
            quote!(<#ty>::#m(self, #(#names),*))
        }
    };
    let call = match h.sig.asyncness {
        Some(_) => quote!(#call.await),
        None => call,
    };
    let convert = match &h.sig.output {
        ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
            <#ty as #private::HookReturn<#out>>::into_hook_result(__processors_ret)
        },
        ReturnType::Default => quote_spanned! {h.sig.ident.span()=>
            <() as #private::HookReturn<#out>>::into_hook_result(__processors_ret)
        },
    };
    let body = quote! {
        let mut __processors_parts: #private::#parts<'_, #state> =
            ::core::convert::From::from(__processors_args);
        #(#binds)*
        let __processors_ret = #call;
        #convert
    };
    if hook == Hook::OutputStream && h.sig.asyncness.is_none() {
        // A stream hook that never waits is called without a future on every chunk.
        return quote! {
            const OUTPUT_STREAM_IS_SYNC: bool = true;

            #[allow(unused_mut)]
            #[inline]
            fn process_output_stream_now(
                &self,
                __processors_args: #private::#args<'_, #state>,
            ) -> ::core::result::Result<#out, #private::ProcessorError> {
                #body
            }

            fn #method(
                &self,
                __processors_args: #private::#args<'_, #state>,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<#out, #private::ProcessorError>,
            > + ::core::marker::Send {
                ::core::future::ready(
                    <Self as #private::Processor>::process_output_stream_now(self, __processors_args),
                )
            }
        };
    }
    quote! {
        #[allow(clippy::manual_async_fn, unused_mut)]
        fn #method(
            &self,
            __processors_args: #private::#args<'_, #state>,
        ) -> impl ::core::future::Future<
            Output = ::core::result::Result<#out, #private::ProcessorError>,
        > + ::core::marker::Send {
            async move {
                #body
            }
        }
    }
}

/// Compile-time assertions that no two parameters of a hook take one part of its arguments
/// (the message list, the messages, …), each failing at the second parameter's type. The
/// compiler looks through aliases; types naming the impl's generics or `Self` are left to the
/// run-time check, as a constant item cannot name them.
fn params_taken_once(p: &Processor, h: &HookFn) -> Option<TokenStream> {
    let private = &p.private;
    let generics: Vec<Ident> = p
        .generics
        .params
        .iter()
        .map(|g| match g {
            syn::GenericParam::Type(t) => t.ident.clone(),
            syn::GenericParam::Const(c) => c.ident.clone(),
            syn::GenericParam::Lifetime(l) => l.lifetime.ident.clone(),
        })
        .collect();
    let types: Vec<&Type> = h
        .params
        .iter()
        .filter_map(|param| match param {
            Param::Extract(ty) if !names_any(ty.to_token_stream(), &generics) => Some(*ty),
            _ => None,
        })
        .collect();
    if types.len() < 2 {
        return None;
    }
    let parts: Vec<TokenStream> = types
        .iter()
        .map(|ty| quote!(#private::Takes::<#ty>::PARTS))
        .collect();
    let asserts = (1..types.len()).map(|i| {
        let (earlier, this) = (&parts[..i], &parts[i]);
        // The panic's span runs from the path (the type's first token) to the arguments (its
        // last), so the error underlines the whole type.
        let (first, last) = ends(types[i]);
        let panic = quote_spanned!(first=> ::core::panic!);
        let message = quote_spanned!(last=> ("{}", message));
        quote_spanned! {first=>
            if let ::core::option::Option::Some(message) =
                #private::taken_twice(0 #(| #earlier)*, #this)
            {
                #panic #message;
            }
        }
    });
    Some(quote! {
        const _: () = {
            #[allow(unused_imports)]
            use #private::TakesNothing as _;
            #(#asserts)*
        };
    })
}

/// The spans of the first and the last token of `ty`.
fn ends(ty: &Type) -> (Span, Span) {
    let tokens: Vec<TokenTree> = ty.to_token_stream().into_iter().collect();
    let first = tokens.first().map_or_else(Span::call_site, TokenTree::span);
    let last = tokens.last().map_or(first, TokenTree::span);
    (first, last)
}

/// Whether `tokens` mention `Self` or one of `names`.
fn names_any(tokens: TokenStream, names: &[Ident]) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == "Self" || names.contains(&i),
        TokenTree::Group(g) => names_any(g.stream(), names),
        TokenTree::Punct(_) | TokenTree::Literal(_) => false,
    })
}
