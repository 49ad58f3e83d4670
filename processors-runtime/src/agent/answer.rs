//! The answer as a client shows it, kept from the streamed chunks.

use crate::chunk::{Chunk, ChunkKind, FinishReason};
use std::ops::Range;

/// The answer's text as a client shows it, built from the chunks of
/// [`Agent::stream`](super::Agent::stream): text deltas are appended, and an attempt that is
/// tried again (its `step-finish` has reason `retry`: a processor rejected it, or the
/// provider's stream failed and an error processor asked for another call) has its text
/// taken back, so the answer shows once however many attempts it took. It then equals the
/// result's `text` (unless an output-result processor changed the answer after the stream).
///
/// ```
/// # futures::executor::block_on(async {
/// use futures::StreamExt;
/// use processors_runtime::prelude::*;
///
/// // The first answer is rejected and asked for again.
/// struct NoShouting;
/// impl Processor for NoShouting {
///     type State = ();
///     const HOOKS: Hooks = Hooks::OUTPUT_STEP;
///     fn id(&self) -> &str {
///         "no-shouting"
///     }
///     async fn process_output_step(
///         &self,
///         args: OutputStepArgs<'_, ()>,
///     ) -> Result<OutputOutcome, ProcessorError> {
///         if args.text.ends_with('!') {
///             return Err(Abort::new().reason("no shouting").retry(true).into());
///         }
///         Ok(OutputOutcome::Unchanged)
///     }
/// }
/// impl OutputProcessor for NoShouting {}
///
/// let agent = Agent::builder()
///     .model(ScriptedModel::new([Turn::deltas(["Hi", "!"]), Turn::deltas(["Hello", "."])]))
///     .output(NoShouting)
///     .max_processor_retries(1)
///     .build()
///     .unwrap();
/// let mut stream = agent.stream("hi");
/// let (mut answer, mut naive) = (AnswerText::new(), String::new());
/// while let Some(chunk) = stream.next().await {
///     naive.push_str(chunk.text_delta().unwrap_or_default());
///     match answer.apply(&chunk) {
///         TextChange::Appended(added) => print!("{}", &answer.as_str()[added]),
///         TextChange::TakenBack { bytes } => { /* erase the last `bytes` bytes shown */ }
///         TextChange::None => {}
///     }
/// }
/// assert_eq!(naive, "Hi!Hello.");
/// assert_eq!(answer.as_str(), "Hello.");
/// assert_eq!(stream.finish().await.unwrap().text, "Hello.");
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerText {
    shown: String,
    /// Where the current attempt's text starts.
    step_start: usize,
}

/// What a chunk changed in an [`AnswerText`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextChange {
    /// Nothing.
    None,
    /// Text was appended: these bytes of [`AnswerText::as_str`].
    Appended(Range<usize>),
    /// An attempt was tried again: its text, the last `bytes` bytes shown, is gone.
    TakenBack {
        /// How many bytes were taken from the end.
        bytes: usize,
    },
}

impl AnswerText {
    /// No text yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one chunk of the stream.
    pub fn apply(&mut self, chunk: &Chunk) -> TextChange {
        match &chunk.kind {
            ChunkKind::TextDelta { text, .. } if !text.is_empty() => {
                let from = self.shown.len();
                self.shown.push_str(text);
                TextChange::Appended(from..self.shown.len())
            }
            ChunkKind::StepStart { .. } => {
                self.step_start = self.shown.len();
                TextChange::None
            }
            ChunkKind::StepFinish {
                finish_reason: FinishReason::Retry,
                ..
            } if self.shown.len() > self.step_start => {
                let bytes = self.shown.len() - self.step_start;
                self.shown.truncate(self.step_start);
                TextChange::TakenBack { bytes }
            }
            _ => TextChange::None,
        }
    }

    /// The text shown.
    pub fn as_str(&self) -> &str {
        &self.shown
    }

    /// The text shown, owned.
    pub fn into_string(self) -> String {
        self.shown
    }
}
