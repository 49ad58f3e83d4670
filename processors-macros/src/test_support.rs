//! Reading expansions in unit tests: parsed with syn, inspected as items and statements.

use quote::ToTokens;
use syn::{File, Item, ItemImpl, Macro};

/// The messages of the `compile_error!` invocations among `items`.
pub fn compile_errors(file: &File) -> Vec<String> {
    file.items.iter().filter_map(item_error).collect()
}

fn item_error(item: &Item) -> Option<String> {
    match item {
        Item::Macro(m) => error_message(&m.mac),
        _ => None,
    }
}

fn error_message(mac: &Macro) -> Option<String> {
    let last = mac.path.segments.last()?;
    (last.ident == "compile_error").then(|| {
        mac.parse_body::<syn::LitStr>()
            .expect("compile_error! takes a string")
            .value()
    })
}

/// The impls of the trait whose last path segment is `trait_name` (`""`: inherent impls) for
/// the type written `self_ty`.
pub fn impls_of<'f>(file: &'f File, trait_name: &str, self_ty: &str) -> Vec<&'f ItemImpl> {
    file.items
        .iter()
        .filter_map(|i| match i {
            Item::Impl(imp) => Some(imp),
            _ => None,
        })
        .filter(|imp| imp.self_ty.to_token_stream().to_string() == self_ty)
        .filter(|imp| match &imp.trait_ {
            Some((path, _)) => path.segments.last().is_some_and(|s| s.ident == trait_name),
            None => trait_name.is_empty(),
        })
        .collect()
}

/// The one impl of `trait_name` for `self_ty`.
pub fn impl_of<'f>(file: &'f File, trait_name: &str, self_ty: &str) -> &'f ItemImpl {
    match impls_of(file, trait_name, self_ty)[..] {
        [one] => one,
        ref other => panic!("{} impls of `{trait_name}` for `{self_ty}`", other.len()),
    }
}

/// The messages of the `compile_error!` invocations among the statements of `block`.
pub fn compile_errors_in(block: &syn::Block) -> Vec<String> {
    block
        .stmts
        .iter()
        .filter_map(|s| match s {
            syn::Stmt::Item(item) => item_error(item),
            syn::Stmt::Macro(m) => error_message(&m.mac),
            _ => None,
        })
        .collect()
}
