//! Code generation from a checked configuration: a block that builds the agent, with
//! compile-time checks the configuration could not make from the syntax alone (processor
//! kinds, ids, retry hooks), each spanned at the entry it is about.

use super::config::{Config, Entry, peel};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

/// The block that builds the agent.
pub fn agent(c: &Config) -> TokenStream {
    let p = &c.private;
    let mut lets = Vec::new();
    let mut checks = Vec::new();

    let model = c.model.as_ref().map(|m| quote!(#m));
    let memory_var = format_ident!("__processors_memory");
    if let Some(m) = &c.memory {
        lets.push(quote_spanned!(m.span()=> let #memory_var: #p::Memory = #m;));
    }
    let memory_ty = quote!(#p::Memory);

    let mut all_slots: Vec<Slot> = Vec::new();
    let mut pipelines = Vec::new();
    for (list, assert_fn) in [
        (&c.input, format_ident!("assert_input")),
        (&c.output, format_ident!("assert_output")),
        (&c.error, format_ident!("assert_error")),
    ] {
        let Some(list) = list else {
            pipelines.push(quote!(()));
            continue;
        };
        let key = list.key.to_string();
        let mut items = Vec::new();
        let mut slots: Vec<Slot> = Vec::new();
        for (i, entry) in list.entries.iter().enumerate() {
            match entry {
                Entry::Memory(word) => {
                    items.push(
                        quote_spanned!(word.span()=> ::core::clone::Clone::clone(&#memory_var)),
                    );
                    slots.push(Slot {
                        var: memory_var.clone(),
                        ty: Some(memory_ty.clone()),
                        span: word.span(),
                        text: "memory".to_owned(),
                    });
                }
                Entry::Processor(e) => {
                    let var = format_ident!("__processors_{}_{}", key, i);
                    lets.push(quote_spanned!(e.span()=> let #var = #p::#assert_fn(#e);));
                    items.push(quote!(#var));
                    slots.push(Slot {
                        var,
                        ty: type_of(e),
                        span: e.span(),
                        text: quote!(#e).to_string(),
                    });
                }
            }
        }
        // Two processors with one id in one list would share state.
        for (j, b) in slots.iter().enumerate() {
            for a in &slots[..j] {
                if a.text == b.text {
                    continue; // reported by validation
                }
                let message = format!(
                    "`{}` and `{}` in `{key}` have the same processor id, so they would share one state; give one of them another id (`#[processor(id = \"...\")]`)",
                    a.text, b.text
                );
                let (av, bv) = (&a.var, &b.var);
                match (&a.ty, &b.ty) {
                    (Some(at), Some(bt)) => checks.push(quote_spanned! {b.span=>
                        const _: () = ::core::assert!(
                            !#p::same_id(
                                <#at as #p::Processor>::STATIC_ID,
                                <#bt as #p::Processor>::STATIC_ID,
                            ),
                            "{}",
                            #message
                        );
                    }),
                    _ => checks.push(quote_spanned! {b.span=>
                        {
                            fn __processors_distinct<A: #p::Processor, B: #p::Processor>(_: &A, _: &B) {
                                const {
                                    ::core::assert!(!#p::same_id(A::STATIC_ID, B::STATIC_ID), "{}", #message)
                                }
                            }
                            __processors_distinct(&#av, &#bv);
                        }
                    }),
                }
            }
        }
        pipelines.push(quote!((#(#items,)*)));
        all_slots.extend(slots);
    }

    // max_processor_retries needs a processor that can ask for a retry.
    if let Some((key, _)) = &c.max_processor_retries
        && c.error.as_ref().is_none_or(|e| e.entries.is_empty())
    {
        let message = "`max_processor_retries` is set, but no processor of this agent can ask for a retry (none has `process_output_step`, `process_input_step` or `process_api_error`); remove the key or add such a processor";
        if all_slots.is_empty() {
            checks.push(quote_spanned!(key.span()=> const _: () = ::core::panic!("{}", #message);));
        } else if all_slots.iter().all(|s| s.ty.is_some()) {
            let tys = all_slots.iter().map(|s| s.ty.clone().unwrap_or_default());
            checks.push(quote_spanned! {key.span()=>
                const _: () = ::core::assert!(
                    false #(|| <#tys as #p::Processor>::HOOKS.can_retry())*,
                    "{}",
                    #message
                );
            });
        } else {
            let gens: Vec<Ident> = (0..all_slots.len())
                .map(|i| format_ident!("P{}", i))
                .collect();
            let vars = all_slots.iter().map(|s| &s.var);
            checks.push(quote_spanned! {key.span()=>
                {
                    fn __processors_can_retry<#(#gens: #p::Processor),*>(#(_: &#gens),*) {
                        const {
                            ::core::assert!(false #(|| #gens::HOOKS.can_retry())*, "{}", #message)
                        }
                    }
                    __processors_can_retry(#(&#vars),*);
                }
            });
        }
    }

    let name = c.name.as_ref().map(|n| quote!(.name(#n)));
    let instructions = c.instructions.as_ref().map(|i| quote!(.instructions(#i)));
    let tools = c.tools.iter().map(|t| quote_spanned!(t.span()=> .tool(#t)));
    let memory = c
        .memory
        .as_ref()
        .map(|_| quote!(.memory(::core::clone::Clone::clone(&#memory_var))));
    let retries = c
        .max_processor_retries
        .as_ref()
        .map(|(_, n)| quote!(.max_processor_retries(#n)));
    let steps = c
        .max_steps
        .as_ref()
        .map(|s| quote_spanned!(s.span()=> .max_steps(#s)));
    let on_violation = c
        .on_violation
        .as_ref()
        .map(|v| quote_spanned!(v.span()=> .on_violation(#v)));
    let (input, output, error) = (&pipelines[0], &pipelines[1], &pipelines[2]);
    quote! {{
        #(#lets)*
        #(#checks)*
        #p::Agent::builder()
            #name
            #instructions
            #(#tools)*
            #memory
            #retries
            #steps
            #on_violation
            .input_pipeline(#input)
            .output_pipeline(#output)
            .error_pipeline(#error)
            .__build_checked(#model)
    }}
}

/// A processor of a list, as the checks see it.
struct Slot {
    var: Ident,
    /// The processor's type, when known from the syntax.
    ty: Option<TokenStream>,
    span: Span,
    text: String,
}

/// The type of a processor expression when the syntax says it for sure: a unit-struct path
/// (`Shout`, `filters::Shout`) or a struct literal (`Pii { strict: true }`). Anything else
/// (calls, constants, enum variants, generic types) is checked through a generic function.
fn type_of(e: &Expr) -> Option<TokenStream> {
    fn camel(ident: &Ident) -> bool {
        let s = ident.to_string();
        s.starts_with(|c: char| c.is_ascii_uppercase()) && s.chars().any(|c| c.is_ascii_lowercase())
    }
    fn lower(ident: &Ident) -> bool {
        ident
            .to_string()
            .starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
            || ident == "crate"
            || ident == "self"
            || ident == "super"
    }
    let path = match peel(e) {
        Expr::Path(p) if p.qself.is_none() => &p.path,
        Expr::Struct(s) if s.qself.is_none() => &s.path,
        Expr::Paren(p) => return type_of(&p.expr),
        _ => return None,
    };
    let segs: Vec<_> = path.segments.iter().collect();
    let (last, modules) = segs.split_last()?;
    let plain = last.arguments.is_none() && modules.iter().all(|s| s.arguments.is_none());
    (plain && camel(&last.ident) && modules.iter().all(|s| lower(&s.ident))).then(|| quote!(#path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_read_off_the_syntax() {
        let t = |e: TokenStream| type_of(&syn::parse2(e).unwrap()).map(|t| t.to_string());
        assert_eq!(t(quote!(Redact)), Some("Redact".into()));
        assert_eq!(
            t(quote!(crate::x::Limiter)),
            Some("crate :: x :: Limiter".into())
        );
        assert_eq!(t(quote!(Pii { strict: true })), Some("Pii".into()));
        assert_eq!(
            t(quote!(TokenLimiter::new(4))),
            None,
            "a constructor may return another type"
        );
        assert_eq!(t(quote!(make_limiter(4))), None);
        assert_eq!(t(quote!(limits::make(4))), None);
        assert_eq!(t(quote!(redact)), None);
        assert_eq!(t(quote!(PII)), None, "a constant");
        assert_eq!(t(quote!(Mode::Strict)), None, "an enum variant");
        assert_eq!(t(quote!(Limiter::<4>)), None, "generic arguments");
    }
}
