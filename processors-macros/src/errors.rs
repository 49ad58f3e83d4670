//! Collects every error of one invocation, so a user with three mistakes sees three errors.

use proc_macro2::{Span, TokenStream};
use std::fmt::Display;
use syn::Ident;

#[derive(Default)]
pub struct Errors {
    first: Option<syn::Error>,
}

impl Errors {
    pub fn push(&mut self, e: syn::Error) {
        match &mut self.first {
            Some(first) => first.combine(e),
            None => self.first = Some(e),
        }
    }

    pub fn at<T: quote::ToTokens, M: Display>(&mut self, tokens: T, message: M) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn span<M: Display>(&mut self, span: Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    /// The value of `result`, or `None` with its error recorded.
    pub fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// `Ok` without errors, else every error as one `syn::Error`.
    pub fn finish(self) -> syn::Result<()> {
        self.first.map_or(Ok(()), Err)
    }

    pub fn into_compile_errors(self) -> TokenStream {
        self.first
            .map(syn::Error::into_compile_error)
            .unwrap_or_default()
    }
}

/// The keys (options) given so far in one invocation, to reject one given twice.
#[derive(Default)]
pub struct Keys(Vec<Ident>);

impl Keys {
    /// Whether `key` is given for the first time. When it is not, reports the mistake at both
    /// places: the repeat, and the first occurrence.
    pub fn first_time(&mut self, key: &Ident, errors: &mut Errors) -> bool {
        match self.0.iter().find(|k| *k == key) {
            Some(first) => {
                errors.at(key, format!("`{key}` is given twice; keep one"));
                errors.at(first, format!("`{first}` is first given here"));
                false
            }
            None => {
                self.0.push(key.clone());
                true
            }
        }
    }
}
