//! Code generation from a checked processor: the user's item, the `Processor` impl, marker
//! traits and compile-time checks; or, after errors, stub impls that keep one mistake from
//! causing more.

use super::model::{ConfigField, HookFn, Id, Param, Processor, Source};
use crate::hooks::{Hook, Side};
use crate::types::is_option;
use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Generics, Ident, ReturnType, Type};

pub fn processor(p: &Processor) -> TokenStream {
    let private = &p.private;
    let item = source(p);
    let Some(self_ty) = p.self_ty() else {
        return item;
    };
    // Every impl holds only for a type that can be a processor, so that one that cannot is
    // reported once, by the check below, not by each impl. The bound is higher-ranked so that
    // the compiler takes it as a condition even on a type with no parameters.
    let mut generics = p.generics.clone();
    generics.make_where_clause().predicates.push(syn::parse_quote! {
        for<'__processors_shared> #self_ty: ::core::marker::Send + ::core::marker::Sync + 'static
    });
    let (impl_g, _, where_c) = generics.split_for_impl();
    let shared = {
        let (impl_g, _, where_c) = p.generics.split_for_impl();
        let check = quote_spanned!(self_ty.span()=> #private::processor_is_shared_by_concurrent_runs::<#self_ty>);
        // In an impl of the type's own, so that `Self` in its where clause means the type.
        quote! {
            impl #impl_g #self_ty #where_c {
                #[doc(hidden)]
                #[allow(dead_code)]
                fn __processors_shared() {
                    #check();
                }
            }
        }
    };
    let state = match &p.state {
        Some(ty) => quote!(#ty),
        None => quote!(()),
    };
    let constants = p.hooks.iter().map(|h| h.hook.constant());
    let hooks = quote!(#private::Hooks::NONE #(.with(#private::Hooks::#constants))*);
    let (id_const, static_id, id_fn) = match &p.id {
        Id::Static(id) => (
            Some(inherent_id(p, &self_ty, id)),
            quote!(::core::option::Option::Some(#id)),
            quote!(#id),
        ),
        Id::Method(m) => {
            let ty = match &m.sig.output {
                ReturnType::Type(_, ty) => ty.span(),
                ReturnType::Default => m.sig.ident.span(),
            };
            let call = quote_spanned!(ty=> <#self_ty>::id(self));
            (None, quote!(::core::option::Option::None), call)
        }
    };
    let data_parts = p.process_data_parts.then(|| {
        quote! {
            fn process_data_parts(&self) -> bool {
                true
            }
        }
    });
    let history = stream_history(p);
    let reads_messages = reads_messages(p);
    let sync_hooks = sync_hooks(p);
    let methods = p.hooks.iter().map(|h| hook_method(p, h));
    let present: Vec<Side> = Side::ALL
        .into_iter()
        .filter(|side| p.hooks.iter().any(|h| h.hook.side() == *side))
        .collect();
    let markers = Side::ALL
        .into_iter()
        .map(|side| marker(p, &generics, &self_ty, side, &present));
    let checks = p.hooks.iter().filter_map(|h| params_taken_once(p, h));
    let retries = p.hooks.iter().any(|h| h.asks_for_retry()).then(|| {
        quote! {
            impl #impl_g #private::Retries for #self_ty #where_c {
                type Asks = #private::AsksForRetry;
            }
        }
    });
    quote! {
        #item

        #id_const

        impl #impl_g #private::Processor for #self_ty #where_c {
            type State = #state;
            const HOOKS: #private::Hooks = #hooks;
            const STATIC_ID: ::core::option::Option<&'static str> = #static_id;
            #reads_messages
            #sync_hooks
            fn id(&self) -> &str {
                #id_fn
            }
            #data_parts
            #history
            #(#methods)*
        }

        impl #impl_g #private::Known for #self_ty #where_c {
            const HOOKS: #private::Hooks = #hooks;
            const STATIC_ID: ::core::option::Option<&'static str> = #static_id;
        }
        #retries

        #(#markers)*
        #(#checks)*
        #shared
    }
}

/// `Type::ID`, for a processor whose id is fixed.
fn inherent_id(p: &Processor, self_ty: &TokenStream, id: &str) -> TokenStream {
    let (impl_g, _, where_c) = p.generics.split_for_impl();
    quote! {
        impl #impl_g #self_ty #where_c {
            /// The processor's id.
            pub const ID: &str = #id;
        }
    }
}

/// The impl of a side's marker trait: plain when the processor has a hook of the side, else
/// one that never holds, whose unmet bound says where the processor belongs.
fn marker(
    p: &Processor,
    generics: &Generics,
    self_ty: &TokenStream,
    side: Side,
    present: &[Side],
) -> TokenStream {
    let private = &p.private;
    let marker = side.marker();
    let (impl_g, _, where_c) = generics.split_for_impl();
    if present.contains(&side) {
        return quote!(impl #impl_g #private::#marker for #self_ty #where_c {});
    }
    let Some(home) = Side::home(present) else {
        return TokenStream::new();
    };
    // `&'__processors Self` never implements the trait; the lifetime keeps the bound from
    // being checked where it is written.
    let mut generics = generics.clone();
    generics.params.insert(0, syn::parse_quote!('__processors));
    generics
        .make_where_clause()
        .predicates
        .push(syn::parse_quote! {
            &'__processors #self_ty: #private::#home<#self_ty>
        });
    let (impl_g, _, where_c) = generics.split_for_impl();
    quote!(impl #impl_g #private::#marker for #self_ty #where_c {})
}

/// `keeps_stream_history`: set by the `stream_history` option, or by an `output_stream`
/// parameter that reads the history (`&[Chunk]`, by its type, so through aliases too).
fn stream_history(p: &Processor) -> Option<TokenStream> {
    let private = &p.private;
    if p.stream_history {
        return Some(quote! {
            fn keeps_stream_history(&self) -> bool {
                true
            }
        });
    }
    let generics = generic_names(&p.generics);
    let types: Vec<&Type> = p
        .hooks
        .iter()
        .filter(|h| h.hook == Hook::OutputStream)
        .flat_map(|h| &h.params)
        .filter_map(|param| match param {
            Param::Extract(ty) if !names_any(ty.to_token_stream(), &generics) => Some(*ty),
            _ => None,
        })
        .collect();
    if types.is_empty() {
        return None;
    }
    Some(quote! {
        fn keeps_stream_history(&self) -> bool {
            #[allow(unused_imports)]
            use #private::TakesNothing as _;
            #private::reads_stream_history(0 #(| #private::Takes::<#types>::PARTS)*)
        }
    })
}

/// `SYNC_HOOKS`: the hooks whose function is a plain `fn`, whose future is ready at once
/// (none: the trait's default).
fn sync_hooks(p: &Processor) -> Option<TokenStream> {
    let private = &p.private;
    let constants: Vec<Ident> = p
        .hooks
        .iter()
        .filter(|h| h.sig.asyncness.is_none())
        .map(|h| h.hook.constant())
        .collect();
    if constants.is_empty() {
        return None;
    }
    Some(quote! {
        const SYNC_HOOKS: #private::Hooks = #private::Hooks::NONE #(.with(#private::Hooks::#constants))*;
    })
}

/// `READS_MESSAGES`: the hooks with a parameter taking the `messages` or `system_messages`
/// argument, by its type (so through aliases too). A parameter whose type names the impl's
/// generics or `Self` counts as reading them.
fn reads_messages(p: &Processor) -> TokenStream {
    let private = &p.private;
    let generics = generic_names(&p.generics);
    let hooks = p.hooks.iter().map(|h| {
        let constant = h.hook.constant();
        let hook = quote!(#private::Hooks::#constant);
        let mut parts = Vec::new();
        for param in &h.params {
            if let Param::Extract(ty) = param {
                if names_any(ty.to_token_stream(), &generics) {
                    return hook;
                }
                parts.push(quote!(#private::Takes::<#ty>::PARTS));
            }
        }
        quote!(#private::if_reads_messages(#hook, 0 #(| #parts)*))
    });
    quote! {
        const READS_MESSAGES: #private::Hooks = {
            #[allow(unused_imports)]
            use #private::TakesNothing as _;
            #private::Hooks::NONE #(.with(#hooks))*
        };
    }
}

/// The user's item, the errors, and stub impls in place of the real ones, so code using the
/// processor reports nothing more.
pub fn fallback(p: &Processor, errors: syn::Error) -> TokenStream {
    let private = &p.private;
    let errors = errors.into_compile_error();
    let item = source(p);
    let Some(self_ty) = p.self_ty() else {
        return quote!(#errors #item);
    };
    // Borrowing processors are reported; the stubs name them with `'static` lifetimes.
    let (generics, self_ty) = match p.borrows {
        true => (without_lifetimes(&p.generics), static_lifetimes(self_ty)),
        false => (p.generics.clone(), self_ty),
    };
    let (impl_g, _, where_c) = generics.split_for_impl();
    let id = match &p.id {
        Id::Static(id) => id.as_str(),
        Id::Method(_) => "processor",
    };
    quote! {
        #errors
        #item
        impl #impl_g #self_ty #where_c {
            pub const ID: &str = #id;
        }
        impl #impl_g #private::Processor for #self_ty #where_c {
            type State = ();
            const HOOKS: #private::Hooks = #private::Hooks::NONE;
            fn id(&self) -> &str {
                #id
            }
        }
        impl #impl_g #private::InputProcessor for #self_ty #where_c {}
        impl #impl_g #private::OutputProcessor for #self_ty #where_c {}
        impl #impl_g #private::ErrorProcessor for #self_ty #where_c {}
    }
}

/// The user's item as written (a function without its `#[config]` attributes), and for a
/// function the struct that stands for it.
fn source(p: &Processor) -> TokenStream {
    match &p.source {
        Source::Fn {
            item,
            name,
            config,
            options,
        } => {
            let mut item = (*item).clone();
            without_config_attributes(&mut item.sig);
            let Some(name) = name else {
                return item.to_token_stream();
            };
            let vis = &item.vis;
            let docs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
            let strukt = match config.is_empty() {
                true => quote! {
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
                },
                false => config_struct(vis, name, config, options.then_some(&p.private)),
            };
            quote! {
                #item

                #(#docs)*
                #strukt
            }
        }
        Source::Impl(imp) => {
            // `#[config]` on a method is reported; removed, it is not reported again. A hook
            // method takes `&self` because the hook does, used or not.
            let mut imp = (*imp).clone();
            for item in &mut imp.items {
                if let syn::ImplItem::Fn(m) = item {
                    without_config_attributes(&mut m.sig);
                    if Hook::from_method(&m.sig.ident.to_string()).is_some() {
                        m.attrs
                            .push(syn::parse_quote!(#[allow(clippy::unused_self)]));
                    }
                }
            }
            imp.to_token_stream()
        }
    }
}

/// Removes the `#[config]` attributes of a signature's parameters, and those parameters' doc
/// comments (which the fields get).
fn without_config_attributes(sig: &mut syn::Signature) {
    for arg in &mut sig.inputs {
        if let syn::FnArg::Typed(pt) = arg
            && pt.attrs.iter().any(|a| a.path().is_ident("config"))
        {
            pt.attrs
                .retain(|a| !a.path().is_ident("config") && !a.path().is_ident("doc"));
        }
    }
}

/// The struct of a function with `#[config]` parameters: one field each (with the parameter's
/// doc comment), and `new`; with `options`, it derives `Deserialize` through the runtime's
/// serde (`private`), unknown fields refused, so that it is its own options in files. Each
/// field is read by a function of the struct's (`deserialize_with`), where its type is bound
/// once, so a field type that cannot be read is one error at the parameter, not one per place
/// serde's derive reads it; an `Option` field may be left out (`default`).
fn config_struct(
    vis: &syn::Visibility,
    name: &Ident,
    config: &[ConfigField],
    options: Option<&TokenStream>,
) -> TokenStream {
    let reader = |c: &ConfigField| format_ident!("__processors_read_{}", c.name);
    let fields = config.iter().map(|c| {
        let (field, ty, docs) = (c.name, &c.field, &c.docs);
        let read = options.map(|_| {
            let with = format!("{name}::{}", reader(c));
            let default = is_option(ty).then(|| quote!(default,));
            quote!(#[serde(#default deserialize_with = #with)])
        });
        quote!(#(#docs)* #read #vis #field: #ty)
    });
    let derive = options.map(|private| {
        let serde = format!("{private}::serde").replace(' ', "");
        quote! {
            #[derive(#private::serde::Deserialize)]
            #[serde(crate = #serde, deny_unknown_fields)]
        }
    });
    let readers = options.map(|private| {
        let each = config.iter().map(|c| {
            let (read, ty) = (reader(c), &c.field);
            let call = quote_spanned!(c.ty.span()=> #private::file_option::<#ty, D>(d));
            quote! {
                fn #read<'de, D: #private::serde::Deserializer<'de>>(
                    d: D,
                ) -> ::core::result::Result<#ty, D::Error> {
                    #call
                }
            }
        });
        quote! {
            /// How each option is read from a file.
            impl #name {
                #(#each)*
            }
        }
    });
    let params = config.iter().map(|c| {
        let (field, ty) = (c.name, &c.field);
        quote!(#field: #ty)
    });
    let names = config.iter().map(|c| c.name);
    quote! {
        #derive
        #vis struct #name {
            #(#fields,)*
        }

        impl #name {
            /// The processor, with its configuration.
            #[must_use]
            #vis const fn new(#(#params),*) -> Self {
                Self { #(#names),* }
            }
        }

        #readers
    }
}

/// The trait method of one hook: take each parameter out of the hook's arguments, call the
/// user's function, convert what it returns.
fn hook_method(p: &Processor, h: &HookFn) -> TokenStream {
    let private = &p.private;
    let hook = h.hook;
    let method = hook.method_ident();
    let (args, parts, extractor) = (hook.args(), hook.parts(), hook.extractor());
    let out = hook.outcome(private);
    let state = quote!(<Self as #private::Processor>::State);
    let names: Vec<Ident> = (0..h.params.len())
        .map(|i| format_ident!("__processors_p{i}"))
        .collect();
    let taken = |what: &str| {
        quote! {
            return ::core::result::Result::Err(#private::param_taken(
                #private::Processor::id(self),
                #what,
            ));
        }
    };
    let binds = h
        .params
        .iter()
        .zip(&names)
        .map(|(param, name)| match param {
            Param::State(ty) => {
                let taken = taken("state");
                quote_spanned! {ty.span()=>
                    let ::core::option::Option::Some(#name) = __processors_parts.state.take() else {
                        #taken
                    };
                    let #name = <#ty as #private::StateType<#state>>::cast(#name);
                }
            }
            Param::Config(i) => {
                let field = &p.config()[*i];
                let (ident, ty) = (field.name, field.ty);
                match field.by_value {
                    true => quote_spanned! {ty.span()=>
                        let #name = <#ty as #private::ConfigValue>::copied(&self.#ident);
                    },
                    false => quote!(let #name = &self.#ident;),
                }
            }
            Param::Extract(ty) => {
                let taken = taken(&crate::names::tokens_text(&ty.to_token_stream()));
                quote_spanned! {ty.span()=>
                    let ::core::option::Option::Some(#name) =
                        <#ty as #private::#extractor<'_, #state>>::extract(&mut __processors_parts)
                    else {
                        #taken
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
    if h.sig.asyncness.is_none() {
        // A hook that never waits (listed in `SYNC_HOOKS`) runs when it is called: its future
        // is ready at once, and the runner polls it once where it stands.
        return quote! {
            #[allow(clippy::manual_async_fn)]
            #[inline]
            fn #method(
                &self,
                __processors_args: #private::#args<'_, #state>,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<#out, #private::ProcessorError>,
            > + ::core::marker::Send {
                #[allow(unused_mut, clippy::let_unit_value, clippy::redundant_closure_call)]
                let __processors_result = (|| -> ::core::result::Result<
                    #out,
                    #private::ProcessorError,
                > {
                    #body
                })();
                ::core::future::ready(__processors_result)
            }
        };
    }
    // A hook that holds something not `Send` across an `.await` is reported at its `async`.
    let send = h.sig.asyncness.map_or_else(Span::call_site, |a| a.span);
    let future = quote_spanned! {send=>
        impl ::core::future::Future<
            Output = ::core::result::Result<#out, #private::ProcessorError>,
        > + ::core::marker::Send
    };
    quote! {
        #[allow(clippy::manual_async_fn, unused_mut, clippy::let_unit_value)]
        fn #method(
            &self,
            __processors_args: #private::#args<'_, #state>,
        ) -> #future {
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
    let generics = generic_names(&p.generics);
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

/// The names of the impl's generic parameters.
fn generic_names(generics: &Generics) -> Vec<Ident> {
    generics
        .params
        .iter()
        .map(|g| match g {
            syn::GenericParam::Type(t) => t.ident.clone(),
            syn::GenericParam::Const(c) => c.ident.clone(),
            syn::GenericParam::Lifetime(l) => l.lifetime.ident.clone(),
        })
        .collect()
}

/// `generics` without its lifetimes, and without a where clause that could name them.
fn without_lifetimes(generics: &Generics) -> Generics {
    let mut generics = generics.clone();
    generics.params = generics
        .params
        .into_iter()
        .filter(|g| !matches!(g, syn::GenericParam::Lifetime(_)))
        .collect();
    generics.where_clause = None;
    generics
}

/// `tokens` with every lifetime `'static`.
fn static_lifetimes(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut after_quote = false;
    for tt in tokens {
        let tt = match tt {
            TokenTree::Ident(id) if after_quote => {
                TokenTree::Ident(Ident::new("static", id.span()))
            }
            TokenTree::Group(g) => {
                let mut group =
                    proc_macro2::Group::new(g.delimiter(), static_lifetimes(g.stream()));
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            other => other,
        };
        after_quote = matches!(&tt, TokenTree::Punct(p) if p.as_char() == '\'');
        out.push(tt);
    }
    out.into_iter().collect()
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
