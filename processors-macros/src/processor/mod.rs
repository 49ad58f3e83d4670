//! `#[processor]`: parse the attribute and the item, validate, expand.

mod attr;

use crate::errors::Errors;
use crate::hooks::{Hook, Side};
use crate::names;
use attr::{Attr, RawAttr};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, ItemFn, ItemImpl, Pat, ReturnType, Signature, Type};

pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let raw = match syn::parse2::<RawAttr>(attr) {
        Ok(raw) => Some(raw),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let parsed: syn::Item = match syn::parse2(item.clone()) {
        Ok(i) => i,
        Err(e) => {
            errors.push(e);
            let errs = errors.into_compile_errors();
            return quote!(#errs #item);
        }
    };
    match parsed {
        syn::Item::Fn(f) => {
            let attr = raw
                .map(|r| r.validate(true, &mut errors))
                .unwrap_or_default();
            expand_fn(attr, f, errors)
        }
        syn::Item::Impl(i) => {
            let attr = raw
                .map(|r| r.validate(false, &mut errors))
                .unwrap_or_default();
            expand_impl(attr, i, errors)
        }
        other => {
            let what = item_kind(&other);
            errors.span(
                item_head_span(&other),
                format!(
                    "#[processor] goes on a function (which implements one hook) or on an impl block (whose methods are hooks), not on {what}"
                ),
            );
            let errs = errors.into_compile_errors();
            quote!(#errs #other)
        }
    }
}

fn item_kind(item: &syn::Item) -> &'static str {
    match item {
        syn::Item::Struct(_) => "a struct",
        syn::Item::Enum(_) => "an enum",
        syn::Item::Trait(_) => "a trait",
        syn::Item::Mod(_) => "a module",
        syn::Item::Const(_) | syn::Item::Static(_) => "a constant",
        _ => "this item",
    }
}

fn item_head_span(item: &syn::Item) -> Span {
    match item {
        syn::Item::Struct(s) => s.ident.span(),
        syn::Item::Enum(e) => e.ident.span(),
        syn::Item::Trait(t) => t.ident.span(),
        syn::Item::Mod(m) => m.ident.span(),
        syn::Item::Const(c) => c.ident.span(),
        syn::Item::Static(s) => s.ident.span(),
        other => other.span(),
    }
}

/// How a hook parameter is supplied.
enum ParamKind {
    /// `state: &mut T`.
    State(Box<Type>),
    /// Any other type, through the hook's extractor trait.
    Extract,
}

struct Param {
    ty: Type,
    kind: ParamKind,
}

/// What a parameter takes out of the hook's arguments, for the "asked twice" check.
fn resource(ty: &Type) -> Option<&'static str> {
    let inner = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    let Type::Path(p) = inner else { return None };
    let last = p.path.segments.last()?.ident.to_string();
    match last.as_str() {
        "MessageList" => Some("the message list"),
        "Vec" => Some("the messages"),
        "SystemMessages" => Some("the system messages"),
        "DataWriter" => Some("the data writer"),
        _ => None,
    }
}

fn params<'a>(
    inputs: impl Iterator<Item = &'a FnArg>,
    hook: Hook,
    errors: &mut Errors,
) -> Vec<Param> {
    let mut out = Vec::new();
    let mut taken: Vec<(&'static str, Span)> = Vec::new();
    for arg in inputs {
        let FnArg::Typed(pt) = arg else { continue };
        let is_state = matches!(&*pt.pat, Pat::Ident(i) if i.ident == "state");
        if is_state {
            match &*pt.ty {
                Type::Reference(r) if r.mutability.is_some() => out.push(Param {
                    ty: (*pt.ty).clone(),
                    kind: ParamKind::State(r.elem.clone()),
                }),
                other => errors.at(
                    other,
                    "the state parameter is `state: &mut YourState` (YourState: Default + Send); its type is the processor's per-request state",
                ),
            }
            continue;
        }
        if let Some(what) = resource(&pt.ty) {
            if let Some((_, _first)) = taken.iter().find(|(w, _)| *w == what) {
                errors.at(
                    &pt.ty,
                    format!(
                        "{what} is already a parameter of this hook; ask for it once (`&mut MessageList` also reads the list)"
                    ),
                );
                continue;
            }
            taken.push((what, pt.ty.span()));
        }
        let _ = hook;
        out.push(Param {
            ty: (*pt.ty).clone(),
            kind: ParamKind::Extract,
        });
    }
    out
}

/// The state type a set of parameters declares, if any.
fn state_of(params: &[Param]) -> Option<&Type> {
    params.iter().find_map(|p| match &p.kind {
        ParamKind::State(t) => Some(&**t),
        ParamKind::Extract => None,
    })
}

/// The body of one generated hook method: extract the parameters, call the user's code,
/// convert its result.
fn hook_method(
    p: &TokenStream,
    hook: Hook,
    sig: &Signature,
    params: &[Param],
    call_path: TokenStream,
    with_self: bool,
    id: &str,
) -> TokenStream {
    let method = hook.method_ident();
    let args = hook.args();
    let parts = hook.parts();
    let extractor = hook.extractor();
    let out = hook.outcome(p);
    let mut binds = Vec::new();
    let mut names = Vec::new();
    for (i, param) in params.iter().enumerate() {
        let name = format_ident!("__processors_p{}", i);
        let ty = &param.ty;
        let ty_text = quote!(#ty).to_string();
        binds.push(match &param.kind {
            ParamKind::State(_) => quote! {
                let #name = match __processors_parts.state.take() {
                    ::core::option::Option::Some(s) => s,
                    ::core::option::Option::None => {
                        return ::core::result::Result::Err(#p::param_taken(#id, "state"));
                    }
                };
            },
            ParamKind::Extract => quote_spanned! {ty.span()=>
                let #name = match <#ty as #p::#extractor<'_, <Self as #p::Processor>::State>>::extract(
                    &mut __processors_parts,
                ) {
                    ::core::option::Option::Some(v) => v,
                    ::core::option::Option::None => {
                        return ::core::result::Result::Err(#p::param_taken(#id, #ty_text));
                    }
                };
            },
        });
        names.push(name);
    }
    let receiver = with_self.then(|| quote!(self,));
    let call = if sig.asyncness.is_some() {
        quote!(#call_path(#receiver #(#names),*).await)
    } else {
        quote!(#call_path(#receiver #(#names),*))
    };
    let convert = match &sig.output {
        ReturnType::Type(_, ty) => quote_spanned! {ty.span()=>
            <#ty as #p::HookReturn<#out>>::into_hook_result(__processors_ret)
        },
        ReturnType::Default => quote_spanned! {sig.ident.span()=>
            <() as #p::HookReturn<#out>>::into_hook_result(__processors_ret)
        },
    };
    if hook == Hook::OutputStream && sig.asyncness.is_none() {
        // A stream hook that never waits is called without a future on every chunk.
        return quote! {
            const OUTPUT_STREAM_IS_SYNC: bool = true;

            #[allow(unused_mut)]
            #[inline]
            fn process_output_stream_now(
                &self,
                __processors_args: #p::#args<'_, <Self as #p::Processor>::State>,
            ) -> ::core::result::Result<#out, #p::ProcessorError> {
                let mut __processors_parts = #p::#parts::from(__processors_args);
                #(#binds)*
                let __processors_ret = #call;
                #convert
            }

            fn #method(
                &self,
                __processors_args: #p::#args<'_, <Self as #p::Processor>::State>,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<#out, #p::ProcessorError>,
            > + ::core::marker::Send {
                ::core::future::ready(
                    <Self as #p::Processor>::process_output_stream_now(self, __processors_args),
                )
            }
        };
    }
    quote! {
        #[allow(clippy::manual_async_fn, unused_mut)]
        fn #method(
            &self,
            __processors_args: #p::#args<'_, <Self as #p::Processor>::State>,
        ) -> impl ::core::future::Future<
            Output = ::core::result::Result<#out, #p::ProcessorError>,
        > + ::core::marker::Send {
            async move {
                let mut __processors_parts = #p::#parts::from(__processors_args);
                #(#binds)*
                let __processors_ret = #call;
                #convert
            }
        }
    }
}

/// The `Processor` impl, its marker traits and the inherent `ID` constant.
#[allow(clippy::too_many_arguments)]
fn processor_impl(
    generics: &syn::Generics,
    self_ty: &TokenStream,
    id: &str,
    state: Option<&Type>,
    hooks: &[Hook],
    attr: &Attr,
    methods: Vec<TokenStream>,
) -> TokenStream {
    let p = attr.private();
    let (impl_g, _, where_c) = generics.split_for_impl();
    let state = match state {
        Some(t) => quote!(#t),
        None => quote!(()),
    };
    let consts = hooks.iter().map(|h| h.constant());
    let data_parts = attr.data_parts.as_ref().map(|_| {
        quote!(
            fn process_data_parts(&self) -> bool {
                true
            }
        )
    });
    let history = attr.history.as_ref().map(|_| {
        quote!(
            fn keeps_stream_history(&self) -> bool {
                true
            }
        )
    });
    let mut markers = Vec::new();
    for side in Side::ALL {
        if hooks.iter().any(|h| h.side() == side) {
            let marker = side.marker();
            markers.push(quote!(#[diagnostic::do_not_recommend] impl #impl_g #p::#marker for #self_ty #where_c {}));
        }
    }
    quote! {
        impl #impl_g #self_ty #where_c {
            /// The processor's id.
            pub const ID: &'static str = #id;
        }

        impl #impl_g #p::Processor for #self_ty #where_c {
            type State = #state;
            const HOOKS: #p::Hooks = #p::Hooks::NONE #(.with(#p::Hooks::#consts))*;
            const STATIC_ID: ::core::option::Option<&'static str> = ::core::option::Option::Some(#id);
            fn id(&self) -> &str {
                #id
            }
            #data_parts
            #history
            #(#methods)*
        }

        #(#markers)*
    }
}

/// Stub impls emitted next to errors so one mistake does not cascade.
fn fallback(
    p: &TokenStream,
    generics: &syn::Generics,
    self_ty: &TokenStream,
    id: &str,
) -> TokenStream {
    let (impl_g, _, where_c) = generics.split_for_impl();
    quote! {
        impl #impl_g #p::Processor for #self_ty #where_c {
            type State = ();
            const HOOKS: #p::Hooks = #p::Hooks::NONE;
            fn id(&self) -> &str { #id }
        }
        impl #impl_g #p::InputProcessor for #self_ty #where_c {}
        impl #impl_g #p::OutputProcessor for #self_ty #where_c {}
        impl #impl_g #p::ErrorProcessor for #self_ty #where_c {}
    }
}

/// `process_data_parts` and `stream_history` only mean something to an `output_stream` hook.
fn check_stream_flags(attr: &Attr, has_stream_hook: bool, errors: &mut Errors) {
    if has_stream_hook {
        return;
    }
    for flag in [&attr.data_parts, &attr.history].into_iter().flatten() {
        errors.at(
            flag,
            format!("`{flag}` applies to the `output_stream` hook, which this processor does not implement; remove it"),
        );
    }
}

/// Checks an id the macro derived from a name.
fn check_derived_id(id: &str, from: &Ident, errors: &mut Errors) {
    if !names::valid_id(id) {
        errors.at(
            from,
            format!("the id derived from this name, `{id}`, is not a valid processor id; set one with `id = \"...\"`"),
        );
    }
}

fn expand_fn(attr: Attr, f: ItemFn, mut errors: Errors) -> TokenStream {
    use syn::ext::IdentExt;
    let sig = &f.sig;
    let fn_name = sig.ident.unraw().to_string();
    let struct_name = attr
        .name
        .clone()
        .unwrap_or_else(|| Ident::new(&names::upper_camel(&fn_name), sig.ident.span()));
    let id = match &attr.id {
        Some(l) => l.value(),
        None => {
            let id = names::kebab(&fn_name);
            check_derived_id(&id, &sig.ident, &mut errors);
            id
        }
    };
    if let Some((hook, _)) = attr.hook {
        check_stream_flags(&attr, hook == Hook::OutputStream, &mut errors);
    }
    if attr.hook.is_none() && !errors.is_empty() {
        // The attribute did not parse; its error says why.
    } else if attr.hook.is_none() {
        errors.span(
            Span::call_site(),
            format!(
                "name the hook this function implements, like `#[processor(output_stream)]`; hooks: {}",
                Hook::list_short()
            ),
        );
    }
    if let Some(recv) = sig.receiver() {
        errors.at(
            recv,
            "a processor function takes no `self`; for methods, put `#[processor]` on the impl block",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.at(&sig.generics, "a processor function cannot be generic");
    }
    let vis = &f.vis;
    let docs = f.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let item_struct = quote! {
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
        #vis struct #struct_name;
    };
    let self_ty = quote!(#struct_name);
    let no_generics = syn::Generics::default();

    let Some((hook, _)) = attr.hook else {
        let errs = errors.into_compile_errors();
        let stub = fallback(&attr.private(), &no_generics, &self_ty, &id);
        return quote!(#errs #f #item_struct #stub);
    };
    let ps = params(sig.inputs.iter(), hook, &mut errors);
    if let (Some(declared), Some(found)) = (&attr.state, state_of(&ps))
        && quote!(#declared).to_string() != quote!(#found).to_string()
    {
        errors.at(
            found,
            format!(
                "the state parameter's type differs from `state = {}` in the attribute",
                quote!(#declared)
            ),
        );
    }
    if !errors.is_empty() {
        let errs = errors.into_compile_errors();
        let stub = fallback(&attr.private(), &no_generics, &self_ty, &id);
        return quote!(#errs #f #item_struct #stub);
    }
    let state = attr.state.as_ref().or(state_of(&ps)).cloned();
    let fn_ident = &sig.ident;
    let method = hook_method(
        &attr.private(),
        hook,
        sig,
        &ps,
        quote!(#fn_ident),
        false,
        &id,
    );
    let imp = processor_impl(
        &no_generics,
        &self_ty,
        &id,
        state.as_ref(),
        &[hook],
        &attr,
        vec![method],
    );
    quote! {
        #f
        #item_struct
        #imp
    }
}

fn expand_impl(attr: Attr, imp: ItemImpl, mut errors: Errors) -> TokenStream {
    let self_ty_ty = &imp.self_ty;
    let self_ty = quote!(#self_ty_ty);
    let type_name = match &**self_ty_ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    let id = match (&attr.id, &**self_ty_ty) {
        (Some(l), _) => l.value(),
        (None, Type::Path(p)) if p.path.segments.last().is_some() => {
            let ident = &p
                .path
                .segments
                .last()
                .map(|s| s.ident.clone())
                .unwrap_or_else(|| Ident::new("processor", Span::call_site()));
            let id = names::kebab(&syn::ext::IdentExt::unraw(ident).to_string());
            check_derived_id(&id, ident, &mut errors);
            id
        }
        _ => type_name
            .clone()
            .map(|n| names::kebab(&n))
            .unwrap_or_else(|| "processor".to_owned()),
    };
    if let Some((_, path, _)) = &imp.trait_ {
        errors.at(
            path,
            "#[processor] goes on an inherent impl block (`impl MyProcessor { ... }`), not on a trait impl",
        );
    }
    if let Some(name) = &attr.name {
        errors.at(
            name,
            "`name` names the struct generated for a function; an impl block already has its type",
        );
    }

    let mut found: Vec<(Hook, &syn::ImplItemFn, Vec<Param>)> = Vec::new();
    let mut state_decl: Option<Type> = attr.state.clone();
    for item in &imp.items {
        let syn::ImplItem::Fn(m) = item else { continue };
        let name = m.sig.ident.to_string();
        let Some(hook) = Hook::from_method(&name) else {
            if name.starts_with("process_") {
                errors.at(
                    &m.sig.ident,
                    format!(
                        "`{name}` is not a hook{}; hook methods: {}",
                        names::did_you_mean(&name, Hook::ALL.map(Hook::method)),
                        Hook::list_methods()
                    ),
                );
            }
            continue;
        };
        if found.iter().any(|(h, _, _)| *h == hook) {
            errors.at(
                &m.sig.ident,
                format!("`{name}` is defined twice; a processor has one method per hook"),
            );
            continue;
        }
        match m.sig.receiver() {
            Some(r) if r.reference.is_some() && r.mutability.is_none() => {}
            Some(r) => errors.at(
                r,
                "a hook method takes `&self`; keep per-request data in `state: &mut YourState`",
            ),
            None => errors.at(
                &m.sig.ident,
                format!("`{name}` needs a `&self` receiver: `fn {name}(&self, ...)`"),
            ),
        }
        if !m.sig.generics.params.is_empty() {
            errors.at(&m.sig.generics, "a hook method cannot be generic");
        }
        let ps = params(m.sig.inputs.iter(), hook, &mut errors);
        if let Some(t) = state_of(&ps) {
            match &state_decl {
                Some(d) if quote!(#d).to_string() != quote!(#t).to_string() => errors.at(
                    t,
                    format!(
                        "every hook's state parameter has the processor's one state type, `{}`",
                        quote!(#d)
                    ),
                ),
                Some(_) => {}
                None => state_decl = Some(t.clone()),
            }
        }
        found.push((hook, m, ps));
    }
    check_stream_flags(
        &attr,
        found.iter().any(|(h, _, _)| *h == Hook::OutputStream),
        &mut errors,
    );
    if found.is_empty() && errors.is_empty() {
        errors.span(
            imp.impl_token.span,
            format!(
                "this impl block has no hook method; name a method after a hook: {}",
                Hook::list_methods()
            ),
        );
    }
    if !errors.is_empty() {
        let errs = errors.into_compile_errors();
        let stub = fallback(&attr.private(), &imp.generics, &self_ty, &id);
        return quote!(#errs #imp #stub);
    }
    let p = attr.private();
    let methods = found
        .iter()
        .map(|(hook, m, ps)| {
            let ident = &m.sig.ident;
            hook_method(&p, *hook, &m.sig, ps, quote!(<#self_ty>::#ident), true, &id)
        })
        .collect();
    let hooks: Vec<Hook> = found.iter().map(|(h, _, _)| *h).collect();
    let generated = processor_impl(
        &imp.generics,
        &self_ty,
        &id,
        state_decl.as_ref(),
        &hooks,
        &attr,
        methods,
    );
    quote! {
        #imp
        #generated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(attr: TokenStream, item: TokenStream) -> String {
        expand(attr, item).to_string()
    }

    #[test]
    fn a_function_becomes_a_unit_struct_with_its_hook() {
        let out = expanded(
            quote!(output_stream),
            quote!(
                async fn redact_pii(chunk: &Chunk, state: &mut usize) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(
            out.contains("pub struct RedactPii") || out.contains("struct RedactPii"),
            "{out}"
        );
        assert!(out.contains("\"redact-pii\""), "{out}");
        assert!(out.contains("type State = usize"), "{out}");
        assert!(out.contains("Hooks :: OUTPUT_STREAM"), "{out}");
        assert!(out.contains("FromOutputStream"), "{out}");
        assert!(out.contains("OutputProcessor for RedactPii"), "{out}");
        assert!(!out.contains("InputProcessor for RedactPii"), "{out}");
        assert!(
            out.contains(". await"),
            "an async function is awaited: {out}"
        );
        assert!(!out.contains("compile_error"), "{out}");
    }

    #[test]
    fn options_set_the_id_name_and_flags() {
        let out = expanded(
            quote!(
                output_stream,
                id = "pii",
                name = Pii,
                process_data_parts,
                stream_history
            ),
            quote!(
                fn redact(chunk: &Chunk) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(out.contains("struct Pii"), "{out}");
        assert!(out.contains("\"pii\""), "{out}");
        assert!(
            out.contains("fn process_data_parts (& self) -> bool { true }"),
            "{out}"
        );
        assert!(
            out.contains("fn keeps_stream_history (& self) -> bool { true }"),
            "{out}"
        );
        assert!(
            !out.contains(". await"),
            "a plain function is not awaited: {out}"
        );
    }

    #[test]
    fn an_impl_block_gets_every_hook_and_both_markers() {
        let out = expanded(
            quote!(),
            quote! {
                impl Guard {
                    fn helper(&self) {}
                    async fn process_input(&self, messages: Vec<Message>) {}
                    fn process_output_step(&self, text: &str, state: &mut Counter) {}
                }
            },
        );
        assert!(out.contains("Hooks :: INPUT"), "{out}");
        assert!(out.contains("Hooks :: OUTPUT_STEP"), "{out}");
        assert!(out.contains("type State = Counter"), "{out}");
        assert!(out.contains("InputProcessor for Guard"), "{out}");
        assert!(out.contains("OutputProcessor for Guard"), "{out}");
        assert!(out.contains("\"guard\""), "{out}");
        assert!(!out.contains("fn process_helper"), "{out}");
    }

    #[test]
    fn every_mistake_is_reported_and_the_item_is_kept() {
        let out = expanded(
            quote!(ouput_stream, id = "Bad Id", colour = 3),
            quote!(
                fn shout(chunk: &Chunk) -> StreamAction {
                    todo!()
                }
            ),
        );
        assert!(out.contains("did you mean `output_stream`"), "{out}");
        assert!(out.contains("not a valid processor id"), "{out}");
        assert!(out.contains("unknown option `colour`"), "{out}");
        assert!(
            out.contains("fn shout"),
            "the function is still emitted: {out}"
        );
        assert!(
            out.contains("impl :: processors :: __private :: InputProcessor for Shout"),
            "stub impls limit fallout: {out}"
        );
    }
}
