//! `agent!`: parse the fields, validate them into a configuration, expand to a statically
//! dispatched agent with compile-time checks.

mod parse;

use crate::errors::Errors;
use crate::names;
use parse::{AgentDecl, Value};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

const KEYS: [&str; 12] = [
    "name",
    "instructions",
    "model",
    "tools",
    "memory",
    "input",
    "output",
    "error",
    "max_processor_retries",
    "max_steps",
    "on_violation",
    "crate",
];
const LIST_KEYS: [&str; 4] = ["tools", "input", "output", "error"];

/// One entry of a processor list.
enum Entry {
    /// The bare word `memory`: the agent's memory.
    Memory(Ident),
    Processor(Expr),
}

struct List {
    key: Ident,
    entries: Vec<Entry>,
}

#[derive(Default)]
struct Config {
    name: Option<Expr>,
    instructions: Option<Expr>,
    model: Option<Expr>,
    tools: Vec<Expr>,
    memory: Option<(Ident, Expr)>,
    input: Option<List>,
    output: Option<List>,
    error: Option<List>,
    max_processor_retries: Option<(Ident, u32)>,
    max_steps: Option<Expr>,
    on_violation: Option<Expr>,
    krate: Option<syn::Path>,
}

pub fn expand(input: TokenStream) -> TokenStream {
    let decl: AgentDecl = match syn::parse2(input) {
        Ok(d) => d,
        Err(e) => return e.into_compile_error(),
    };
    let mut errors = Errors::default();
    let config = validate(decl, &mut errors);
    if !errors.is_empty() {
        let errs = errors.into_compile_errors();
        // Expand to a value of the right kind, so code using the agent reports nothing more.
        return quote!({ #errs ::core::unreachable!() });
    }
    generate(config)
}

/// The expression inside invisible groups (what `macro_rules!` fragments arrive in).
fn peel(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => peel(&g.expr),
        other => other,
    }
}

fn is_memory_word(e: &Expr) -> Option<Ident> {
    match peel(e) {
        Expr::Path(p) if p.qself.is_none() && p.path.is_ident("memory") => {
            p.path.get_ident().cloned()
        }
        _ => None,
    }
}

fn validate(decl: AgentDecl, errors: &mut Errors) -> Config {
    let mut c = Config::default();
    let mut seen: Vec<Ident> = Vec::new();
    for field in decl.fields {
        let key = field.key;
        let k = key.to_string();
        if !KEYS.contains(&k.as_str()) {
            errors.at(
                &key,
                format!(
                    "unknown key `{k}`{}; valid keys: {}",
                    names::did_you_mean(&k, KEYS),
                    KEYS.join(", ")
                ),
            );
            continue;
        }
        if let Some(first) = seen.iter().find(|s| **s == key) {
            let _ = first;
            errors.at(&key, format!("`{k}` is given twice; keep one"));
            continue;
        }
        seen.push(key.clone());
        let is_list = LIST_KEYS.contains(&k.as_str());
        match (is_list, field.value) {
            (true, Value::Expr(e)) => {
                errors.at(&e, format!("`{k}` takes a list in brackets: `{k}: [...]`"));
            }
            (false, Value::List(b, _)) => {
                errors.span(b.span.join(), format!("`{k}` takes one value, not a list"));
            }
            (true, Value::List(_, items)) => match k.as_str() {
                "tools" => c.tools = items,
                _ => {
                    let list = List {
                        key: key.clone(),
                        entries: items
                            .into_iter()
                            .map(|e| match is_memory_word(&e) {
                                Some(i) => Entry::Memory(i),
                                None => Entry::Processor(e),
                            })
                            .collect(),
                    };
                    match k.as_str() {
                        "input" => c.input = Some(list),
                        "output" => c.output = Some(list),
                        _ => c.error = Some(list),
                    }
                }
            },
            (false, Value::Expr(e)) => match k.as_str() {
                "name" => c.name = Some(e),
                "instructions" => c.instructions = Some(e),
                "model" => c.model = Some(e),
                "memory" => c.memory = Some((key.clone(), e)),
                "max_steps" => {
                    if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) = peel(&e)
                        && i.base10_parse::<u32>().ok() == Some(0)
                    {
                        errors.at(i, "`max_steps: 0` leaves no step for the model; use 1 or more");
                    }
                    c.max_steps = Some(e)
                }
                "on_violation" => c.on_violation = Some(e),
                "crate" => match peel(&e) {
                    Expr::Path(p) if p.qself.is_none() => c.krate = Some(p.path.clone()),
                    other => errors.at(
                        other,
                        "`crate` takes the path of the crate whose `__private` module the generated code uses, like `crate: processors_runtime`",
                    ),
                },
                _ => match peel(&e) {
                    Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => match i.base10_parse::<u32>() {
                        Ok(n) => c.max_processor_retries = Some((key.clone(), n)),
                        Err(_) => errors.at(i, "`max_processor_retries` must fit in a u32"),
                    },
                    other => errors.at(
                        other,
                        "`max_processor_retries` takes a non-negative integer literal, like `max_processor_retries: 3`",
                    ),
                },
            },
        }
    }
    if c.model.is_none() {
        errors.span(
            Span::call_site(),
            "agent! needs a model: add `model: ...` (any value implementing `LanguageModel`, such as `ScriptedModel::new(...)`)",
        );
    }
    for list in [&c.input, &c.output, &c.error].into_iter().flatten() {
        check_list(list, c.memory.is_some(), errors);
    }
    if let (Some((key, 0)), Some(error)) = (&c.max_processor_retries, &c.error)
        && !error.entries.is_empty()
    {
        errors.at(
            key,
            "with `max_processor_retries: 0` the error processors could never retry; remove the key (error processors then get 3 retries) or raise it",
        );
    }
    c
}

/// The most processors one list holds (the tuple arity `Pipeline` is implemented for).
const MAX_LIST: usize = 16;

fn check_list(list: &List, has_memory: bool, errors: &mut Errors) {
    let key = list.key.to_string();
    if list.entries.len() > MAX_LIST {
        errors.at(
            &list.key,
            format!(
                "`{key}` has {} entries; a list holds at most {MAX_LIST} (group processors with `Workflow`, or build the list at run time with `DynPipeline`)",
                list.entries.len()
            ),
        );
    }
    let mut memory_at: Option<usize> = None;
    let mut texts: Vec<(String, usize)> = Vec::new();
    for (i, entry) in list.entries.iter().enumerate() {
        match entry {
            Entry::Memory(word) => {
                if key == "error" {
                    errors.at(
                        word,
                        "memory has no `process_api_error` hook; place it in `input` or `output`",
                    );
                } else if !has_memory {
                    errors.at(
                        word,
                        format!("`memory` in `{key}` refers to the agent's memory, but there is no `memory:` key; add one, like `memory: Memory::new(store)`"),
                    );
                } else if memory_at.is_some() {
                    errors.at(word, format!("`memory` is twice in `{key}`; keep one"));
                }
                memory_at.get_or_insert(i);
            }
            Entry::Processor(e) => {
                if key == "output"
                    && let Some(_) = memory_at
                {
                    errors.at(
                        e,
                        "this processor comes after `memory` in `output`: it would change what streams but not what is saved; move `memory` to the end of the list",
                    );
                }
                let text = quote!(#e).to_string();
                if let Some((_, first)) = texts.iter().find(|(t, _)| *t == text) {
                    errors.at(
                        e,
                        format!(
                            "`{text}` is twice in `{key}` (entries {} and {}); the two would share one id and so one state; give one of them another id",
                            first + 1,
                            i + 1
                        ),
                    );
                } else {
                    texts.push((text, i));
                }
            }
        }
    }
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

struct Slot {
    var: Ident,
    /// The processor's type, when known from the syntax.
    ty: Option<TokenStream>,
    span: Span,
    text: String,
}

fn generate(c: Config) -> TokenStream {
    let p = match &c.krate {
        Some(path) => quote!(#path::__private),
        None => quote!(::processors::__private),
    };
    let mut lets = Vec::new();
    let mut checks = Vec::new();

    let model = c.model.as_ref().map(|m| quote!(#m));
    let memory_var = format_ident!("__processors_memory");
    if let Some((_, m)) = &c.memory {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(tokens: TokenStream) -> String {
        expand(tokens).to_string()
    }

    #[test]
    fn unknown_key_suggests_the_closest() {
        let out = errors_of(quote!(model: m, ouput: [A]));
        assert!(
            out.contains("unknown key `ouput` (did you mean `output`?)"),
            "{out}"
        );
    }

    #[test]
    fn several_mistakes_are_reported_together() {
        let out = errors_of(quote!(model: m, model: m, input: [memory], max_processor_retries: -1));
        assert!(out.contains("`model` is given twice"), "{out}");
        assert!(out.contains("there is no `memory:` key"), "{out}");
        assert!(out.contains("non-negative integer literal"), "{out}");
    }

    #[test]
    fn missing_model() {
        assert!(errors_of(quote!(input: [A])).contains("agent! needs a model"));
    }

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

    #[test]
    fn valid_agent_expands_to_a_builder_chain() {
        let out =
            expand(quote!(model: m, input: [A], output: [B, memory], memory: mem, max_steps: 2))
                .to_string();
        assert!(out.contains("input_pipeline"), "{out}");
        assert!(out.contains("__build_checked"), "{out}");
        assert!(!out.contains("compile_error"), "{out}");
    }
}
