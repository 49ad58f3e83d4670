//! The grammar of `agent!`: `key: value` fields separated by commas; list keys take
//! `[a, b, ...]`.

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Token, bracketed};

/// A field's value as written.
pub enum Value {
    List(syn::token::Bracket, Vec<Expr>),
    Expr(Expr),
}

pub struct Field {
    pub key: Ident,
    pub value: Value,
}

impl Parse for Field {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.call(syn::ext::IdentExt::parse_any)?;
        input.parse::<Token![:]>().map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("expected `:` after `{key}`, as in `{key}: ...`"),
            )
        })?;
        let value = if input.peek(syn::token::Bracket) {
            let content;
            let bracket = bracketed!(content in input);
            let items = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
            Value::List(bracket, items.into_iter().collect())
        } else {
            Value::Expr(input.parse()?)
        };
        Ok(Field { key, value })
    }
}

pub struct AgentDecl {
    pub fields: Vec<Field>,
}

impl Parse for AgentDecl {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let fields = Punctuated::<Field, Token![,]>::parse_terminated(input)?;
        Ok(AgentDecl {
            fields: fields.into_iter().collect(),
        })
    }
}
