//! The grammar of `agent!`: `key: value` fields separated by commas; list keys take
//! `[a, b, ...]`, or `ordered[a, mine before X, ...]` (the built-ins in their default order,
//! processors of one's own placed before or after a built-in).
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
    /// `ordered[a, b before X, ...]`, after a key that takes a list.
    Ordered(Ident, Vec<Placed>),
    Expr(Expr),
}

/// An entry of an ordered list: a processor, and where it goes when it is not a built-in.
pub struct Placed {
    pub expr: Expr,
    /// `before X` or `after X`.
    pub place: Option<(Ident, syn::Type)>,
}

impl Parse for Placed {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Ok(Placed { expr, place: None });
        }
        let word: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `,`, or `before X` / `after X` after a processor of your own",
            )
        })?;
        if word != "before" && word != "after" {
            return Err(syn::Error::new(
                word.span(),
                format!(
                    "expected `before` or `after`, found `{word}`: a processor of your own goes `before X` or `after X`, where `X` is a built-in of the list"
                ),
            ));
        }
        let anchor: syn::Type = input.parse()?;
        Ok(Placed {
            expr,
            place: Some((word, anchor)),
        })
    }
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
        let ordered = key.is_some_and(Key::takes_list)
            && input.peek(Ident)
            && input.peek2(syn::token::Bracket)
            && input.fork().parse::<Ident>().is_ok_and(|w| w == "ordered");
        let value = if ordered {
            let word: Ident = input.parse()?;
            let content;
            bracketed!(content in input);
            let items = Punctuated::<Placed, Token![,]>::parse_terminated(&content)?;
            Value::Ordered(word, items.into_iter().collect())
        } else if key.is_some_and(Key::takes_list) && input.peek(syn::token::Bracket) {
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
