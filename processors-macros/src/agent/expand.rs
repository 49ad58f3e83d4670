//! Code generation from a configuration: a block that builds the agent, with the checks the
//! syntax cannot make, left to the compiler and spanned at the entry they are about.
//!
//! A processor's type is never read off its spelling (`Filter { .. }` may be generic, `Strict`
//! an imported enum variant): every entry is bound to a variable and the compiler infers its
//! type. Two kinds of check follow:
//!
//! - trait checks, which hold even when the invocation has other errors: each entry is passed
//!   through `<_ as InputProcessor>::__in_input` (or the output or error one), so a processor in
//!   a list it has no hook for is an error at the entry, saying where it belongs;
//! - constant checks, on what only the types know (ids, hooks, whether an entry is a function
//!   or a memory value): associated constants of local types, used as patterns so that the
//!   compiler evaluates them in every build, `cargo check` included. A failing check panics
//!   with a message written here, at the entry's span.
//!
//! A constant pattern cannot read the constants of a type parameter of the function around it,
//! nor constants its where clauses stand for (E0158), so the checks of hooks and ids read a
//! processor's type only where it is known, through constants of its own (`__private::Known`:
//! the types `#[processor]` writes, the runtime's, and wrappers of them), and a stand-in that
//! passes them elsewhere. The same checks are also made as inline constants, which the compiler
//! evaluates when it instantiates the function: in a generic function (the checks then run in
//! `cargo build`, once per instantiation) and for a processor implemented by hand.

use super::config::{Config, Entry, List, Number, peel};
use crate::names;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

/// The block that builds the agent, or after `errors` the errors and the entries' trait
/// checks (so a misplaced processor is reported in the same build).
pub fn agent(c: &Config, errors: Option<syn::Error>) -> TokenStream {
    let p = &c.private;
    let lists = lists(c);
    let uses = quote! {
        #[allow(unused_imports)]
        use #p::{ViaFunction as _, ViaValue as _};
    };
    let entries = lists.iter().flat_map(|l| &l.entries).map(|e| e.bind(p));
    if let Some(errors) = errors {
        let errors = errors.into_compile_error();
        return quote! {{
            #errors
            #uses
            #(#entries)*
            #p::agent_after_errors()
        }};
    }

    let memory_var = memory_var();
    let memory = c.memory.as_ref().map(|m| {
        // The call takes the value's span, so that a value that is not memory is
        // reported there alone.
        let p = respanned(p, m.span());
        quote_spanned!(m.span()=> let #memory_var = #p::IntoMemory::into_memory(#m);)
    });
    let numbers = number_checks(c);
    let checks = checks(c, &lists);
    let retry_warnings = retry_warnings(c, &lists);

    let pipelines = ["input", "output", "error"].map(|key| {
        let out = lists.iter().find(|l| l.key == key);
        if let (Some(out), Some(list)) = (out, c.list(key))
            && list.ordered.is_some()
        {
            return ordered(c, key, out, list);
        }
        let items = out
            .into_iter()
            .flat_map(|l| &l.entries)
            .map(|e| match &e.what {
                What::Memory => {
                    quote_spanned!(e.spans.0=> ::core::clone::Clone::clone(&#memory_var))
                }
                What::Processor(_) => e.var.to_token_stream(),
            });
        quote!((#(#items,)*))
    });
    let [input, output, error] = &pipelines;

    // The model is checked where it is written, by the trait, before the builder takes it:
    // a value that is no model is reported there once (the builder's bound, at the same
    // span, is the same error).
    let model_check = c.model.as_ref().map(|m| {
        let var = Ident::new("__processors_model", m.span());
        let this = quote_spanned!(m.span()=> _);
        quote! {
            let #var = #m;
            let _ = <#this as #p::LanguageModel>::model_id(&#var);
        }
    });
    let model = c
        .model
        .as_ref()
        .map(|m| Ident::new("__processors_model", m.span()));
    let name = c.name.as_ref().map(|n| quote!(.name(#n)));
    let instructions = c.instructions.as_ref().map(|i| quote!(.instructions(#i)));
    let tools = c.tools.iter().map(|t| quote_spanned!(t.span()=> .tool(#t)));
    let memory_setting = c
        .memory
        .as_ref()
        .map(|_| quote!(.memory(::core::clone::Clone::clone(&#memory_var))));
    let retries = c.max_processor_retries.as_ref().map(|(key, n)| {
        let n = number_value(key, n);
        quote!(.max_processor_retries(#n))
    });
    let steps = c.max_steps.as_ref().map(|(key, n)| {
        let n = number_value(key, n);
        quote!(.max_steps(#n))
    });
    let on_violation = c
        .on_violation
        .as_ref()
        .map(|v| quote_spanned!(v.span()=> .on_violation(#v)));
    quote! {{
        #(#numbers)*
        #uses
        #model_check
        #memory
        #(#entries)*
        #checks
        #retry_warnings
        #p::Agent::builder()
            #name
            #instructions
            #(#tools)*
            #memory_setting
            #retries
            #steps
            #on_violation
            .input_pipeline(#input)
            .output_pipeline(#output)
            .error_pipeline(#error)
            .__build_checked(#model)
    }}
}

/// An ordered list (`ordered[...]`): built by the facade's `Ordered`, each anchor checked to
/// be a built-in of the list when the program compiles, at the anchor's span.
fn ordered(c: &Config, key: &str, out: &ListOut, list: &List) -> TokenStream {
    let root = &c.root;
    let order = quote!(#root::builtins::order);
    let side = format_ident!("{}", key);
    let mut aliases = Vec::new();
    let mut staged = Vec::new();
    let mut placed = Vec::new();
    for (e, place) in out.entries.iter().zip(&list.places) {
        let var = &e.var;
        match place {
            None => {
                // Named at the entry, so that a processor with no stage is reported there.
                let alias = Ident::new(&format!("{var}_built_in"), e.spans.0);
                aliases.push(quote!(let #alias = #var;));
                staged.push(alias);
            }
            Some((word, anchor)) => placed.push((word, anchor, var)),
        }
    }
    let nested = staged
        .iter()
        .rev()
        .fold(quote!(()), |rest, v| quote!((&#v, #rest)));
    let anchors = placed.iter().map(|(_, anchor, _)| {
        let check = respanned(&quote!(#order::__contains), anchor.span());
        quote_spanned!(anchor.span()=> #check::<#anchor, _, _>(&__processors_built_ins);)
    });
    let withs = staged.iter().map(|v| quote_spanned!(v.span()=> .with(#v)));
    let places = placed
        .iter()
        .map(|(word, anchor, var)| quote!(.#word::<#anchor>(#var)));
    quote! {{
        #(#aliases)*
        {
            let __processors_built_ins = #nested;
            #(#anchors)*
        }
        #order::Ordered::#side()
            #(#withs)*
            #(#places)*
            .__build_checked()
    }}
}

/// The variable that holds the agent's memory.
fn memory_var() -> Ident {
    format_ident!("__processors_memory")
}

/// A list as the expansion sees it.
struct ListOut<'c> {
    /// `input`, `output` or `error`.
    key: &'static str,
    entries: Vec<EntryOut<'c>>,
}

/// One entry of a list.
struct EntryOut<'c> {
    /// The list: `input`, `output` or `error`.
    list: &'static str,
    /// The position in the list, from 0.
    index: usize,
    what: What<'c>,
    /// The variable that holds the processor (the memory's for the word `memory`).
    var: Ident,
    /// The variable that holds the entry's kind.
    kind: Ident,
    /// The spans of the entry's first and last tokens.
    spans: (Span, Span),
    /// The entry as written, for messages.
    text: String,
}

enum What<'c> {
    /// The word `memory`.
    Memory,
    Processor(&'c Expr),
}

fn lists(c: &Config) -> Vec<ListOut<'_>> {
    [
        ("input", &c.input),
        ("output", &c.output),
        ("error", &c.error),
    ]
    .into_iter()
    .filter_map(|(key, list)| list.as_ref().map(|l| list_out(key, l)))
    .collect()
}

fn list_out<'c>(key: &'static str, list: &'c List) -> ListOut<'c> {
    let entries = list
        .entries
        .iter()
        .enumerate()
        .map(|(index, entry)| match entry {
            Entry::Memory(word) => EntryOut {
                list: key,
                index,
                what: What::Memory,
                var: memory_var(),
                kind: format_ident!("__processors_{}_{}_kind", key, index),
                spans: (word.span(), word.span()),
                text: "memory".to_owned(),
            },
            Entry::Processor(e) => EntryOut {
                list: key,
                index,
                what: What::Processor(e),
                var: format_ident!("__processors_{}_{}", key, index),
                kind: format_ident!("__processors_{}_{}_kind", key, index),
                spans: ends(e),
                text: names::tokens_text(&e.to_token_stream()),
            },
        })
        .collect();
    ListOut { key, entries }
}

impl EntryOut<'_> {
    /// The statements that bind the entry: its value, its kind, and the value checked to
    /// belong in the list (a function is replaced by a stand-in, reported by its kind).
    fn bind(&self, p: &TokenStream) -> TokenStream {
        let What::Processor(e) = self.what else {
            return TokenStream::new();
        };
        let (var, kind) = (&self.var, &self.kind);
        let (marker, check) = match self.list {
            "input" => (quote!(InputProcessor), quote!(__in_input)),
            "output" => (quote!(OutputProcessor), quote!(__in_output)),
            _ => (quote!(ErrorProcessor), quote!(__in_error)),
        };
        // The placeholder takes the entry's span: a processor of the wrong list is reported
        // there, by the marker trait.
        let this = quote_spanned!(self.spans.0=> _);
        quote! {
            let #var = #p::Entry(#e);
            let #kind = (&#var).__kind();
            let #var = <#this as #p::#marker>::#check(#kind.take(#var));
        }
    }

    /// A constant name for this entry: `OUTPUT_0`.
    fn constant(&self, suffix: &str) -> Ident {
        format_ident!("{}_{}{}", self.list.to_uppercase(), self.index, suffix)
    }
}

/// For each numeric key given a `const`: a `u32` constant of its value (spanned at the path,
/// so a constant of another type, or a variable, is reported there), and the compile-time
/// check of its value, where 0 is refused.
fn number_checks(c: &Config) -> Vec<TokenStream> {
    let has_error_processors = c.error.as_ref().is_some_and(|e| !e.entries.is_empty());
    let mut items = Vec::new();
    for (setting, refused) in [
        (&c.max_steps, Some("which leaves no step for the model; use 1 or more")),
        (
            &c.max_processor_retries,
            has_error_processors.then_some(
                "so the error processors could never retry; remove the key (error processors then get 3 retries) or raise it",
            ),
        ),
    ] {
        let Some((key, Number::Const(path))) = setting else {
            continue;
        };
        let mut constant = number_constant(key);
        constant.set_span(path.span());
        items.push(quote_spanned!(path.span()=> const #constant: u32 = #path;));
        if let Some(hint) = variable_hint(key, path) {
            items.push(hint);
        }
        if let Some(why) = refused {
            let text = names::tokens_text(&path.to_token_stream());
            let message = format!("`{key}: {text}` is 0, {why}");
            let panic = panic_at(ends(path), quote!(#message));
            items.push(quote!(const _: () = if #constant == 0 { #panic };));
        }
    }
    items
}

/// A warning at a numeric key's value that is one lowercase name (`max_steps: steps`), which
/// is most likely a `let` binding, where the compiler's own error (a non-constant value in a
/// constant) does not say what the key takes. A warning, not an error: a lowercase `const`
/// is allowed (the compiler already warns at its name). Rust has no warning of a macro's own on
/// stable; a deprecated function named after the key, called at the value, gives one.
fn variable_hint(key: &Ident, path: &syn::ExprPath) -> Option<TokenStream> {
    let name = path.path.get_ident()?.to_string();
    if !name.chars().any(char::is_lowercase) {
        return None;
    }
    let note = format!(
        "`{name}` looks like a variable, and `{key}` is checked at compile time: give it a literal (`{key}: 3`) or a `const` (`const {}: u32 = 3;`); for a value known only at run time, use `Agent::builder().{key}({name})`",
        name.to_uppercase()
    );
    let hint = Ident::new(&key.to_string(), path.span());
    Some(quote! {
        {
            #[deprecated(note = #note)]
            fn #hint() {}
            #hint();
        }
    })
}

/// The constant that holds a numeric key's value: `__PROCESSORS_MAX_STEPS`.
fn number_constant(key: &Ident) -> Ident {
    format_ident!("__PROCESSORS_{}", key.to_string().to_uppercase())
}

/// A numeric key's value in the builder call: the literal, or the checked constant.
fn number_value(key: &Ident, n: &Number) -> TokenStream {
    match n {
        Number::Literal(lit, _) => lit.to_token_stream(),
        Number::Const(path) => {
            let constant = number_constant(key);
            quote_spanned!(path.span()=> #constant)
        }
    }
}

/// The constant checks, in a block of their own: each is an associated constant of a local
/// type, generic over what it checks, matched as a pattern against the entries' types where
/// they are known (reading `__private::Known`'s constants), and defined again, under the same
/// name, reading `Processor`'s, as an inline constant on the entries' own types that the
/// compiler evaluates when it instantiates the code.
fn checks(c: &Config, lists: &[ListOut]) -> TokenStream {
    let p = &c.private;
    let phantom = quote!(::core::marker::PhantomData);
    let mut items = Vec::new();
    let mut matches = Vec::new();
    let mut instantiated = Vec::new();
    let mut built = Vec::new();
    let (known, processor) = (quote!(#p::Known), quote!(#p::Processor));

    // What each entry is: a function, a memory value.
    let kinds: Vec<(TokenStream, &EntryOut)> = lists
        .iter()
        .flat_map(|l| &l.entries)
        .filter(|e| matches!(e.what, What::Processor(_)))
        .filter_map(|e| kind_check(c, lists, e).map(|body| (body, e)))
        .collect();
    if !kinds.is_empty() {
        let consts = kinds.iter().map(|(body, e)| {
            let name = e.constant("");
            quote!(const #name: #phantom<K> = { #body #phantom };)
        });
        // The kinds as local types, so that the compiler's report of a failed check names
        // them briefly (`Entry::<main::Function>`).
        items.push(quote! {
            #[allow(dead_code)]
            struct Value;
            #[allow(dead_code)]
            struct Memory;
            #[allow(dead_code)]
            struct Function;
            trait Kind {
                type Local;
            }
            impl Kind for #p::IsValue {
                type Local = Value;
            }
            impl Kind for #p::IsMemory {
                type Local = Memory;
            }
            impl Kind for #p::IsFunction {
                type Local = Function;
            }
            trait Is {
                const IS_FUNCTION: bool;
                const IS_MEMORY: bool;
            }
            impl Is for Value {
                const IS_FUNCTION: bool = false;
                const IS_MEMORY: bool = false;
            }
            impl Is for Memory {
                const IS_FUNCTION: bool = false;
                const IS_MEMORY: bool = true;
            }
            impl Is for Function {
                const IS_FUNCTION: bool = true;
                const IS_MEMORY: bool = false;
            }
            fn kind<K: Kind>(_: &K) -> #phantom<K::Local> {
                #phantom
            }
            #[allow(dead_code)]
            struct Entry<K>(#phantom<K>);
            impl<K: Is> Entry<K> {
                #(#consts)*
            }
        });
        for (_, e) in &kinds {
            let (name, kind) = (e.constant(""), &e.kind);
            matches.push(quote!(::core::matches!(kind(&#kind), Entry::#name)));
        }
    }

    // Each processor has a hook of its list. A processor whose marker trait says where it
    // belongs (as `#[processor]` generates them) is refused by the trait first; this catches
    // the rest, such as a workflow whose steps' processors belong elsewhere.
    let placed: Vec<&EntryOut> = lists
        .iter()
        .flat_map(|l| &l.entries)
        .filter(|e| matches!(e.what, What::Processor(_)))
        .collect();
    if !placed.is_empty() {
        let defs = |facts: &TokenStream| {
            let consts = placed.iter().map(|e| {
                let name = e.constant("_PLACED");
                let belongs = match e.list {
                    "input" => quote!(is_input),
                    "output" => quote!(is_output),
                    _ => quote!(is_error),
                };
                let head = format!("`{}` has no hook of the `{}` list: ", e.text, e.list);
                let panic = panic_at(e.spans, quote!(text.as_str()));
                quote! {
                    const #name: #phantom<P> = {
                        if !<P as #facts>::HOOKS.#belongs() {
                            let text = #p::Text::concat(&[#head, <P as #facts>::HOOKS.home()]);
                            #panic
                        }
                        #phantom
                    };
                }
            });
            quote! {
                #[allow(dead_code)]
                struct Placed<P>(#phantom<P>);
                impl<P: #facts> Placed<P> {
                    #(#consts)*
                }
            }
        };
        items.push(defs(&known));
        built.push(defs(&processor));
        for e in &placed {
            let name = e.constant("_PLACED");
            let (facts, ty) = (probe(p, &e.var), of(&e.var));
            matches.push(quote!(::core::matches!(#facts, Placed::#name)));
            instantiated.push(when_instantiated(p, e.spans.0, ty, quote!(Placed::#name)));
        }
    }

    // No two processors of a list with one id.
    let mut pairs = Vec::new();
    for list in lists {
        for (j, b) in list.entries.iter().enumerate() {
            for a in &list.entries[..j] {
                let both_memory = matches!((&a.what, &b.what), (What::Memory, What::Memory));
                if a.text == b.text || both_memory {
                    continue; // reported by validation
                }
                pairs.push((a, b));
            }
        }
    }
    if !pairs.is_empty() {
        let defs = |facts: &TokenStream| {
            let consts = pairs.iter().flat_map(|(a, b)| {
                let at_b = format!(
                    "`{}` has the same id as `{}` before it in `{}`, `",
                    b.text, a.text, a.list
                );
                let at_a = format!(
                    "`{}` has the same id as `{}` after it in `{}`, `",
                    a.text, b.text, a.list
                );
                let tail = "`: the two would share one state; give one of them another id, like `#[processor(id = \"...\")]`";
                [
                    (b.constant(&format!("_AND_{}", a.index)), b.spans, at_b),
                    (a.constant(&format!("_AND_{}", b.index)), a.spans, at_a),
                ]
                .map(|(name, span, head)| {
                    let panic = panic_at(span, quote!(text.as_str()));
                    quote! {
                        const #name: #phantom<(A, B)> = {
                            if #p::same_id(<A as #facts>::STATIC_ID, <B as #facts>::STATIC_ID) {
                                let text = #p::Text::concat(&[#head, #p::id_or_empty(<A as #facts>::STATIC_ID), #tail]);
                                #panic
                            }
                            #phantom
                        };
                    }
                })
            });
            quote! {
                #[allow(dead_code)]
                struct Ids<A, B>(#phantom<(A, B)>);
                impl<A: #facts, B: #facts> Ids<A, B> {
                    #(#consts)*
                }
            }
        };
        items.push(defs(&known));
        built.push(defs(&processor));
        items.push(quote! {
            fn pair<A, B>(_: #phantom<A>, _: #phantom<B>) -> #phantom<(A, B)> {
                #phantom
            }
        });
        for (a, b) in &pairs {
            let (a_facts, b_facts) = (probe(p, &a.var), probe(p, &b.var));
            let (a_of, b_of) = (of(&a.var), of(&b.var));
            for (name, at) in [
                (b.constant(&format!("_AND_{}", a.index)), b.spans.0),
                (a.constant(&format!("_AND_{}", b.index)), a.spans.0),
            ] {
                matches.push(quote!(
                    ::core::matches!(pair(#a_facts, #b_facts), Ids::#name)
                ));
                let types = quote!(pair(#a_of, #b_of));
                instantiated.push(when_instantiated(p, at, types, quote!(Ids::#name)));
            }
        }
    }

    // `max_processor_retries` needs a processor that can ask for a retry.
    if let Some((key, _)) = &c.max_processor_retries
        && c.error.as_ref().is_none_or(|e| e.entries.is_empty())
    {
        let message = "`max_processor_retries` is set, but no processor of this agent can ask for a retry (none has `process_output_step`, `process_input_step`, `process_tool_call` or `process_api_error`); remove the key or add such a processor";
        let all: Vec<&EntryOut> = lists.iter().flat_map(|l| &l.entries).collect();
        let panic = panic_at((key.span(), key.span()), quote!(#message));
        if all.is_empty() {
            items.push(quote!(const _: () = #panic;));
        } else {
            let params: Vec<Ident> = (0..all.len()).map(|i| format_ident!("P{}", i)).collect();
            let vars = all.iter().map(|e| &e.var);
            let defs = |facts: &TokenStream| {
                quote! {
                    #[allow(dead_code)]
                    struct Processors<#(#params),*>(#phantom<(#(#params,)*)>);
                    impl<#(#params: #facts),*> Processors<#(#params),*> {
                        const CAN_RETRY: #phantom<(#(#params,)*)> = {
                            if !(false #(|| <#params as #facts>::HOOKS.can_retry())*) {
                                #panic
                            }
                            #phantom
                        };
                    }
                }
            };
            items.push(defs(&known));
            built.push(defs(&processor));
            items.push(quote! {
                fn all<#(#params),*>(#(_: #phantom<#params>),*) -> #phantom<(#(#params,)*)> {
                    #phantom
                }
            });
            let facts = vars.clone().map(|v| probe(p, v));
            let types = vars.map(of);
            matches.push(quote!(
                ::core::matches!(all(#(#facts),*), Processors::CAN_RETRY)
            ));
            let types = quote!(all(#(#types),*));
            let check = quote!(Processors::CAN_RETRY);
            instantiated.push(when_instantiated(p, key.span(), types, check));
        }
    }

    if items.is_empty() {
        return TokenStream::new();
    }
    // The checks made when the code is instantiated read the processors' own types, in a
    // block whose definitions (of the same names) read `Processor`'s constants.
    let when_built = (!instantiated.is_empty()).then(|| {
        quote! {
            {
                fn of<T>(_: &T) -> #phantom<T> {
                    #phantom
                }
                #(#built)*
                #(#instantiated;)*
            }
        }
    });
    quote! {
        {
            #[allow(unused_imports)]
            use #p::{ViaKnown as _, ViaUnknown as _};
            #(#items)*
            #(let _ = #matches;)*
            #when_built
        }
    }
}

/// The facts of the processor in `var` for a check when the program type-checks: its type's
/// when the type is known there, none (a stand-in's) when it depends on the type parameters
/// of the function `agent!` is in.
fn probe(p: &TokenStream, var: &Ident) -> TokenStream {
    quote!((&&#p::Probe(&#var)).__facts())
}

/// The check `constant` (a path) of the processors whose types `types` gives, made when the
/// code is instantiated, reported at `span`.
fn when_instantiated(
    p: &TokenStream,
    span: Span,
    types: TokenStream,
    constant: TokenStream,
) -> TokenStream {
    let call = respanned(&quote!(#p::when_instantiated), span);
    let constant = respanned(&constant, span);
    quote_spanned!(span=> #call(#types, const { #constant }))
}

/// The type of the processor in `var`, for the same check made when the function `agent!`
/// is in is instantiated: the only check there is when the type depends on the function's
/// type parameters (a constant pattern cannot), and the only one for a processor implemented
/// by hand.
fn of(var: &Ident) -> TokenStream {
    quote!(of(&#var))
}

/// Without `max_processor_retries`, a warning at each processor that asks for a retry as
/// written (`.retry(true)` in a step or tool-call hook): its retry would end the run instead.
/// Rust has no warning of a macro's own on stable; a deprecated method, chosen by the
/// processor's type, gives one at the entry (the `deprecated` lint, which
/// `#[allow(deprecated)]` silences).
fn retry_warnings(c: &Config, lists: &[ListOut]) -> TokenStream {
    if c.max_processor_retries.is_some() {
        return TokenStream::new();
    }
    let p = &c.private;
    let entries: Vec<&EntryOut> = lists
        .iter()
        .filter(|l| l.key != "error")
        .flat_map(|l| &l.entries)
        .filter(|e| matches!(e.what, What::Processor(_)))
        .collect();
    if entries.is_empty() {
        return TokenStream::new();
    }
    let methods = entries
        .iter()
        .map(|e| format_ident!("{}", e.constant("").to_string().to_lowercase()));
    let warned = entries.iter().zip(methods.clone()).map(|(e, method)| {
        let note = format!(
            "`{}` asks for a retry (`.retry(true)`), but the agent sets no `max_processor_retries`, so that retry would end the run as an abort; set `max_processor_retries` (to 2, say), or, where each call sets it, allow this warning",
            e.text
        );
        quote! {
            #[deprecated(note = #note)]
            fn #method(&self) {}
        }
    });
    let quiet = methods.clone().map(|method| quote!(fn #method(&self) {}));
    let calls = entries.iter().zip(methods).map(|(e, method)| {
        let var = &e.var;
        let method = Ident::new(&method.to_string(), e.spans.0);
        quote!((&&#p::Probe(&#var)).__retries().#method();)
    });
    let phantom = quote!(::core::marker::PhantomData);
    // Traits, not a generic struct's methods, so that the warning names
    // `RetryWithoutLimit::output_1` and no type of the runtime's.
    quote! {
        {
            #[allow(unused_imports)]
            use #p::{ViaNoRetries as _, ViaRetries as _};
            #[allow(dead_code)]
            trait RetryWithoutLimit {
                #(#warned)*
            }
            #[allow(dead_code)]
            trait NoRetryToLimit {
                #(#quiet)*
            }
            impl RetryWithoutLimit for #phantom<#p::AsksForRetry> {}
            impl NoRetryToLimit for #phantom<#p::NoRetryAsked> {}
            #(#calls)*
        }
    }
}

/// The body of the check of an entry's kind, if anything about it can be wrong.
fn kind_check(c: &Config, lists: &[ListOut], e: &EntryOut) -> Option<TokenStream> {
    let What::Processor(expr) = e.what else {
        return None;
    };
    let mut checks = Vec::new();
    let function = format!(
        "{}, not a processor: use {}",
        match path_ident(expr) {
            Some(_) => format!("`{}` is a function", e.text),
            None => "this is a function".to_owned(),
        },
        match generated_type(expr) {
            Some(ty) => format!("`{ty}`, the type `#[processor]` generated for `{}`", e.text),
            None => "the type `#[processor]` generated for it".to_owned(),
        }
    );
    checks.push(("IS_FUNCTION", function));
    if c.memory.is_none() {
        checks.push((
            "IS_MEMORY",
            format!(
                "`{}` is a memory value in `{}`, but the agent has no `memory:` key; give it as `memory: {}` and write the word `memory` where it goes in the list",
                e.text, e.list, e.text
            ),
        ));
    } else if e.list == "output" {
        let last = lists
            .iter()
            .find(|l| l.key == "output")
            .is_some_and(|l| l.entries.len() == e.index + 1);
        if !last {
            checks.push((
                "IS_MEMORY",
                format!(
                    "`{}` is memory, followed by other processors in `output`: they would change what streams but not what is saved; move it to the end of the list",
                    e.text
                ),
            ));
        }
    }
    let checks = checks.into_iter().map(|(flag, message)| {
        let flag = format_ident!("{flag}");
        let panic = panic_at(e.spans, quote!(#message));
        quote!(if K::#flag { #panic })
    });
    Some(quote!(#(#checks)*))
}

/// A panic with `message` (a `&str` expression) reported from the first span to the last: the
/// macro's path takes the first, its arguments the last, and the compiler underlines both and
/// what lies between.
fn panic_at((first, last): (Span, Span), message: TokenStream) -> TokenStream {
    let panic = quote_spanned!(first=> ::core::panic!);
    let args = quote_spanned!(last=> ("{}", #message));
    quote!(#panic #args)
}

/// The spans of the first and the last token of `tokens`.
fn ends(tokens: &impl ToTokens) -> (Span, Span) {
    let tokens: Vec<proc_macro2::TokenTree> = tokens.to_token_stream().into_iter().collect();
    let first = tokens.first().map_or_else(Span::call_site, |t| t.span());
    let last = tokens.last().map_or(first, |t| t.span());
    (first, last)
}

/// The identifier a path expression ends with (`redact` in `filters::redact`).
fn path_ident(e: &Expr) -> Option<&Ident> {
    match peel(e) {
        Expr::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    }
}

/// For a path to a function (`filters::redact`), the path of the type `#[processor]` generates
/// for it (`filters::Redact`).
fn generated_type(e: &Expr) -> Option<String> {
    let Expr::Path(p) = peel(e) else { return None };
    let mut path = p.path.clone();
    let last = path.segments.last_mut()?;
    let name = names::upper_camel(&syn::ext::IdentExt::unraw(&last.ident).to_string());
    last.ident = syn::parse_str(&name).ok()?;
    Some(names::tokens_text(&path.to_token_stream()))
}

/// `tokens` with every token at `span` (a path: no groups inside).
fn respanned(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_type_of_a_function_path() {
        let t = |e: TokenStream| generated_type(&syn::parse2(e).unwrap());
        assert_eq!(t(quote!(redact)), Some("Redact".into()));
        assert_eq!(
            t(quote!(filters::redact_pii)),
            Some("filters::RedactPii".into())
        );
        assert_eq!(t(quote!(r#loop)), Some("Loop".into()));
        assert_eq!(t(quote!(self_)), None, "`Self` is a keyword");
        assert_eq!(t(quote!(make(4))), None);
    }
}
