//! The keys of `agent!`.

use syn::Ident;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Key {
    Name,
    Instructions,
    Model,
    Tools,
    Memory,
    Input,
    Output,
    Error,
    MaxProcessorRetries,
    MaxSteps,
    OnViolation,
    Crate,
}

impl Key {
    /// Every key, in the order the documentation lists them.
    pub const ALL: [Key; 12] = [
        Key::Name,
        Key::Instructions,
        Key::Model,
        Key::Tools,
        Key::Memory,
        Key::Input,
        Key::Output,
        Key::Error,
        Key::MaxProcessorRetries,
        Key::MaxSteps,
        Key::OnViolation,
        Key::Crate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Key::Name => "name",
            Key::Instructions => "instructions",
            Key::Model => "model",
            Key::Tools => "tools",
            Key::Memory => "memory",
            Key::Input => "input",
            Key::Output => "output",
            Key::Error => "error",
            Key::MaxProcessorRetries => "max_processor_retries",
            Key::MaxSteps => "max_steps",
            Key::OnViolation => "on_violation",
            Key::Crate => "crate",
        }
    }

    pub fn from_ident(ident: &Ident) -> Option<Key> {
        Key::ALL.into_iter().find(|k| ident == k.name())
    }

    /// Whether the key takes a list in brackets.
    pub fn takes_list(self) -> bool {
        match self {
            Key::Tools | Key::Input | Key::Output | Key::Error => true,
            Key::Name
            | Key::Instructions
            | Key::Model
            | Key::Memory
            | Key::MaxProcessorRetries
            | Key::MaxSteps
            | Key::OnViolation
            | Key::Crate => false,
        }
    }

    /// The names, for error messages: `name, instructions, …`.
    pub fn list() -> String {
        Key::ALL.map(Key::name).join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    #[test]
    fn names_parse_back_to_their_key() {
        for key in Key::ALL {
            let ident = Ident::new(key.name(), Span::call_site());
            assert_eq!(Key::from_ident(&ident), Some(key), "{}", key.name());
        }
        assert_eq!(
            Key::from_ident(&Ident::new("ouput", Span::call_site())),
            None
        );
    }
}
