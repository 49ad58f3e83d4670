//! The processor a `#[processor]` invocation describes, checked: what expansion needs and
//! nothing it has to check again. Every part keeps the user's tokens, so errors point at them.

use super::attr::{On, Options, RawOptions};
use crate::errors::Errors;
use crate::hooks::Hook;
use crate::names;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Generics, Ident, ItemFn, ItemImpl, LitStr, Pat, Signature, Type};

pub struct Processor<'a> {
    /// `<crate>::__private`: where generated code takes its names from.
    pub private: TokenStream,
    pub source: Source<'a>,
    /// The generics of the generated impls (an impl block's; none for a function).
    pub generics: Generics,
    pub id: String,
    /// `type State`: the attribute's `state = T`, else the first hook's `state: &mut T`.
    /// The other hooks' state parameters are checked against it by the compiler.
    pub state: Option<Type>,
    pub hooks: Vec<HookFn<'a>>,
    pub process_data_parts: bool,
    pub stream_history: bool,
}

/// The item the processor is made of.
pub enum Source<'a> {
    /// A function implementing one hook, and the unit struct generated for it.
    Fn { item: &'a ItemFn, name: Ident },
    /// An inherent impl block whose methods named after hooks are the hooks.
    Impl(&'a ItemImpl),
}

/// A user function implementing a hook.
pub struct HookFn<'a> {
    pub hook: Hook,
    pub sig: &'a Signature,
    pub params: Vec<Param<'a>>,
}

/// A parameter of a hook function, apart from `&self`.
pub enum Param<'a> {
    /// `state: &mut T`, holding `T`: the processor's per-request state.
    State(&'a Type),
    /// Any other type, taken out of the hook's arguments through its extractor trait.
    Extract(&'a Type),
}

impl<'a> Processor<'a> {
    /// Checks the attribute's options (`None` when they did not parse) and the item. `None`
    /// when the item is neither a function nor an impl block.
    pub fn from_item(
        item: &'a syn::Item,
        options: Option<RawOptions>,
        errors: &mut Errors,
    ) -> Option<Self> {
        let options = |on| options.map(|o| o.validate(on, errors)).unwrap_or_default();
        match item {
            syn::Item::Fn(f) => {
                let options = options(On::Fn);
                Some(Self::from_fn(f, options, errors))
            }
            syn::Item::Impl(imp) => {
                let options = options(On::Impl);
                Some(Self::from_impl(imp, options, errors))
            }
            other => {
                errors.span(
                    head_span(other),
                    format!(
                        "#[processor] goes on a function (which implements one hook) or on an impl block (whose methods are hooks), not on {}",
                        kind(other)
                    ),
                );
                None
            }
        }
    }

    fn from_fn(f: &'a ItemFn, options: Options, errors: &mut Errors) -> Self {
        let sig = &f.sig;
        let fn_name = sig.ident.unraw().to_string();
        let name = options
            .name
            .clone()
            .unwrap_or_else(|| Ident::new(&names::upper_camel(&fn_name), sig.ident.span()));
        let id = id(&options, &sig.ident, errors);
        // After other mistakes in the attribute (a misspelt hook, say), they explain.
        if options.hook.is_none() && errors.is_empty() {
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
        let hooks = options
            .hook
            .iter()
            .map(|(hook, _)| HookFn {
                hook: *hook,
                sig,
                params: params(sig, errors),
            })
            .collect();
        Self::new(
            Source::Fn { item: f, name },
            Generics::default(),
            id,
            hooks,
            options,
            errors,
        )
    }

    fn from_impl(imp: &'a ItemImpl, options: Options, errors: &mut Errors) -> Self {
        if let Some((_, path, _)) = &imp.trait_ {
            errors.at(
                path,
                "#[processor] goes on an inherent impl block (`impl MyProcessor { ... }`), not on a trait impl",
            );
        }
        if let Some(name) = &options.name {
            errors.at(
                name,
                "`name` names the struct generated for a function; an impl block already has its type",
            );
        }
        let type_name = match &*imp.self_ty {
            Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
            _ => None,
        };
        let id = match type_name {
            Some(name) => id(&options, name, errors),
            None => options
                .id
                .as_ref()
                .map_or_else(|| "processor".to_owned(), LitStr::value),
        };
        let mut hooks: Vec<HookFn> = Vec::new();
        for item in &imp.items {
            let syn::ImplItem::Fn(m) = item else { continue };
            let Some(hook) = hook_method(m, errors) else {
                continue;
            };
            if hooks.iter().any(|h| h.hook == hook) {
                errors.at(
                    &m.sig.ident,
                    format!(
                        "`{}` is defined twice; a processor has one method per hook",
                        hook.method()
                    ),
                );
                continue;
            }
            hooks.push(HookFn {
                hook,
                sig: &m.sig,
                params: params(&m.sig, errors),
            });
        }
        if hooks.is_empty() && errors.is_empty() {
            errors.span(
                imp.impl_token.span,
                format!(
                    "this impl block has no hook method; name a method after a hook: {}",
                    Hook::list_methods()
                ),
            );
        }
        Self::new(
            Source::Impl(imp),
            imp.generics.clone(),
            id,
            hooks,
            options,
            errors,
        )
    }

    fn new(
        source: Source<'a>,
        generics: Generics,
        id: String,
        hooks: Vec<HookFn<'a>>,
        options: Options,
        errors: &mut Errors,
    ) -> Self {
        // Checked against the hooks there are; without any, the missing hook is the mistake.
        let misplaced = !hooks.is_empty() && !hooks.iter().any(|h| h.hook == Hook::OutputStream);
        let flags = [&options.process_data_parts, &options.stream_history];
        for flag in flags.into_iter().flatten().filter(|_| misplaced) {
            errors.at(
                flag,
                format!(
                    "`{flag}` applies to the `output_stream` hook, which this processor does not implement; remove it"
                ),
            );
        }
        let first_state = hooks.iter().flat_map(|h| &h.params).find_map(|p| match p {
            Param::State(ty) => Some((*ty).clone()),
            Param::Extract(_) => None,
        });
        Processor {
            private: options.private(),
            source,
            generics,
            id,
            state: options.state.or(first_state),
            hooks,
            process_data_parts: options.process_data_parts.is_some(),
            stream_history: options.stream_history.is_some(),
        }
    }

    /// The type the generated impls are for.
    pub fn self_ty(&self) -> TokenStream {
        match &self.source {
            Source::Fn { name, .. } => quote!(#name),
            Source::Impl(imp) => {
                let ty = &imp.self_ty;
                quote!(#ty)
            }
        }
    }
}

/// The id: the attribute's, else `name` in kebab-case (checked, since a name can make an
/// invalid id).
fn id(options: &Options, name: &Ident, errors: &mut Errors) -> String {
    if let Some(lit) = &options.id {
        return lit.value();
    }
    let id = names::kebab(&name.unraw().to_string());
    if !names::valid_id(&id) {
        errors.at(
            name,
            format!(
                "the id derived from this name, `{id}`, is not a valid processor id; set one with `id = \"...\"`"
            ),
        );
    }
    id
}

/// The hook an impl block's method implements, if it is named after one and is shaped like
/// one; `None` for helper methods and for mistakes (which are reported).
fn hook_method(m: &syn::ImplItemFn, errors: &mut Errors) -> Option<Hook> {
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
        return None;
    };
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
    Some(hook)
}

/// The parameters of a hook function; `state: T` where `T` is not `&mut _` is reported.
fn params<'a>(sig: &'a Signature, errors: &mut Errors) -> Vec<Param<'a>> {
    let mut params = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(pt) = arg else { continue };
        let is_state = matches!(&*pt.pat, Pat::Ident(i) if i.ident == "state");
        match &*pt.ty {
            Type::Reference(r) if is_state && r.mutability.is_some() => {
                params.push(Param::State(&r.elem));
            }
            other if is_state => errors.at(
                other,
                "the state parameter is `state: &mut YourState` (YourState: Default + Send); its type is the processor's per-request state",
            ),
            other => params.push(Param::Extract(other)),
        }
    }
    params
}

fn kind(item: &syn::Item) -> &'static str {
    match item {
        syn::Item::Struct(_) => "a struct",
        syn::Item::Enum(_) => "an enum",
        syn::Item::Trait(_) => "a trait",
        syn::Item::Mod(_) => "a module",
        syn::Item::Const(_) | syn::Item::Static(_) => "a constant",
        _ => "this item",
    }
}

fn head_span(item: &syn::Item) -> Span {
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
