//! The options of `#[processor(...)]`.

use crate::errors::Errors;
use crate::hooks::Hook;
use crate::names;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, LitStr, Token, Type};

pub const KEYS: [&str; 6] = [
    "id",
    "name",
    "state",
    "process_data_parts",
    "stream_history",
    "crate",
];

/// One item of the attribute, as written.
enum Item {
    Flag(Ident),
    Id(Ident, LitStr),
    Name(Ident, Ident),
    State(Ident, Box<Type>),
    Crate(Ident, syn::Path),
    Unknown(Ident),
}

pub struct RawAttr {
    items: Vec<Item>,
}

impl Parse for RawAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut items = Vec::new();
        while !input.is_empty() {
            let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
            if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                let item = match key.to_string().as_str() {
                    "id" => Item::Id(key, input.parse()?),
                    "name" => Item::Name(key, input.parse()?),
                    "state" => Item::State(key, input.parse()?),
                    "crate" => {
                        let path = input.call(syn::Path::parse_mod_style).map_err(|e| {
                            syn::Error::new(
                                e.span(),
                                "`crate` takes the path of the crate whose `__private` module the generated code uses, like `crate = processors_runtime`",
                            )
                        })?;
                        Item::Crate(key, path)
                    }
                    _ => {
                        input.parse::<syn::Expr>()?;
                        Item::Unknown(key)
                    }
                };
                items.push(item);
            } else {
                items.push(Item::Flag(key));
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(RawAttr { items })
    }
}

/// The validated options.
#[derive(Default)]
pub struct Attr {
    pub hook: Option<(Hook, Ident)>,
    pub id: Option<LitStr>,
    pub name: Option<Ident>,
    pub state: Option<Type>,
    /// `process_data_parts`, as written.
    pub data_parts: Option<Ident>,
    /// `stream_history`, as written.
    pub history: Option<Ident>,
    /// `crate = path`: where generated code finds `__private`.
    pub krate: Option<syn::Path>,
}

impl Attr {
    /// The module generated code takes its paths from: `<crate>::__private`.
    pub fn private(&self) -> proc_macro2::TokenStream {
        match &self.krate {
            Some(path) => quote::quote!(#path::__private),
            None => quote::quote!(::processors::__private),
        }
    }
}

fn set_once<T>(slot: &mut Option<T>, value: T, key: &Ident, errors: &mut Errors) {
    if slot.is_some() {
        errors.at(key, format!("`{key}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}

impl RawAttr {
    /// Validates the options; `on_fn` says whether the attribute is on a function (which names
    /// its hook) or on an impl block (whose methods are the hooks).
    pub fn validate(self, on_fn: bool, errors: &mut Errors) -> Attr {
        let mut attr = Attr::default();
        let mut flags: (Option<Ident>, Option<Ident>) = (None, None);
        for item in self.items {
            match item {
                Item::Id(key, lit) => {
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
                    set_once(&mut attr.id, lit, &key, errors);
                }
                Item::Name(key, name) => set_once(&mut attr.name, name, &key, errors),
                Item::State(key, ty) => set_once(&mut attr.state, *ty, &key, errors),
                Item::Crate(key, path) => set_once(&mut attr.krate, path, &key, errors),
                Item::Flag(key) => match key.to_string().as_str() {
                    "process_data_parts" => set_once(&mut flags.0, key.clone(), &key, errors),
                    "stream_history" => set_once(&mut flags.1, key.clone(), &key, errors),
                    "id" | "name" | "state" | "crate" => {
                        errors.at(&key, format!("`{key}` needs a value: `{key} = ...`"))
                    }
                    name => match Hook::from_short(name).or_else(|| Hook::from_method(name)) {
                        Some(hook) if on_fn => {
                            if let Some((first, _)) = attr.hook {
                                errors.at(
                                    &key,
                                    format!(
                                        "a processor function implements one hook, and this one already names `{}`; to implement several hooks, put `#[processor]` on an impl block with one method per hook",
                                        first.short()
                                    ),
                                );
                            } else {
                                attr.hook = Some((hook, key));
                            }
                        }
                        Some(hook) => errors.at(
                            &key,
                            format!(
                                "on an impl block the hooks are its methods: write `fn {}(&self, ...)` instead of naming `{}` here",
                                hook.method(), hook.short()
                            ),
                        ),
                        None => {
                            let candidates =
                                Hook::ALL.map(Hook::short).into_iter().chain(KEYS);
                            errors.at(
                                &key,
                                format!(
                                    "unknown hook or option `{name}`{}; hooks: {}; options: {}",
                                    names::did_you_mean(name, candidates),
                                    Hook::list_short(),
                                    KEYS.join(", "),
                                ),
                            );
                        }
                    },
                },
                Item::Unknown(key) => errors.at(
                    &key,
                    format!(
                        "unknown option `{key}`{}; options: {}",
                        names::did_you_mean(&key.to_string(), KEYS),
                        KEYS.join(", ")
                    ),
                ),
            }
        }
        attr.data_parts = flags.0;
        attr.history = flags.1;
        attr
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
