//! The checked configuration of an agent: each key's value validated, the rules that involve
//! several keys (memory placement, retry limits) applied.

use super::key::Key;
use super::parse::{Field, Placed, Value};
use crate::errors::{Errors, Keys};
use crate::names;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Expr, Ident};

pub struct Config {
    /// `<crate>::__private`: where generated code takes its names from.
    pub private: TokenStream,
    /// `<crate>`: the facade, whose `builtins` ordered lists are built with.
    pub root: TokenStream,
    pub name: Option<Expr>,
    pub instructions: Option<Expr>,
    pub model: Option<Expr>,
    pub tools: Vec<Expr>,
    pub memory: Option<Expr>,
    pub input: Option<List>,
    pub output: Option<List>,
    pub error: Option<List>,
    pub max_processor_retries: Option<(Ident, Number)>,
    pub max_steps: Option<(Ident, Number)>,
    pub on_violation: Option<Expr>,
}

/// A processor list (`input`, `output` or `error`).
pub struct List {
    /// The key as written.
    pub key: Ident,
    pub entries: Vec<Entry>,
    /// The word `ordered`, for a list in the built-ins' default order.
    pub ordered: Option<Ident>,
    /// For an ordered list, where each entry goes: `None` for a built-in (at its stage),
    /// `before X` or `after X` for a processor of one's own.
    pub places: Vec<Option<(Ident, syn::Type)>>,
}

/// One entry of a processor list.
pub enum Entry {
    /// The bare word `memory`: the agent's memory.
    Memory(Ident),
    /// Any other expression, without the parentheses around it.
    Processor(Expr),
}

/// The value of a numeric key (`max_processor_retries`, `max_steps`).
pub enum Number {
    /// An integer literal, checked by the macro.
    Literal(syn::LitInt, u32),
    /// The path of a `const`, checked by the compiler.
    Const(syn::ExprPath),
}

/// The most processors one list holds (the tuple arity `Pipeline` is implemented for).
const MAX_LIST: usize = 16;

impl Config {
    pub fn from_fields(fields: Vec<Field>, errors: &mut Errors) -> Config {
        let mut c = Config {
            private: quote!(::processors::__private),
            root: quote!(::processors),
            name: None,
            instructions: None,
            model: None,
            tools: Vec::new(),
            memory: None,
            input: None,
            output: None,
            error: None,
            max_processor_retries: None,
            max_steps: None,
            on_violation: None,
        };
        let mut keys = Keys::default();
        let mut given = Vec::new();
        for Field { ident, key, value } in fields {
            let Some(key) = key else {
                let name = ident.to_string();
                errors.at(
                    &ident,
                    format!(
                        "unknown key `{name}`{}; valid keys: {}",
                        names::did_you_mean(&name, Key::ALL.map(Key::name)),
                        Key::list()
                    ),
                );
                continue;
            };
            if !keys.first_time(&ident, errors) {
                continue;
            }
            given.push(key);
            // A value that did not parse has its error already.
            let Some(value) = value else { continue };
            match key {
                Key::Tools => c.tools = list(&ident, value, errors).unwrap_or_default(),
                Key::Input => c.input = List::of(ident, value, errors),
                Key::Output => c.output = List::of(ident, value, errors),
                Key::Error => c.error = List::of(ident, value, errors),
                Key::Name => c.name = single(&ident, value, errors),
                Key::Instructions => c.instructions = single(&ident, value, errors),
                Key::Model => c.model = single(&ident, value, errors),
                Key::Memory => c.memory = single(&ident, value, errors),
                Key::MaxProcessorRetries => {
                    c.max_processor_retries = single(&ident, value, errors)
                        .and_then(|e| number(&ident, &e, errors))
                        .map(|n| (ident, n));
                }
                Key::MaxSteps => {
                    c.max_steps = single(&ident, value, errors)
                        .and_then(|e| number(&ident, &e, errors))
                        .map(|n| (ident, n));
                    if let Some((_, Number::Literal(lit, 0))) = &c.max_steps {
                        errors.at(
                            lit,
                            "`max_steps: 0` leaves no step for the model; use 1 or more",
                        );
                    }
                }
                Key::OnViolation => c.on_violation = single(&ident, value, errors),
                Key::Crate => {
                    if let Some(path) =
                        single(&ident, value, errors).and_then(|e| crate_path(&e, errors))
                    {
                        c.private = quote!(#path::__private);
                        c.root = quote!(#path);
                    }
                }
            }
        }
        if !given.contains(&Key::Model) {
            errors.span(
                Span::call_site(),
                "agent! needs a model: add `model: ...` (any value implementing `LanguageModel`, such as `ScriptedModel::new(...)`)",
            );
        }
        for list in [&c.input, &c.output, &c.error].into_iter().flatten() {
            list.check(given.contains(&Key::Memory), errors);
        }
        if let (Some((key, Number::Literal(_, 0))), Some(error)) =
            (&c.max_processor_retries, &c.error)
            && !error.entries.is_empty()
        {
            errors.at(
                key,
                "with `max_processor_retries: 0` the error processors could never retry; remove the key (error processors then get 3 retries) or raise it",
            );
        }
        c
    }
}

impl Config {
    /// The list of `key` (`input`, `output` or `error`), if given.
    pub fn list(&self, key: &str) -> Option<&List> {
        match key {
            "input" => self.input.as_ref(),
            "output" => self.output.as_ref(),
            _ => self.error.as_ref(),
        }
    }
}

impl List {
    /// The list a key's value gives.
    fn of(key: Ident, value: Value, errors: &mut Errors) -> Option<List> {
        if let Value::Ordered(word, items) = value {
            let (exprs, places): (Vec<Expr>, Vec<_>) = items
                .into_iter()
                .map(|Placed { expr, place }| (expr, place))
                .unzip();
            let mut list = List::new(key, exprs);
            list.ordered = Some(word);
            list.places = places;
            return Some(list);
        }
        list(&key, value, errors).map(|l| List::new(key, l))
    }

    fn new(key: Ident, items: Vec<Expr>) -> List {
        let entries = items
            .into_iter()
            .map(|e| match memory_word(&e) {
                Some(word) => Entry::Memory(word),
                None => Entry::Processor(unparenthesised(e)),
            })
            .collect();
        List {
            key,
            entries,
            ordered: None,
            places: Vec::new(),
        }
    }

    /// The rules of one list: its length, where `memory` may stand, no processor twice.
    fn check(&self, has_memory: bool, errors: &mut Errors) {
        let key = self.key.to_string();
        if self.entries.len() > MAX_LIST {
            errors.at(
                &self.key,
                format!(
                    "`{key}` has {} entries; a list holds at most {MAX_LIST} (group processors with `Workflow`, or build the list at run time with `DynPipeline`)",
                    self.entries.len()
                ),
            );
        }
        let mut memory_at: Option<usize> = None;
        let mut texts: Vec<(String, usize)> = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            match entry {
                Entry::Memory(word) => {
                    if self.ordered.is_some() {
                        errors.at(
                            word,
                            format!(
                                "`memory` cannot be placed in an ordered list: leave it out, and memory runs where it does unless placed (first in `input`, last in `output`), or write `{key}` as a plain list"
                            ),
                        );
                    } else if key == "error" {
                        errors.at(
                            word,
                            "memory has no `process_api_error` hook; place it in `input` or `output`",
                        );
                    } else if !has_memory {
                        errors.at(
                            word,
                            format!(
                                "`memory` in `{key}` refers to the agent's memory, but there is no `memory:` key; add one, like `memory: Memory::new(store)`"
                            ),
                        );
                    } else if memory_at.is_some() {
                        errors.at(word, format!("`memory` is twice in `{key}`; keep one"));
                    }
                    memory_at.get_or_insert(i);
                }
                Entry::Processor(e) => {
                    if key == "output" && memory_at.is_some() {
                        errors.at(
                            e,
                            "this processor comes after `memory` in `output`: it would change what streams but not what is saved; move `memory` to the end of the list",
                        );
                    }
                    let text = names::tokens_text(&quote!(#e));
                    match texts.iter().find(|(t, _)| *t == text) {
                        Some((_, first)) => {
                            errors.at(
                                e,
                                format!(
                                    "`{text}` is twice in `{key}`; the two would have one id and so share one state; keep one, or give one of them another id"
                                ),
                            );
                            if let Entry::Processor(first) = &self.entries[*first] {
                                errors.at(first, format!("`{text}` is first here"));
                            }
                        }
                        None => texts.push((text, i)),
                    }
                }
            }
        }
    }
}

/// The items of a list key's value; a single value is reported.
fn list(key: &Ident, value: Value, errors: &mut Errors) -> Option<Vec<Expr>> {
    match value {
        Value::List(_, items) => Some(items),
        Value::Ordered(word, _) => {
            errors.at(
                &word,
                format!("`{key}` takes a list in brackets, `{key}: [...]`; only processor lists are ordered"),
            );
            None
        }
        Value::Expr(e) => {
            errors.at(
                &e,
                format!("`{key}` takes a list in brackets: `{key}: [...]`"),
            );
            None
        }
    }
}

/// The expression of a key that takes one value; a list is reported.
fn single(key: &Ident, value: Value, errors: &mut Errors) -> Option<Expr> {
    let message = format!("`{key}` takes one value, not a list");
    match value {
        Value::Expr(e) => match peel(&e) {
            Expr::Array(list) => {
                errors.at(list, message);
                None
            }
            _ => Some(e),
        },
        Value::List(bracket, _) => {
            errors.span(bracket.span.join(), message);
            None
        }
        Value::Ordered(word, _) => {
            errors.at(&word, message);
            None
        }
    }
}

/// The expression inside invisible groups (what `macro_rules!` fragments arrive in).
pub fn peel(e: &Expr) -> &Expr {
    match e {
        Expr::Group(g) => peel(&g.expr),
        other => other,
    }
}

/// The word `memory` as a list entry.
fn memory_word(e: &Expr) -> Option<Ident> {
    match peel(e) {
        Expr::Path(p) if p.qself.is_none() && p.path.is_ident("memory") => {
            p.path.get_ident().cloned()
        }
        _ => None,
    }
}

/// The expression inside its parentheses: `(Guard)` is `Guard` (in generated code, the
/// parentheses would be unused).
fn unparenthesised(e: Expr) -> Expr {
    match e {
        Expr::Paren(p) => unparenthesised(*p.expr),
        Expr::Group(g) if matches!(peel(&g.expr), Expr::Paren(_)) => unparenthesised(*g.expr),
        other => other,
    }
}

/// A numeric key's value: a non-negative integer literal, or the path of a `const`.
fn number(key: &Ident, e: &Expr, errors: &mut Errors) -> Option<Number> {
    match peel(e) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => match i.base10_parse::<u32>() {
            Ok(n) => Some(Number::Literal(i.clone(), n)),
            Err(_) => {
                errors.at(i, format!("`{key}` must fit in a u32"));
                None
            }
        },
        Expr::Path(p) if p.qself.is_none() => Some(Number::Const(p.clone())),
        other => {
            errors.at(
                other,
                format!(
                    "`{key}` takes a non-negative integer literal or a `const` item, checked at compile time, like `{key}: 3` or `{key}: MAX`; for a value known only at run time, use `Agent::builder().{key}(...)`"
                ),
            );
            None
        }
    }
}

/// `crate`: a path without generic arguments.
fn crate_path(e: &Expr, errors: &mut Errors) -> Option<syn::Path> {
    match peel(e) {
        Expr::Path(p)
            if p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_none()) =>
        {
            Some(p.path.clone())
        }
        other => {
            errors.at(
                other,
                "`crate` takes the path of the crate that provides the runtime (`processors` or `processors_runtime`), without quotes, like `crate: processors_runtime`",
            );
            None
        }
    }
}
