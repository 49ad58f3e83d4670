//! The grammar of `agent!`: `key: value` fields separated by commas; list keys take
//! `[a, b, ...]`.
//!
//! A field that does not parse is kept as its key, with its error, and parsing resumes at the
//! next field, so parse errors and the checks of the other fields come in one build (and a
//! broken `model:` is not reported missing as well).

use super::key::Key;
use proc_macro2::{Spacing, TokenTree};
use syn::buffer::Cursor;
use syn::parse::discouraged::Speculative;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Token, bracketed};

/// The invocation as written.
pub struct AgentInput {
    pub fields: Vec<Field>,
    /// Why the fields without a value did not parse.
    pub errors: Vec<syn::Error>,
}

pub struct Field {
    /// The key as written.
    pub ident: Ident,
    /// The key, unless it is unknown.
    pub key: Option<Key>,
    /// The value; `None` when it did not parse.
    pub value: Option<Value>,
}

/// A field's value as written.
pub enum Value {
    /// `[a, b, ...]`, after a key that takes a list.
    List(syn::token::Bracket, Vec<Expr>),
    Expr(Expr),
}

impl Parse for AgentInput {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut fields = Vec::new();
        let mut errors = Vec::new();
        while !input.is_empty() {
            let fork = input.fork();
            match fork
                .parse::<Field>()
                .and_then(|f| end_of_field(&fork).map(|()| f))
            {
                Ok(field) => {
                    input.advance_to(&fork);
                    fields.push(field);
                }
                Err(e) => {
                    errors.push(e);
                    let ident = input.call(syn::ext::IdentExt::parse_any).ok();
                    skip_to_next_field(input);
                    fields.extend(ident.map(|ident| Field {
                        key: Key::from_ident(&ident),
                        ident,
                        value: None,
                    }));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(AgentInput { fields, errors })
    }
}

impl Parse for Field {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let ident: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        input.parse::<Token![:]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `:` after `{ident}`, as in `{ident}: ...`"),
            )
        })?;
        let key = Key::from_ident(&ident);
        let value = if key.is_some_and(Key::takes_list) && input.peek(syn::token::Bracket) {
            let content;
            let bracket = bracketed!(content in input);
            let items = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
            Value::List(bracket, items.into_iter().collect())
        } else {
            Value::Expr(input.parse()?)
        };
        Ok(Field {
            ident,
            key,
            value: Some(value),
        })
    }
}

/// A field ends at a comma or at the end of the input.
fn end_of_field(input: ParseStream) -> syn::Result<()> {
    if input.is_empty() || input.peek(Token![,]) {
        Ok(())
    } else {
        Err(input.error("expected `,` after the value, before the next key"))
    }
}

/// Skips to the comma before the next `key:` (or to the end).
fn skip_to_next_field(input: ParseStream) {
    let skipped = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tt, next)) = rest.token_tree() {
            let comma = matches!(&tt, TokenTree::Punct(p) if p.as_char() == ',');
            if comma && (next.eof() || starts_field(next)) {
                break;
            }
            rest = next;
        }
        Ok(((), rest))
    });
    debug_assert!(skipped.is_ok(), "skipping tokens cannot fail");
}

/// Whether `cursor` is at `ident :` (and not at `ident ::`).
fn starts_field(cursor: Cursor) -> bool {
    let Some((_, rest)) = cursor.ident() else {
        return false;
    };
    matches!(rest.punct(), Some((p, _)) if p.as_char() == ':' && p.spacing() == Spacing::Alone)
}
