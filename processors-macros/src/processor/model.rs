//! The processor a `#[processor]` invocation describes, checked: what expansion needs and
//! nothing it has to check again. Every part keeps the user's tokens, so errors point at them.

use super::attr::{On, Options, RawOptions};
use crate::errors::Errors;
use crate::hooks::Hook;
use crate::names;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Generics, Ident, ItemFn, ItemImpl, LitStr, Pat, ReturnType, Signature, Type};

pub struct Processor<'a> {
    /// `<crate>::__private`: where generated code takes its names from.
    pub private: TokenStream,
    pub source: Source<'a>,
    /// The generics of the generated impls (an impl block's; none for a function).
    pub generics: Generics,
    /// Whether the impl block borrows (has lifetimes other than `'static`), which is reported;
    /// the fallback's stubs then name the type with `'static` lifetimes.
    pub borrows: bool,
    pub id: Id<'a>,
    /// `type State`: the attribute's `state = T`, else the first hook's `state: &mut T`.
    /// The other hooks' state parameters are checked against it by the compiler.
    pub state: Option<Type>,
    pub hooks: Vec<HookFn<'a>>,
    pub process_data_parts: bool,
    pub stream_history: bool,
}

/// The processor's id.
pub enum Id<'a> {
    /// Known at compile time: the attribute's `id`, or derived from the name.
    Static(String),
    /// Given by the impl block's `fn id(&self) -> &str`, per value.
    Method(&'a syn::ImplItemFn),
}

/// The item the processor is made of.
pub enum Source<'a> {
    /// A function implementing one hook, and the struct generated for it: a unit struct, or
    /// one field per `#[config]` parameter. `name` is `None` when no valid name derives from
    /// the function's (which is reported).
    Fn {
        item: &'a ItemFn,
        name: Option<Ident>,
        config: Vec<ConfigField<'a>>,
        /// Whether the struct derives `Deserialize` (`options`): its fields are its options in
        /// files.
        options: bool,
    },
    /// An inherent impl block whose methods named after hooks are the hooks.
    Impl(&'a ItemImpl),
}

/// A `#[config]` parameter: a field of the generated struct, passed to every call.
pub struct ConfigField<'a> {
    /// The parameter's name, which names the field.
    pub name: &'a Ident,
    /// The field's type: `T` for a parameter `&T` or `T`, `String` for `&str`, `Vec<T>` for
    /// `&[T]`.
    pub field: Type,
    /// The parameter's type as written.
    pub ty: &'a Type,
    /// Passed as a copy (a parameter `T`) rather than a reference (`&T`).
    pub by_value: bool,
    /// The parameter's doc comment, for the field.
    pub docs: Vec<&'a syn::Attribute>,
}

/// A user function implementing a hook.
#[derive(Clone)]
pub struct HookFn<'a> {
    pub hook: Hook,
    pub sig: &'a Signature,
    pub params: Vec<Param<'a>>,
    /// The function's body.
    pub body: &'a syn::Block,
}

impl HookFn<'_> {
    /// Whether the hook asks for a retry as written: a hook whose abort may retry (a step's,
    /// a tool call's) with a body that calls `.retry(true)`. A retry that depends on a value
    /// is not counted; a `.retry(true)` on something other than the abort is.
    pub fn asks_for_retry(&self) -> bool {
        matches!(
            self.hook,
            Hook::InputStep | Hook::OutputStep | Hook::ToolCall
        ) && calls_retry_true(self.body.to_token_stream())
    }
}

/// Whether `tokens` hold `. retry (true)`, at any depth.
fn calls_retry_true(tokens: TokenStream) -> bool {
    use proc_macro2::{Delimiter, TokenTree};
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    tokens.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Group(g) => calls_retry_true(g.stream()),
        TokenTree::Ident(name) if name == "retry" && i > 0 => {
            let dot = matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
            let arg = match tokens.get(i + 1) {
                Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
                    g.stream().to_string() == "true"
                }
                _ => false,
            };
            dot && arg
        }
        _ => false,
    })
}

/// A parameter of a hook function, apart from `&self`.
#[derive(Clone, Copy)]
pub enum Param<'a> {
    /// `state: &mut T`, holding `T`: the processor's per-request state.
    State(&'a Type),
    /// A `#[config]` parameter: the field of that index.
    Config(usize),
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
        let name = options
            .name
            .clone()
            .or_else(|| struct_name(&sig.ident, errors));
        let id = Id::Static(id(&options, &sig.ident, errors));
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
        let mut config = Vec::new();
        let params = params(sig, Some(&mut config), errors);
        if let Some(word) = &options.options
            && config.is_empty()
        {
            errors.at(
                word,
                "`options` makes the `#[config]` parameters the processor's options in files, and this function has none: mark the parameters that configure it `#[config]`",
            );
        }
        let hooks = options
            .hook
            .iter()
            .map(|(hook, _)| HookFn {
                hook: *hook,
                sig,
                params: params.clone(),
                body: &f.block,
            })
            .collect();
        Self::new(
            Source::Fn {
                item: f,
                name,
                config,
                options: options.options.is_some(),
            },
            Generics::default(),
            id,
            hooks,
            options,
            errors,
        )
    }

    fn from_impl(imp: &'a ItemImpl, options: Options, errors: &mut Errors) -> Self {
        if let Some((path, _)) = &imp.trait_ {
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
        if let Some(word) = &options.options {
            errors.at(
                word,
                "`options` is for a function's `#[config]` parameters; an impl block's type is yours: derive `serde::Deserialize` on it, with `#[serde(deny_unknown_fields)]`, to give it options in files",
            );
        }
        let borrows = check_static(imp, errors);
        let id_method = imp.items.iter().find_map(|item| match item {
            syn::ImplItem::Fn(m) if m.sig.ident == "id" => Some(m),
            _ => None,
        });
        let id = match id_method {
            Some(m) => {
                check_id_method(m, options.id.as_ref(), errors);
                Id::Method(m)
            }
            None => {
                let type_name = match &*imp.self_ty {
                    Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
                    _ => None,
                };
                Id::Static(match type_name {
                    Some(name) => id(&options, name, errors),
                    None => options
                        .id
                        .as_ref()
                        .map_or_else(|| "processor".to_owned(), LitStr::value),
                })
            }
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
                params: params(&m.sig, None, errors),
                body: &m.block,
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
        let mut p = Self::new(
            Source::Impl(imp),
            imp.generics.clone(),
            id,
            hooks,
            options,
            errors,
        );
        p.borrows = borrows;
        p
    }

    fn new(
        source: Source<'a>,
        generics: Generics,
        id: Id<'a>,
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
            Param::Config(_) | Param::Extract(_) => None,
        });
        if let Some(state) = &options.state {
            check_owned(state, STATE_BORROWS, errors);
        }
        Processor {
            private: options.private(),
            source,
            generics,
            borrows: false,
            id,
            state: options.state.or(first_state),
            hooks,
            process_data_parts: options.process_data_parts.is_some(),
            stream_history: options.stream_history.is_some(),
        }
    }

    /// The type the generated impls are for; `None` for a function whose struct has no
    /// valid name.
    pub fn self_ty(&self) -> Option<TokenStream> {
        match &self.source {
            Source::Fn { name, .. } => name.as_ref().map(|name| quote!(#name)),
            Source::Impl(imp) => {
                let ty = &imp.self_ty;
                Some(quote!(#ty))
            }
        }
    }

    /// The `#[config]` fields (none for an impl block).
    pub fn config(&self) -> &[ConfigField<'a>] {
        match &self.source {
            Source::Fn { config, .. } => config,
            Source::Impl(_) => &[],
        }
    }
}

/// The struct name derived from a function's: `redact_pii` → `RedactPii`; `None`, reported,
/// when that is no identifier (`_2nd_pass` → `2ndPass`, `self_` → `Self`).
fn struct_name(fn_name: &Ident, errors: &mut Errors) -> Option<Ident> {
    let derived = names::upper_camel(&fn_name.unraw().to_string());
    let why = if derived.is_empty() {
        "is empty".to_owned()
    } else if derived.starts_with(|c: char| c.is_ascii_digit()) {
        format!("would be `{derived}`, which starts with a digit")
    } else if syn::parse_str::<Ident>(&derived).is_err() {
        format!("would be `{derived}`, a keyword")
    } else {
        return Some(Ident::new(&derived, fn_name.span()));
    };
    errors.at(
        fn_name,
        format!(
            "the name of the struct `#[processor]` generates for this function {why}; name it with `name = ...`, like `#[processor(output_stream, name = MyProcessor)]`"
        ),
    );
    None
}

/// What the messages about borrowed data say: a processor and its state live longer than any
/// borrow a hook could make.
const PROCESSOR_BORROWS: &str = "a processor is `'static`: the agent keeps it for as long as it lives and shares it between runs, so it cannot borrow; hold owned data (`String`, `Vec<T>`, `Arc<T>`) or `&'static` references";
const STATE_BORROWS: &str = "per-request state is `'static`: the runner creates it for a request and keeps it between hooks, so it cannot borrow; hold owned data, like `Vec<String>` rather than `Vec<&str>`";
const CONFIG_BORROWS: &str = "configuration is a field of the processor, which is `'static`, so it cannot borrow; take owned data, like `words: &[String]` (a `Vec<String>` field) rather than `&[&str]`";

/// Reports, once, a lifetime of the impl block (other than `'static`); whether there was one.
fn check_static(imp: &ItemImpl, errors: &mut Errors) -> bool {
    let lifetime = imp
        .generics
        .lifetimes()
        .next()
        .map(|lt| lt.lifetime.to_token_stream());
    match lifetime.or_else(|| borrowed(&imp.self_ty)) {
        Some(tokens) => {
            errors.at(tokens, PROCESSOR_BORROWS);
            true
        }
        None => false,
    }
}

/// Reports the first borrow in `ty`; whether there was none.
fn check_owned(ty: &Type, message: &str, errors: &mut Errors) -> bool {
    match borrowed(ty) {
        Some(tokens) => {
            errors.at(tokens, message);
            false
        }
        None => true,
    }
}

/// The first borrow in `ty`: a reference or a lifetime other than `'static`.
fn borrowed(ty: &Type) -> Option<TokenStream> {
    let is_static = |lt: &Option<syn::Lifetime>| lt.as_ref().is_some_and(|l| l.ident == "static");
    match ty {
        Type::Reference(r) if !is_static(&r.lifetime) => Some(r.to_token_stream()),
        Type::Reference(r) => borrowed(&r.elem),
        Type::Slice(s) => borrowed(&s.elem),
        Type::Array(a) => borrowed(&a.elem),
        Type::Paren(p) => borrowed(&p.elem),
        Type::Group(g) => borrowed(&g.elem),
        Type::Tuple(t) => t.elems.iter().find_map(borrowed),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => borrowed(t),
                syn::GenericArgument::Lifetime(l) if l.ident != "static" => {
                    Some(l.to_token_stream())
                }
                _ => None,
            }),
            _ => None,
        }),
        Type::TraitObject(t) => t.bounds.iter().find_map(|b| match b {
            syn::TypeParamBound::Lifetime(l) if l.ident != "static" => Some(l.to_token_stream()),
            _ => None,
        }),
        _ => None,
    }
}

/// Checks an impl block's `fn id`, which sets the id per value.
fn check_id_method(m: &syn::ImplItemFn, option: Option<&LitStr>, errors: &mut Errors) {
    if let Some(lit) = option {
        errors.at(
            lit,
            "the id is set twice: by `id = ...` and by the impl block's `fn id`; keep one (`id = ...` for an id every value shares, `fn id(&self) -> &str` for one per value)",
        );
        errors.at(&m.sig.ident, "`fn id` sets the id here");
    }
    let sig = &m.sig;
    let shaped = matches!(sig.receiver(), Some(r) if matches!(r.kind, syn::ReceiverKind::Reference(_, _, None)))
        && sig.inputs.len() == 1
        && sig.asyncness.is_none()
        && sig.generics.params.is_empty()
        && !matches!(sig.output, ReturnType::Default);
    if !shaped {
        errors.at(
            &sig.ident,
            "in a `#[processor]` impl block, `fn id` is the processor's id: write it `fn id(&self) -> &str`",
        );
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
        Some(r) if matches!(r.kind, syn::ReceiverKind::Reference(_, _, None)) => {}
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

/// The parameters of a hook function. `state: T` where `T` is not `&mut _` is reported, and so
/// are `impl Trait` types and borrowed state. `#[config]` parameters go to `config` (a
/// function's); on a method, where there is no `config`, they are reported.
fn params<'a>(
    sig: &'a Signature,
    mut config: Option<&mut Vec<ConfigField<'a>>>,
    errors: &mut Errors,
) -> Vec<Param<'a>> {
    let mut params = Vec::new();
    for arg in &sig.inputs {
        let FnArg::Typed(pt) = arg else { continue };
        if let Some(tokens) = impl_trait(&pt.ty) {
            errors.at(
                tokens,
                "a hook parameter has one type, the one the hook provides, so it cannot be `impl Trait`: name the type (like `text: &str`); the hook's parameter types are listed in the `#[processor]` documentation",
            );
            continue;
        }
        if let Some(attr) = pt.attrs.iter().find(|a| a.path().is_ident("config")) {
            match config.as_deref_mut() {
                Some(fields) => {
                    if let Some(field) = config_field(pt, errors) {
                        params.push(Param::Config(fields.len()));
                        fields.push(field);
                    }
                }
                None => errors.at(
                    attr,
                    "`#[config]` is for processor functions; the hook methods of an impl block read configuration from `&self`",
                ),
            }
            continue;
        }
        let is_state = matches!(&*pt.pat, Pat::Ident(i) if i.ident == "state");
        match &*pt.ty {
            Type::Reference(r) if is_state && r.mutability.is_some() => {
                if check_owned(&r.elem, STATE_BORROWS, errors) {
                    params.push(Param::State(&r.elem));
                }
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

/// The first `impl Trait` in `ty`.
fn impl_trait(ty: &Type) -> Option<&syn::TypeImplTrait> {
    match ty {
        Type::ImplTrait(t) => Some(t),
        Type::Reference(r) => impl_trait(&r.elem),
        Type::Slice(s) => impl_trait(&s.elem),
        Type::Array(a) => impl_trait(&a.elem),
        Type::Paren(p) => impl_trait(&p.elem),
        Type::Group(g) => impl_trait(&g.elem),
        Type::Tuple(t) => t.elems.iter().find_map(impl_trait),
        Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => impl_trait(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// The field of a `#[config]` parameter, `name: &T` or `name: T`.
fn config_field<'a>(pt: &'a syn::PatType, errors: &mut Errors) -> Option<ConfigField<'a>> {
    let Pat::Ident(pat) = &*pt.pat else {
        errors.at(
            &pt.pat,
            "a `#[config]` parameter is named (`limit: usize`): its name is the field's",
        );
        return None;
    };
    let (field, by_value) = match &*pt.ty {
        Type::Reference(r) if r.mutability.is_some() => {
            errors.at(
                r.mutability,
                "configuration is shared by every run of the processor, so it is read-only: take `&T` or, for a `Copy` type, `T`",
            );
            return None;
        }
        Type::Reference(r) => {
            let field: Type = match &*r.elem {
                Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
                    syn::parse_quote!(::std::string::String)
                }
                Type::Slice(s) => {
                    let elem = &s.elem;
                    syn::parse_quote!(::std::vec::Vec<#elem>)
                }
                other => other.clone(),
            };
            if r.lifetime.is_some() {
                errors.at(&r.lifetime, CONFIG_BORROWS);
                return None;
            }
            (field, false)
        }
        other => (other.clone(), true),
    };
    if !check_owned(&field, CONFIG_BORROWS, errors) {
        return None;
    }
    Some(ConfigField {
        name: &pat.ident,
        field,
        ty: &pt.ty,
        by_value,
        docs: pt
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .collect(),
    })
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
