//! What the macros read of a type as written: its last path segment.

use syn::Type;

/// Whether `ty` is a path whose last segment is `name` (`Option`, `ToolContext`, …).
pub fn last_segment_is(ty: &Type, name: &str) -> bool {
    match ty {
        Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == name),
        _ => false,
    }
}

/// Whether `ty` is an `Option` (by its last path segment): a value that may be left out.
pub fn is_option(ty: &Type) -> bool {
    last_segment_is(ty, "Option")
}
