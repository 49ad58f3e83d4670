//! Paths used by the code `#[processor]` and `agent!` generate. Not a stable API: anything
//! here may change in any release.
//!
//! The macros name `<crate>::__private::…` and `::core::…` only, where `<crate>` is
//! `::processors` unless the invocation says otherwise (`crate = processors_runtime`), so
//! generated code depends on nothing the user has imported.

pub use crate::agent::Agent;
pub use crate::memory::{IntoMemory, Memory};
pub use crate::model::LanguageModel;
pub use crate::processor::ProcessorError;
pub use crate::processor::extract::*;
pub use crate::processor::known::{AsksForRetry, Known, NoRetryAsked, Retries};
pub use crate::processor::placement::*;
pub use crate::processor::{
    ApiErrorAction, ApiErrorArgs, ErrorProcessor, Hooks, InputArgs, InputOutcome, InputProcessor,
    InputStepArgs, LlmRequestAction, LlmRequestArgs, LlmResponseArgs, OutputOutcome,
    OutputProcessor, OutputResultArgs, OutputStepArgs, OutputStreamArgs, Processor, StepOverrides,
    StreamAction, ToolCallAction, ToolCallArgs, ToolResultAction, ToolResultArgs,
};
pub use serde;
pub use serde_json::Value;

pub use crate::error::BoxError;
pub use crate::tool::typed::{
    ParamSpec, ToolArgs, ToolParamRead, ToolParamSchema, args_schema, args_struct, param_schema,
    params_schema, tool_output, tool_result,
};
pub use crate::tool::{Tool, ToolContext};
pub use futures::future::BoxFuture;

use crate::chunk::Chunk;
use crate::message::{Message, MessageList};
use crate::processor::DataWriter;
use std::marker::PhantomData;

/// What `agent!` stands for after the mistakes it reported: an agent (lists built at run
/// time, a model with no answer), so that the code using it reports nothing more and the code
/// after it stays reachable.
pub fn agent_after_errors() -> Agent {
    Agent::builder().__build_checked(crate::model::ScriptedModel::new([]))
}

/// Whether two static ids are known and equal.
pub const fn same_id(a: Option<&str>, b: Option<&str>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A type a `#[processor(<hook>, options)]` function's `#[config]` parameter may have: read
/// from the processor's entry in a file.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an option in files: it has no `Deserialize`",
    label = "`options` reads this parameter from the processor's entry in a file",
    note = "derive `serde::Deserialize` on it, or drop `options` and register a factory of your own (`Registry::register_with`)"
)]
pub trait FileOption: serde::de::DeserializeOwned {}

impl<T: serde::de::DeserializeOwned> FileOption for T {}

/// Reads one option of a `#[processor(<hook>, options)]` struct.
pub fn file_option<'de, T: FileOption, D: serde::Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    T::deserialize(d)
}

/// The error of a hook that asked for one parameter twice.
pub fn param_taken(id: &str, what: &str) -> ProcessorError {
    ProcessorError::msg(format!(
        "processor `{id}` asks for `{what}` more than once; its hook provides it once"
    ))
}

/// What a hook parameter of type `T` takes out of the hook's arguments, as bits of
/// `Takes::<T>::PARTS`, so that two parameters taking one part are a compile error at the
/// second (a type alias cannot hide them). Types that take nothing another parameter could
/// want get the constant of [`TakesNothing`], which generated code brings into scope.
pub struct Takes<T: ?Sized>(PhantomData<T>);

const MESSAGE_LIST: u8 = 1 << 0;
const MESSAGES: u8 = 1 << 1;
const SYSTEM_MESSAGES: u8 = 1 << 2;
const DATA_WRITER: u8 = 1 << 3;
const STREAM_HISTORY: u8 = 1 << 4;

impl Takes<&mut MessageList> {
    /// The message list.
    pub const PARTS: u8 = MESSAGE_LIST;
}

impl Takes<&MessageList> {
    /// The message list.
    pub const PARTS: u8 = MESSAGE_LIST;
}

impl Takes<Vec<Message>> {
    /// The hook's messages.
    pub const PARTS: u8 = MESSAGES;
}

impl Takes<SystemMessages> {
    /// The system messages.
    pub const PARTS: u8 = SYSTEM_MESSAGES;
}

impl Takes<DataWriter<'_>> {
    /// The data writer.
    pub const PARTS: u8 = DATA_WRITER;
}

impl Takes<&[Chunk]> {
    /// The stream history (a shared slice: two parameters may both ask for it).
    pub const PARTS: u8 = STREAM_HISTORY;
}

/// Whether a hook whose parameters take `parts` reads the stream history, so the runner must
/// keep it.
pub const fn reads_stream_history(parts: u8) -> bool {
    parts & STREAM_HISTORY != 0
}

/// `hook` if parameters taking `parts` read the hook's `messages` or `system_messages`
/// (for [`Processor::READS_MESSAGES`]).
pub const fn if_reads_messages(hook: Hooks, parts: u8) -> Hooks {
    if parts & (MESSAGES | SYSTEM_MESSAGES) != 0 {
        hook
    } else {
        Hooks::NONE
    }
}

/// `Takes::<T>::PARTS` for every type without an inherent constant above: nothing.
pub trait TakesNothing {
    /// No part.
    const PARTS: u8 = 0;
}

impl<T: ?Sized> TakesNothing for Takes<T> {}

/// Why a parameter taking `this` cannot follow parameters that took `earlier`, if it cannot.
pub const fn taken_twice(earlier: u8, this: u8) -> Option<&'static str> {
    let both = earlier & this;
    if both & MESSAGE_LIST != 0 {
        Some(
            "the message list is already a parameter of this hook; ask for it once (`&mut MessageList` also reads the list)",
        )
    } else if both & MESSAGES != 0 {
        Some(
            "the messages (`Vec<Message>`) are already a parameter of this hook; ask for them once",
        )
    } else if both & SYSTEM_MESSAGES != 0 {
        Some("the system messages are already a parameter of this hook; ask for them once")
    } else if both & DATA_WRITER != 0 {
        Some("the data writer is already a parameter of this hook; ask for it once")
    } else {
        None
    }
}

/// An entry of an `agent!` list, before it is known to be a processor. Method resolution on
/// `&Entry<T>` tells what the entry is, by its type: [`Entry::__kind`] for the agent's memory
/// type, [`ViaFunction`] for a function (the usual slip: the function instead of the type
/// `#[processor]` generated for it), [`ViaValue`] for anything else.
pub struct Entry<T>(pub T);

/// The agent's memory as a list entry: the value, or a pointer to one.
macro_rules! memory_entries {
    ($($memory:ty),*) => { $(
        impl Entry<$memory> {
            /// A memory value.
            #[inline(always)]
            pub fn __kind(&self) -> IsMemory {
                IsMemory
            }
        }
    )* };
}

memory_entries!(Memory, std::sync::Arc<Memory>, &'static Memory);

/// The kind of an entry that is not more specific.
pub trait ViaValue {
    /// A value.
    fn __kind(&self) -> IsValue;
}

impl<T> ViaValue for &Entry<T> {
    #[inline(always)]
    fn __kind(&self) -> IsValue {
        IsValue
    }
}

/// The kind of an entry that is callable with `Args`: a function.
pub trait ViaFunction<Args> {
    /// A function.
    fn __kind(&self) -> IsFunction;
}

macro_rules! via_function {
    ($(($($arg:ident),*))*) => { $(
        impl<F: Fn($($arg),*) -> R, R, $($arg),*> ViaFunction<($($arg,)*)> for Entry<F> {
            #[inline(always)]
            fn __kind(&self) -> IsFunction {
                IsFunction
            }
        }
    )* };
}

via_function! {
    () (A) (A, B) (A, B, C) (A, B, C, D) (A, B, C, D, E) (A, B, C, D, E, G)
    (A, B, C, D, E, G, H) (A, B, C, D, E, G, H, I) (A, B, C, D, E, G, H, I, J)
    (A, B, C, D, E, G, H, I, J, K) (A, B, C, D, E, G, H, I, J, K, L)
    (A, B, C, D, E, G, H, I, J, K, L, M) (A, B, C, D, E, G, H, I, J, K, L, M, N)
    (A, B, C, D, E, G, H, I, J, K, L, M, N, O) (A, B, C, D, E, G, H, I, J, K, L, M, N, O, Q)
    (A, B, C, D, E, G, H, I, J, K, L, M, N, O, Q, S)
}

impl IsValue {
    /// The entry's value.
    #[inline(always)]
    pub fn take<T>(self, entry: Entry<T>) -> T {
        entry.0
    }
}

impl IsMemory {
    /// The memory value (a pointer to one stays a pointer: it runs as the memory it points
    /// to).
    #[inline(always)]
    pub fn take<M>(self, entry: Entry<M>) -> M {
        entry.0
    }
}

impl IsFunction {
    /// A stand-in for the function, so that it is reported once (by `agent!`'s check of
    /// the entry's kind), not also as a processor of no list.
    #[inline(always)]
    pub fn take<T>(self, entry: Entry<T>) -> NotAProcessor {
        let _ = entry;
        NotAProcessor
    }
}

/// What a processor type must be: one value serves every run of the agents it is in, and
/// runs may be concurrent, so it is sent to and shared between threads, for as long as the
/// agents live. `#[processor]` checks it once per type, so that a missing bound is reported
/// once, at the type.
pub trait SharedByConcurrentRuns: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> SharedByConcurrentRuns for T {}

/// Checks, where `#[processor]` calls it, that `P` can be a processor.
#[inline(always)]
pub fn processor_is_shared_by_concurrent_runs<P: SharedByConcurrentRuns>() {}

/// A list entry's processor, asked whether its type is [`Known`]: `(&&Probe(&p)).__facts()`
/// is the type when it is, and [`NotAProcessor`] (a hook of every list, no id: nothing to
/// report) when it is not.
pub struct Probe<'a, T>(pub &'a T);

/// The facts of a [`Known`] type.
pub trait ViaKnown<T> {
    /// The type itself.
    fn __facts(&self) -> PhantomData<T>;
}

impl<T: Known> ViaKnown<T> for &Probe<'_, T> {
    #[inline(always)]
    fn __facts(&self) -> PhantomData<T> {
        PhantomData
    }
}

/// The facts of a type that is not [`Known`]: none.
pub trait ViaUnknown {
    /// A stand-in that every check passes.
    fn __facts(&self) -> PhantomData<NotAProcessor>;
}

impl<T> ViaUnknown for Probe<'_, T> {
    #[inline(always)]
    fn __facts(&self) -> PhantomData<NotAProcessor> {
        PhantomData
    }
}

/// Whether a processor of a [`Retries`] type asks for a retry.
pub trait ViaRetries<A> {
    /// The type's answer.
    fn __retries(&self) -> PhantomData<A>;
}

impl<T: Retries> ViaRetries<T::Asks> for &Probe<'_, T> {
    #[inline(always)]
    fn __retries(&self) -> PhantomData<T::Asks> {
        PhantomData
    }
}

/// Whether a processor of another type asks for a retry: not known, so not warned of.
pub trait ViaNoRetries {
    /// No retry.
    fn __retries(&self) -> PhantomData<NoRetryAsked>;
}

impl<T> ViaNoRetries for Probe<'_, T> {
    #[inline(always)]
    fn __retries(&self) -> PhantomData<NoRetryAsked> {
        PhantomData
    }
}

/// The type of `value`, for a check evaluated when the code is instantiated: a constant
/// `const { Check::NAME }` given as `check` takes its type parameters from `value`.
#[inline(always)]
pub fn when_instantiated<T>(value: PhantomData<T>, check: PhantomData<T>) {
    let _ = (value, check);
}

/// Stands in for an entry that is not a processor, once that is reported, and for a processor
/// whose type is not [`Known`] in a check made while the code type-checks. It has a hook of
/// every list, one that may ask for a retry, and no static id, so no check reports it.
pub struct NotAProcessor;

impl Processor for NotAProcessor {
    type State = ();
    const HOOKS: Hooks = Hooks::NONE
        .with(Hooks::INPUT)
        .with(Hooks::INPUT_STEP)
        .with(Hooks::OUTPUT_STEP)
        .with(Hooks::API_ERROR);
    fn id(&self) -> &str {
        "not-a-processor"
    }
}

impl InputProcessor for NotAProcessor {}
impl OutputProcessor for NotAProcessor {}
impl ErrorProcessor for NotAProcessor {}

impl Known for NotAProcessor {
    const HOOKS: Hooks = <NotAProcessor as Processor>::HOOKS;
    const STATIC_ID: Option<&'static str> = None;
}

/// The static id, or `""`.
pub const fn id_or_empty(id: Option<&'static str>) -> &'static str {
    match id {
        Some(id) => id,
        None => "",
    }
}

/// Text put together at compile time, for a message that names a value only the compiler
/// knows (a processor's id). Longer text is cut at a character boundary.
pub struct Text {
    bytes: [u8; Text::CAPACITY],
    len: usize,
}

impl Text {
    const CAPACITY: usize = 1024;

    /// `parts`, one after the other.
    pub const fn concat(parts: &[&str]) -> Text {
        let mut text = Text {
            bytes: [0; Text::CAPACITY],
            len: 0,
        };
        let mut p = 0;
        while p < parts.len() {
            let part = parts[p].as_bytes();
            let mut i = 0;
            while i < part.len() && text.len < Text::CAPACITY {
                text.bytes[text.len] = part[i];
                text.len += 1;
                i += 1;
            }
            p += 1;
        }
        text
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        let mut len = self.len;
        loop {
            let (head, _) = self.bytes.split_at(len);
            match core::str::from_utf8(head) {
                Ok(s) => return s,
                Err(_) => len -= 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_put_together_and_cut_at_a_character() {
        const T: Text = Text::concat(&["the id `", "shout", "` is taken"]);
        assert_eq!(T.as_str(), "the id `shout` is taken");
        let long = "é".repeat(Text::CAPACITY);
        assert_eq!(
            Text::concat(&["a", &long]).as_str().len(),
            Text::CAPACITY - 1
        );
    }

    #[test]
    // The probe is called on a reference, as generated code calls it: without one, the
    // value-level candidate is not considered.
    #[allow(clippy::needless_borrow)]
    fn an_entry_tells_its_kind() {
        fn redact(_: &str) -> u8 {
            0
        }
        struct Shout;
        let memory = Memory::new(crate::memory::InMemoryStore::new());
        let _: IsFunction = (&Entry(redact)).__kind();
        let _: IsFunction = (&Entry(|| ())).__kind();
        let _: IsValue = (&Entry(Shout)).__kind();
        let shared = std::sync::Arc::new(memory.clone());
        let _: IsMemory = (&Entry(memory)).__kind();
        let _: IsMemory = (&Entry(shared)).__kind();
    }
}
