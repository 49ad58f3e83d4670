//! Collects every error of one invocation, so a user with three mistakes sees three errors.

use proc_macro2::TokenStream;
use std::fmt::Display;

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

    pub fn span<M: Display>(&mut self, span: proc_macro2::Span, message: M) {
        self.push(syn::Error::new(span, message));
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    pub fn into_compile_errors(self) -> TokenStream {
        self.first
            .map(|e| e.into_compile_error())
            .unwrap_or_default()
    }
}
