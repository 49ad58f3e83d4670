//! The built-ins' default order, and lists built from it: "the defaults, plus mine before or
//! after X", so that nobody needs to know the order by heart.
//!
//! Each built-in has a [`Stage`] ([`Staged::STAGE`]). An [`Ordered`] list puts the built-ins
//! given to [`with`](Ordered::with) in the order of their stages (those of one stage in the
//! order they were given), then each processor of your own where you said:
//! [`before::<X>`](Ordered::before) puts it just before the built-in `X` (after the processors
//! put before `X` earlier), [`after::<X>`](Ordered::after) just after `X` (after those put
//! after `X` earlier). `build()` gives the list as a [`DynPipeline`], for
//! [`AgentBuilder::input_pipeline`](processors_runtime::agent::AgentBuilder::input_pipeline)
//! and its output and error counterparts.
//!
//! What can be checked when the program compiles is: a built-in passed to `with` has a stage
//! and a hook of the list, a processor of your own passed to `before` or `after` has a hook of
//! the list, and `X` is a built-in. That `X` is in the list is checked by `build()`.
//!
//! ```
//! use processors::builtins::order::Ordered;
//! use processors::builtins::regex_filter::Preset;
//! use processors::builtins::{RegexFilter, TokenLimiter, UnicodeNormalizer};
//! use processors::prelude::*;
//!
//! /// A guard of the application's own.
//! struct NoPasswords;
//! #[processor]
//! impl NoPasswords {
//!     fn process_input(&self, messages: Vec<Message>) -> Result<Vec<Message>, ProcessorError> {
//!         match messages.iter().any(|m| m.text().contains("password")) {
//!             true => Err(ProcessorError::abort("do not send passwords")),
//!             false => Ok(messages),
//!         }
//!     }
//! }
//!
//! let input = Ordered::input()
//!     .with(TokenLimiter::new(8_000)?)
//!     .with(RegexFilter::builder().preset(Preset::Secrets).build()?)
//!     .with(UnicodeNormalizer::new())
//!     .before::<RegexFilter>(NoPasswords)
//!     .build()?;
//! let ids: Vec<&str> = input.processors().iter().map(|p| p.dyn_id()).collect();
//! assert_eq!(ids, ["unicode-normalizer", "no-passwords", "regex-filter", "token-limiter"]);
//! let agent = Agent::builder()
//!     .model(ScriptedModel::new([]))
//!     .input_pipeline(input)
//!     .build()?;
//! # let _ = agent;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::chat_compression::{ChatCompression, ConversationCompactor};
use crate::chat_recording::ChatRecording;
use crate::detector::{
    Classifier, LanguageDetector, ModelSelection, Moderation, PiiDetector, PromptInjectionDetector,
    PromptLeakDetector, StructuredOutput,
};
use crate::recovery::{
    ContextLengthHandler, PrefillErrorHandler, ProviderHistoryCompat, StreamErrorRetry,
    TrailingAssistantGuard, UnsupportedFileHandler, UnsupportedSettingHandler,
};
use crate::tools::{
    ToolApproval, ToolInjection, ToolParameters, ToolResultLimiter, ToolValidation,
};
use crate::{
    AtFileExpansion, BatchParts, CostGuard, DirectoryContext, EditorContext, EnsureFinalResponse,
    EnvironmentContext, HistoryWindow, LoopDetection, MemoryImport, MemoryInputFilter, RegexFilter,
    ResponseCache, SemanticRecall, SlashCommands, SystemPromptInjector, SystemPromptScrubber,
    TokenLimiter, ToolCallFilter, ToolSearch, UnicodeNormalizer, WorkingMemory,
};
use processors_runtime::processor::{
    DynPipeline, ErrorProcessor, InputProcessor, OutputProcessor, Processor, ProcessorRef, boxed,
};
use std::any::TypeId;
use std::marker::PhantomData;

/// Where a built-in goes in a list by default. The stages run in the order written here, in
/// every list, but for [`Record`](Stage::Record): first of the input (what the caller sent),
/// last of the output (what the client got).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// A recorder: first in `input`, last in `output`. [`ChatRecording`].
    Record,
    /// Text made uniform before anything reads it. [`UnicodeNormalizer`].
    Normalize,
    /// The user's commands expanded. [`SlashCommands`].
    Commands,
    /// History chosen: [`MemoryInputFilter`], [`SemanticRecall`], [`HistoryWindow`].
    History,
    /// Context added: [`SystemPromptInjector`], [`EnvironmentContext`], [`DirectoryContext`],
    /// [`EditorContext`], [`MemoryImport`], [`WorkingMemory`], [`ToolSearch`],
    /// [`ToolInjection`].
    Context,
    /// Files expanded. [`AtFileExpansion`].
    Files,
    /// History compressed: [`ChatCompression`], [`ConversationCompactor`].
    Compress,
    /// Guards: [`RegexFilter`], the detectors ([`PromptInjectionDetector`], [`Moderation`],
    /// [`PiiDetector`], [`PromptLeakDetector`], [`LanguageDetector`], [`Classifier`],
    /// [`ModelSelection`]), [`SystemPromptScrubber`], and the tool guards
    /// ([`ToolValidation`], [`ToolParameters`], [`ToolCallFilter`], [`ToolResultLimiter`]).
    Guard,
    /// Budgets and approvals: [`TokenLimiter`], [`CostGuard`], [`LoopDetection`],
    /// [`EnsureFinalResponse`], and [`ToolApproval`] (after the tool guards, so that a person
    /// approves the call as it will run).
    Limit,
    /// The call fitted to the provider: [`ProviderHistoryCompat`], [`TrailingAssistantGuard`],
    /// [`UnsupportedSettingHandler`], [`UnsupportedFileHandler`], [`PrefillErrorHandler`],
    /// [`ContextLengthHandler`], [`StreamErrorRetry`].
    Provider,
    /// Answers shaped: [`StructuredOutput`], [`BatchParts`] (after the guards, which then see
    /// every delta).
    Shape,
    /// Answers kept, once everything else decided: [`ResponseCache`].
    Keep,
}

/// Which list an [`Ordered`] builds.
pub trait Side: sealed::Sealed {
    /// Where [`Stage::Record`] goes: first (`true`) or last.
    const RECORD_FIRST: bool;
}

/// The input processors.
#[derive(Debug)]
pub enum Input {}
/// The output processors.
#[derive(Debug)]
pub enum Output {}
/// The error processors.
#[derive(Debug)]
pub enum Error {}

impl Side for Input {
    const RECORD_FIRST: bool = true;
}
impl Side for Output {
    const RECORD_FIRST: bool = false;
}
impl Side for Error {
    const RECORD_FIRST: bool = false;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Input {}
    impl Sealed for super::Output {}
    impl Sealed for super::Error {}
}

/// A processor with a hook of the list `S` runs in.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no hook of this list",
    label = "not a processor of this list",
    note = "an input list takes processors with an input hook (`InputProcessor`), an output list those with an output hook, an error list those with `process_api_error`"
)]
pub trait Fits<S: Side> {}

impl<P: InputProcessor> Fits<Input> for P {}
impl<P: OutputProcessor> Fits<Output> for P {}
impl<P: ErrorProcessor> Fits<Error> for P {}

impl Stage {
    /// Its rank in a list of side `S`: lower runs first.
    fn rank<S: Side>(self) -> u8 {
        match self {
            Stage::Record if S::RECORD_FIRST => 0,
            Stage::Record => u8::MAX,
            other => other as u8 + 1,
        }
    }
}

/// A built-in's default place.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no default place",
    label = "not a built-in with a stage",
    note = "only the built-ins have a stage; a processor of your own goes before or after a built-in `X` of the list: `before::<X>(p)` or `after::<X>(p)` on `Ordered`, `p before X` or `p after X` in `agent!`'s `ordered[...]`"
)]
pub trait Staged: Processor {
    /// Its stage.
    const STAGE: Stage;
}

macro_rules! staged {
    ($($stage:ident => $($ty:ty),+;)*) => {
        $($(impl Staged for $ty { const STAGE: Stage = Stage::$stage; })+)*
    };
}

staged! {
    Record => ChatRecording;
    Normalize => UnicodeNormalizer;
    Commands => SlashCommands;
    History => MemoryInputFilter, SemanticRecall, HistoryWindow;
    Context => SystemPromptInjector, EnvironmentContext, DirectoryContext, EditorContext,
        MemoryImport, WorkingMemory, ToolSearch, ToolInjection;
    Files => AtFileExpansion;
    Compress => ChatCompression, ConversationCompactor;
    Guard => RegexFilter, PromptInjectionDetector, Moderation, PiiDetector, PromptLeakDetector,
        LanguageDetector, Classifier, ModelSelection, SystemPromptScrubber, ToolValidation,
        ToolParameters, ToolCallFilter, ToolResultLimiter;
    Limit => TokenLimiter, CostGuard, LoopDetection, EnsureFinalResponse, ToolApproval;
    Provider => ProviderHistoryCompat, TrailingAssistantGuard, UnsupportedSettingHandler,
        UnsupportedFileHandler, PrefillErrorHandler, ContextLengthHandler, StreamErrorRetry;
    Keep => ResponseCache;
}

impl<T: serde::de::DeserializeOwned + schemars::JsonSchema + 'static> Staged
    for StructuredOutput<T>
{
    const STAGE: Stage = Stage::Shape;
}

impl Staged for BatchParts {
    const STAGE: Stage = Stage::Shape;
}

/// A shared built-in has the built-in's place.
impl<P: Staged> Staged for std::sync::Arc<P>
where
    std::sync::Arc<P>: Processor,
{
    const STAGE: Stage = P::STAGE;
}

/// Where a processor of your own goes.
#[derive(Debug, Clone, Copy)]
enum Anchor {
    Before(TypeId, &'static str),
    After(TypeId, &'static str),
}

/// A list in the built-ins' default order with processors of your own placed around them;
/// see the [module docs](self).
#[must_use]
pub struct Ordered<S: Side> {
    staged: Vec<(u8, ProcessorRef)>,
    placed: Vec<(Anchor, ProcessorRef)>,
    side: PhantomData<S>,
}

impl<S: Side> std::fmt::Debug for Ordered<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids = |v: &[ProcessorRef]| v.iter().map(|p| p.dyn_id().to_owned()).collect::<Vec<_>>();
        f.debug_struct("Ordered")
            .field(
                "staged",
                &ids(&self
                    .staged
                    .iter()
                    .map(|(_, p)| p.clone())
                    .collect::<Vec<_>>()),
            )
            .field(
                "placed",
                &self
                    .placed
                    .iter()
                    .map(|(a, p)| (*a, p.dyn_id().to_owned()))
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Ordered<Input> {
    /// An input list.
    pub fn input() -> Self {
        Self::new()
    }
}

impl Ordered<Output> {
    /// An output list.
    pub fn output() -> Self {
        Self::new()
    }
}

impl Ordered<Error> {
    /// An error list.
    pub fn error() -> Self {
        Self::new()
    }
}

/// A processor placed before or after a built-in that is not in the list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{processor}` is placed {side} `{anchor}`, which is not in the list; add `{anchor}` with `with`, or place `{processor}` around a built-in that is"
)]
pub struct NotInList {
    /// The processor placed.
    pub processor: String,
    /// `before` or `after`.
    pub side: &'static str,
    /// The built-in it is placed around.
    pub anchor: &'static str,
}

impl<S: Side> Ordered<S> {
    fn new() -> Self {
        Ordered {
            staged: Vec::new(),
            placed: Vec::new(),
            side: PhantomData,
        }
    }

    /// Adds a built-in, at its stage.
    pub fn with<P: Staged + Fits<S>>(mut self, p: P) -> Self {
        self.staged.push((P::STAGE.rank::<S>(), boxed(p)));
        self
    }

    /// Adds `p` just before the built-in `X` (after what was put before `X` earlier).
    pub fn before<X: Staged>(mut self, p: impl Processor + Fits<S>) -> Self {
        let anchor = Anchor::Before(TypeId::of::<X>(), short_name::<X>());
        self.placed.push((anchor, boxed(p)));
        self
    }

    /// Adds `p` just after the built-in `X` (after what was put after `X` earlier).
    pub fn after<X: Staged>(mut self, p: impl Processor + Fits<S>) -> Self {
        let anchor = Anchor::After(TypeId::of::<X>(), short_name::<X>());
        self.placed.push((anchor, boxed(p)));
        self
    }

    /// The list: the built-ins in the order of their stages, and each processor of your own
    /// around its built-in; or the first processor placed around a built-in not in the list.
    pub fn build(self) -> Result<DynPipeline, NotInList> {
        let mut staged = self.staged;
        staged.sort_by_key(|(rank, _)| *rank);
        // Each entry: the processor, and the built-in it belongs to (itself for a built-in).
        let mut list: Vec<(TypeId, ProcessorRef)> = staged
            .into_iter()
            .map(|(_, p)| (p.dyn_type_id(), p))
            .collect();
        for (anchor, p) in self.placed {
            let (of, name, side) = match anchor {
                Anchor::Before(of, name) => (of, name, "before"),
                Anchor::After(of, name) => (of, name, "after"),
            };
            // A built-in `X` wherever it came from (with `with`, or placed around another).
            let is_anchor = |(_, q): &(TypeId, ProcessorRef)| q.dyn_type_id() == of;
            let at = match anchor {
                // Before the first `X`.
                Anchor::Before(..) => list.iter().position(is_anchor),
                // After the last `X` and what was put after it.
                Anchor::After(..) => list.iter().rposition(is_anchor).map(|i| {
                    i + 1
                        + list[i + 1..]
                            .iter()
                            .take_while(|(t, q)| *t == of && q.dyn_type_id() != of)
                            .count()
                }),
            };
            let Some(at) = at else {
                return Err(NotInList {
                    processor: p.dyn_id().to_owned(),
                    side,
                    anchor: name,
                });
            };
            let owner = match anchor {
                Anchor::Before(..) => TypeId::of::<()>(),
                Anchor::After(..) => of,
            };
            list.insert(at, (owner, p));
        }
        let mut pipeline = DynPipeline::new();
        for (_, p) in list {
            pipeline.push(p);
        }
        Ok(pipeline)
    }
}

/// Type-level proof that a built-in `X` is in a list of processors, for `agent!`'s ordered
/// lists, which check their anchors when the program compiles. The list is nested pairs of
/// references, `(&A, (&B, ()))`; `I` is where `X` is (inferred).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{X}` is not in this list",
    label = "placed around a built-in the list does not have",
    note = "a processor of your own goes `before` or `after` a built-in of the same list; add `{X}` to the list, or name one it has"
)]
pub trait Contains<X, I> {}

/// `X` is the list's first processor.
#[doc(hidden)]
pub enum Here {}
/// `X` is the list's first processor, shared (`Arc<X>`).
#[doc(hidden)]
pub enum HereShared {}
/// `X` is further on.
#[doc(hidden)]
pub struct There<I>(PhantomData<I>);

// Not recommended: a failed check reports the message above, not the impls tried.
#[diagnostic::do_not_recommend]
impl<X, T> Contains<X, Here> for (&X, T) {}
#[diagnostic::do_not_recommend]
impl<X, T> Contains<X, HereShared> for (&std::sync::Arc<X>, T) {}
#[diagnostic::do_not_recommend]
impl<X, H, T: Contains<X, I>, I> Contains<X, There<I>> for (H, T) {}

/// Checks, when the program compiles, that `X` is in `list`.
#[doc(hidden)]
pub fn __contains<X, L: Contains<X, I>, I>(list: &L) {
    let _ = list;
}

impl<S: Side> Ordered<S> {
    /// The list, whose anchors `agent!` checked when the program compiled.
    #[doc(hidden)]
    pub fn __build_checked(self) -> DynPipeline {
        match self.build() {
            Ok(pipeline) => pipeline,
            // Each anchor is a built-in of the list, checked by `Contains`, and `build` finds
            // a built-in by the type its hooks run on, which is the type `Contains` proved.
            Err(e) => unreachable!("{e}"),
        }
    }
}

/// The type's name without its path (`RegexFilter`, `StructuredOutput<Answer>`).
fn short_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    let end = full.find('<').unwrap_or(full.len());
    match full[..end].rfind("::") {
        Some(at) => &full[at + 2..],
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short() {
        assert_eq!(short_name::<RegexFilter>(), "RegexFilter");
        assert_eq!(short_name::<u8>(), "u8");
    }

    #[test]
    fn a_recorder_is_first_in_input_and_last_in_output() {
        assert_eq!(Stage::Record.rank::<Input>(), 0);
        assert_eq!(Stage::Record.rank::<Output>(), u8::MAX);
        assert!(Stage::Normalize.rank::<Input>() < Stage::Keep.rank::<Input>());
    }
}
