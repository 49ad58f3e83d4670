//! `#[tool]`: an async function as a tool. Its doc comment is the description, its parameters
//! (or one `#[args]` type) give the JSON Schema, a `ToolContext` parameter is asked for by
//! type, and it returns anything `Serialize` (or a `Result` of it).

use crate::errors::{Errors, Keys};
use crate::names;
use crate::types::{is_option, last_segment_is};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, LitStr, Pat, Path, ReturnType, Token, Type};

/// The options.
const KEYS: &str = "`name = \"…\"`, `description = \"…\"` and `crate = path`";

/// `#[tool(...)]`'s options, as written.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    description: Option<LitStr>,
    krate: Option<Path>,
}

/// The options, parsed with every mistake recorded.
struct RawOptions {
    options: Options,
    errors: Errors,
}

impl Parse for RawOptions {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (mut options, mut errors, mut keys) =
            (Options::default(), Errors::default(), Keys::default());
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            input.parse::<Token![=]>().map_err(|e| {
                syn::Error::new(e.span(), format!("`{key}` takes a value: `{key} = …`"))
            })?;
            let first = keys.first_time(&key, &mut errors);
            match key.to_string().as_str() {
                "name" => {
                    let v: LitStr = input.parse()?;
                    if first {
                        options.name = Some(v);
                    }
                }
                "description" => {
                    let v: LitStr = input.parse()?;
                    if first {
                        options.description = Some(v);
                    }
                }
                "crate" => {
                    let v: Path = input.parse()?;
                    if first {
                        options.krate = Some(v);
                    }
                }
                _ => {
                    input.parse::<syn::Expr>()?;
                    errors.at(
                        &key,
                        format!("`#[tool]` has no option `{key}`; it takes {KEYS}"),
                    );
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(RawOptions { options, errors })
    }
}

/// A parameter of the function, as the tool reads it.
enum Param {
    /// One argument of the call, by the parameter's name.
    Arg {
        name: String,
        ty: Box<Type>,
        description: Option<String>,
    },
    /// All of the call's arguments, read into one type (`#[args]`).
    Args { ty: Box<Type> },
    /// The call's `ToolContext`.
    Context,
}

/// Expands `#[tool]` on `item`.
pub fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut item: ItemFn = match syn::parse2(item) {
        Ok(item) => item,
        Err(e) => {
            let e = syn::Error::new(e.span(), "`#[tool]` goes on an `async fn`");
            return e.into_compile_error();
        }
    };
    let RawOptions {
        options,
        mut errors,
    } = match syn::parse2(attr) {
        Ok(o) => o,
        Err(e) => {
            let e = e.into_compile_error();
            return quote!(#e #item);
        }
    };
    check_signature(&item, &mut errors);
    let params = params(&mut item, &mut errors);
    let description = description(&item, &options, &mut errors);
    let name = tool_name(&item, &options, &mut errors);
    if !errors.is_empty() {
        let errors = errors.into_compile_errors();
        return quote!(#errors #item);
    }
    let generated = generate(&item, &options, &params, &name, &description);
    // A tool is async because the agent awaits it, whether its body waits or not.
    item.attrs
        .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
    quote!(#item #generated)
}

/// What a tool function cannot be: not async, generic, a method, unsafe, variadic.
fn check_signature(item: &ItemFn, errors: &mut Errors) {
    let sig = &item.sig;
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            "a tool is an `async fn`: write `async fn` (the agent awaits the call)",
        );
    }
    if !sig.generics.params.is_empty() {
        errors.at(
            &sig.generics,
            "a tool cannot be generic: its parameters' types make the schema the model reads, which is one",
        );
    }
    if let Some(r) = sig.receiver() {
        errors.at(r, "`#[tool]` goes on a free function, not on a method");
    }
    if let syn::Safety::Unsafe(u) = &sig.safety {
        errors.at(
            u,
            "a tool cannot be an `unsafe fn`: the agent calls it with the model's arguments",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.at(v, "a tool cannot be variadic");
    }
}

/// The function's parameters as the tool reads them; their `#[args]` and doc attributes are
/// taken off the function.
fn params(item: &mut ItemFn, errors: &mut Errors) -> Vec<Param> {
    let mut params = Vec::new();
    let (mut context, mut args): (Option<Span>, Option<Attribute>) = (None, None);
    for arg in item.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = arg else { continue };
        let docs = take_docs(&mut pt.attrs);
        let marked = take_args_attr(&mut pt.attrs);
        if is_context(&pt.ty) {
            if let Some(first) = context {
                errors.at(&pt.ty, "the `ToolContext` is asked for twice; keep one");
                errors.span(first, "first asked for here");
            }
            context = Some(pt.ty.span());
            params.push(Param::Context);
            continue;
        }
        if let Type::Reference(r) = &*pt.ty {
            errors.at(
                r,
                "a tool's parameter is read from the model's JSON, so it is owned: take `String` for `&str`, `Vec<T>` for `&[T]`, or the owned type",
            );
            continue;
        }
        if let Some(attr) = marked {
            args.get_or_insert(attr);
            params.push(Param::Args { ty: pt.ty.clone() });
            continue;
        }
        match &*pt.pat {
            Pat::Ident(p) if p.ident != "_" => params.push(Param::Arg {
                name: p.ident.unraw().to_string(),
                ty: pt.ty.clone(),
                description: docs,
            }),
            other => errors.at(
                other,
                "a tool's parameter needs a name: the model passes each argument by its parameter's name (or mark one parameter `#[args]` to read all the arguments into its type)",
            ),
        }
    }
    let arguments = params
        .iter()
        .filter(|p| !matches!(p, Param::Context))
        .count();
    if let Some(attr) = args
        && arguments > 1
    {
        errors.at(
            attr,
            "`#[args]` reads all of the call's arguments into one type: it is the function's only parameter besides a `ToolContext`",
        );
    }
    params
}

/// Whether `ty` is the `ToolContext` (by its last path segment).
fn is_context(ty: &Type) -> bool {
    last_segment_is(ty, "ToolContext")
}

/// Takes the `#[args]` attribute off a parameter.
fn take_args_attr(attrs: &mut Vec<Attribute>) -> Option<Attribute> {
    let at = attrs.iter().position(|a| a.path().is_ident("args"))?;
    Some(attrs.remove(at))
}

/// Takes the doc comment off a parameter (a parameter cannot keep one), as its text.
fn take_docs(attrs: &mut Vec<Attribute>) -> Option<String> {
    let (docs, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| a.path().is_ident("doc"));
    *attrs = rest;
    doc_text(&docs)
}

/// The text of doc attributes, one line each, without the space after `///`.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').map(str::to_owned).unwrap_or(l))
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// The tool's description: `description = "…"`, else the function's doc comment.
fn description(item: &ItemFn, options: &Options, errors: &mut Errors) -> String {
    if let Some(d) = &options.description {
        return d.value();
    }
    doc_text(&item.attrs).unwrap_or_else(|| {
        let f = &item.sig.ident;
        errors.at(
            f,
            format!(
                "a tool needs a description, which the model reads to choose it: write a doc comment on `{f}`, or `#[tool(description = \"…\")]`"
            ),
        );
        String::new()
    })
}

/// The name the model calls the tool by: `name = "…"`, else the function's.
fn tool_name(item: &ItemFn, options: &Options, errors: &mut Errors) -> String {
    let (name, span) = match &options.name {
        Some(n) => (n.value(), n.span()),
        None => {
            let ident = &item.sig.ident;
            (ident.unraw().to_string(), ident.span())
        }
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        errors.span(
            span,
            format!(
                "`{name}` cannot be a tool's name: providers take 1 to 64 ASCII letters, digits, `_` and `-`"
            ),
        );
    }
    name
}

/// `weather_now` → `WeatherNowTool`.
fn type_name(f: &Ident) -> Ident {
    let pascal = names::upper_camel(&f.unraw().to_string());
    format_ident!("{}Tool", pascal, span = f.span())
}

/// The tool's type and its `Tool` impl.
fn generate(
    item: &ItemFn,
    options: &Options,
    params: &[Param],
    name: &str,
    description: &str,
) -> TokenStream {
    let p = match &options.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::processors::__private),
    };
    let (vis, f) = (&item.vis, &item.sig.ident);
    let ty = type_name(f);
    let doc = format!(
        "The `{name}` tool, made by `#[tool]` from [`{f}`]: give it to an agent as `tools: [{ty}]` in `agent!`, or `Agent::builder().tool({ty})`."
    );
    let schema = schema(&p, params);
    let names: Vec<&str> = params
        .iter()
        .filter_map(|p| match p {
            Param::Arg { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let whole = params.iter().any(|p| matches!(p, Param::Args { .. }));
    let read = match whole {
        true => quote!(),
        false => {
            quote!(let mut __processors_args = #p::ToolArgs::new(#name, __processors_args, &[#(#names),*])?;)
        }
    };
    let mut uses_context = false;
    let values: Vec<TokenStream> = params
        .iter()
        .map(|param| match param {
            Param::Arg { name, ty, .. } => {
                quote_spanned!(ty.span()=> __processors_args.take::<#ty>(#name)?)
            }
            Param::Args { ty } => {
                quote_spanned!(ty.span()=> #p::args_struct::<#ty>(#name, __processors_args)?)
            }
            Param::Context => {
                uses_context = true;
                quote!(__processors_cx)
            }
        })
        .collect();
    let unused = (!uses_context).then(|| quote!(let _ = __processors_cx;));
    let output = output(&p, item, quote!(#f(#(#values),*).await));
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #ty;

        impl #ty {
            /// The name the model calls the tool by.
            #vis const NAME: &'static str = #name;
        }

        impl #p::Tool for #ty {
            fn name(&self) -> &str {
                #name
            }

            fn description(&self) -> &str {
                #description
            }

            fn parameters(&self) -> &#p::Value {
                static SCHEMA: ::std::sync::OnceLock<#p::Value> = ::std::sync::OnceLock::new();
                SCHEMA.get_or_init(|| #schema)
            }

            fn execute<'a>(
                &'a self,
                __processors_args: #p::Value,
                __processors_cx: #p::ToolContext<'a>,
            ) -> #p::BoxFuture<'a, ::core::result::Result<#p::Value, #p::BoxError>> {
                ::std::boxed::Box::pin(async move {
                    #unused
                    #read
                    #output
                })
            }
        }
    }
}

/// The expression of the parameters' schema.
fn schema(p: &TokenStream, params: &[Param]) -> TokenStream {
    if let Some(ty) = params.iter().find_map(|p| match p {
        Param::Args { ty } => Some(ty),
        _ => None,
    }) {
        return quote_spanned!(ty.span()=> #p::args_schema::<#ty>());
    }
    let specs = params.iter().filter_map(|param| match param {
        Param::Arg {
            name,
            ty,
            description,
        } => {
            let description = match description {
                Some(d) => quote!(::core::option::Option::Some(#d)),
                None => quote!(::core::option::Option::None),
            };
            let required = !is_option(ty);
            Some(quote_spanned! {ty.span()=>
                #p::ParamSpec {
                    name: #name,
                    description: #description,
                    schema: #p::param_schema::<#ty>,
                    required: #required,
                }
            })
        }
        _ => None,
    });
    quote!(#p::params_schema(&[#(#specs),*]))
}

/// The call's result as JSON: a `Result` (by its last path segment) is the tool's success or
/// error, anything else its success.
fn output(p: &TokenStream, item: &ItemFn, call: TokenStream) -> TokenStream {
    let ReturnType::Type(_, ty) = &item.sig.output else {
        return quote!(#call; #p::tool_output(()));
    };
    let ok = match &**ty {
        Type::Path(tp) => tp.path.segments.last().and_then(|s| {
            if s.ident != "Result" {
                return None;
            }
            match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(t.clone()),
                    _ => None,
                }),
                _ => None,
            }
        }),
        _ => None,
    };
    match ok {
        Some(ok) => quote_spanned!(ok.span()=> #p::tool_result::<#ok, _>(#call)),
        None => quote_spanned!(ty.span()=> #p::tool_output::<#ty>(#call)),
    }
}
