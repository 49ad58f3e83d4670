//! The options of `#[processor(...)]`: parsed as written, then checked against the item they
//! are on.

use crate::errors::{Errors, Keys};
use crate::hooks::Hook;
use crate::names;
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Path, Token, Type};

/// The options that are not hooks.
pub const KEYS: [&str; 7] = [
    "id",
    "name",
    "state",
    "process_data_parts",
    "stream_history",
    "options",
    "crate",
];

/// One option as written.
enum Raw {
    /// A bare word: a hook (`output_stream`) or a flag (`stream_history`).
    Word(Ident),
    Id(Ident, LitStr),
    Name(Ident, Ident),
    State(Ident, Box<Type>),
    Crate(Ident, Path),
    /// `key = value` where no option of that name takes a value.
    Unknown(Ident),
}

/// The options as written.
pub struct RawOptions(Vec<Raw>);

impl Parse for RawOptions {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut options = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            let option = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                match key.to_string().as_str() {
                    "id" => Raw::Id(key, input.parse()?),
                    "name" => Raw::Name(key, input.parse()?),
                    "state" => Raw::State(key, input.parse()?),
                    "crate" => {
                        let path = input.call(Path::parse_mod_style).map_err(|e| {
                            syn::Error::new(
                                e.span(),
                                "`crate` takes the path of the crate that provides the runtime (`processors` or `processors_runtime`), without quotes, like `crate = processors_runtime`",
                            )
                        })?;
                        Raw::Crate(key, path)
                    }
                    _ => {
                        input.parse::<syn::Expr>()?;
                        Raw::Unknown(key)
                    }
                }
            } else {
                Raw::Word(key)
            };
            options.push(option);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(RawOptions(options))
    }
}

/// What the item the attribute is on expects of it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum On {
    /// A function: the attribute names its hook.
    Fn,
    /// An impl block: its methods are the hooks.
    Impl,
}

/// The checked options.
#[derive(Default)]
pub struct Options {
    /// The hook a function implements, with its name as written.
    pub hook: Option<(Hook, Ident)>,
    pub id: Option<LitStr>,
    pub name: Option<Ident>,
    pub state: Option<Type>,
    /// `process_data_parts`, as written.
    pub process_data_parts: Option<Ident>,
    /// `stream_history`, as written.
    pub stream_history: Option<Ident>,
    /// `options` (a function's `#[config]` parameters are its options in files), as written.
    pub options: Option<Ident>,
    /// `crate = path`.
    pub krate: Option<Path>,
}

impl Options {
    /// The module generated code takes its paths from: `<crate>::__private`.
    pub fn private(&self) -> TokenStream {
        match &self.krate {
            Some(path) => quote!(#path::__private),
            None => quote!(::processors::__private),
        }
    }
}

impl RawOptions {
    /// Checks the options for an item of kind `on`.
    pub fn validate(self, on: On, errors: &mut Errors) -> Options {
        let mut options = Options::default();
        let mut keys = Keys::default();
        for raw in self.0 {
            match raw {
                Raw::Id(key, lit) => {
                    let id = lit.value();
                    if !names::valid_id(&id) {
                        errors.at(
                            &lit,
                            format!(
                                "`{id}` is not a valid processor id: use lowercase letters, digits, `-`, `_` and `.`, starting with a letter (like \"{}\")",
                                suggest_id(&id)
                            ),
                        );
                    }
                    if keys.first_time(&key, errors) {
                        options.id = Some(lit);
                    }
                }
                Raw::Name(key, name) => {
                    if keys.first_time(&key, errors) {
                        options.name = Some(name);
                    }
                }
                Raw::State(key, ty) => {
                    if keys.first_time(&key, errors) {
                        options.state = Some(*ty);
                    }
                }
                Raw::Crate(key, path) => {
                    if keys.first_time(&key, errors) {
                        options.krate = Some(path);
                    }
                }
                Raw::Word(word) => options.word(word, on, &mut keys, errors),
                Raw::Unknown(key) => errors.at(
                    &key,
                    format!(
                        "unknown option `{key}`{}; options: {}",
                        names::did_you_mean(&key.to_string(), KEYS),
                        KEYS.join(", ")
                    ),
                ),
            }
        }
        options
    }
}

impl Options {
    /// A bare word: a flag, or the name of a hook.
    fn word(&mut self, word: Ident, on: On, keys: &mut Keys, errors: &mut Errors) {
        let name = word.to_string();
        match name.as_str() {
            "process_data_parts" => {
                if keys.first_time(&word, errors) {
                    self.process_data_parts = Some(word);
                }
            }
            "stream_history" => {
                if keys.first_time(&word, errors) {
                    self.stream_history = Some(word);
                }
            }
            "options" => {
                if keys.first_time(&word, errors) {
                    self.options = Some(word);
                }
            }
            "id" | "name" | "state" | "crate" => {
                errors.at(&word, format!("`{word}` needs a value: `{word} = ...`"))
            }
            _ => match (Hook::from_short(&name).or_else(|| Hook::from_method(&name)), on) {
                (Some(hook), On::Fn) => match &self.hook {
                    Some((first, _)) => errors.at(
                        &word,
                        format!(
                            "a processor function implements one hook, and this one already names `{}`; to implement several hooks, put `#[processor]` on an impl block with one method per hook",
                            first.short()
                        ),
                    ),
                    None => self.hook = Some((hook, word)),
                },
                (Some(hook), On::Impl) => errors.at(
                    &word,
                    format!(
                        "on an impl block the hooks are its methods: write `fn {}(&self, ...)` instead of naming `{}` here",
                        hook.method(),
                        hook.short()
                    ),
                ),
                (None, _) => {
                    // A misspelt method name (`process_ouput_stream`) suggests the hook's
                    // short name, as the attribute spells hooks.
                    let suggestion = match names::closest(&name, Hook::ALL.map(Hook::method)) {
                        Some(method) if name.starts_with("process_") => Hook::from_method(method)
                            .map(|h| format!(" (did you mean `{}`?)", h.short()))
                            .unwrap_or_default(),
                        _ => names::did_you_mean(
                            &name,
                            Hook::ALL.map(Hook::short).into_iter().chain(KEYS),
                        ),
                    };
                    errors.at(
                        &word,
                        format!(
                            "unknown hook or option `{name}`{suggestion}; hooks: {}; options: {}",
                            Hook::list_short(),
                            KEYS.join(", "),
                        ),
                    );
                }
            },
        }
    }
}

/// A valid id close to an invalid one: lowercase, other characters turned into single `-`.
fn suggest_id(id: &str) -> String {
    let mut s = String::new();
    for c in id.trim().chars() {
        let c = if c.is_ascii_alphanumeric() || "_.".contains(c) {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if !(c == '-' && (s.is_empty() || s.ends_with('-'))) {
            s.push(c);
        }
    }
    let s = s
        .trim_start_matches(|c: char| !c.is_ascii_lowercase())
        .trim_end_matches('-');
    if s.is_empty() {
        "my-processor".to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn suggested_ids_are_valid() {
        for bad in ["My Checker", "  9lives!", "--", "Über Guard", "a  b"] {
            let s = super::suggest_id(bad);
            assert!(crate::names::valid_id(&s), "{bad} -> {s}");
        }
        assert_eq!(super::suggest_id("My Checker"), "my-checker");
    }
}
