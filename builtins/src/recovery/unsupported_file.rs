//! [`UnsupportedFileHandler`]: a file the model does not accept is replaced by a note, and the
//! model called again.

use super::{StepAttempts, error_text, mentions_any};
use processors_macros::processor;
use processors_runtime::message::{MessageList, Part};
use processors_runtime::model::ApiError;
use processors_runtime::processor::ApiErrorAction;
use processors_runtime::processor::extract::StepNumber;

/// What providers say when they refuse a file's type (OpenAI's, Anthropic's, and the servers
/// that copy them), compared as [`error_text`] gives them.
const REFUSALS: &[&str] = &[
    "invalid mime type",
    "unsupported mime type",
    "unsupported file type",
    "file type is not supported",
    "file type you uploaded is not supported",
    "unsupported image",
    "invalid image",
    "image format",
    "does not support file",
    "does not support image",
    "does not support pdf",
    "only image types are supported",
    "media_type: input should be",
    "media_type: input must be",
];

/// Replaces the files a provider refuses (their type, or files at all) with a note, and asks
/// for the call again.
///
/// It acts on a `400` whose message or body says the type of a file is not accepted:
/// OpenAI's `Invalid MIME type. Only image types are supported.` (or `invalid_image_format`),
/// Anthropic's `…media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or
/// 'image/webp'`, and the like. Which files go: when the error lists the types the model takes
/// (after "should be", "supported:" and the like, or "only image types"), the files of other
/// types; when it names types with no such list, the files of those types; otherwise every
/// file. Each
/// becomes a text part, `[a file (application/pdf) was left out: the model does not accept
/// files of this type]`, in the conversation itself, so later calls and memory do not send it
/// again. Once per step; an error that names no file it can leave out is not handled.
///
/// ```
/// # futures::executor::block_on(async {
/// use processors::builtins::recovery::UnsupportedFileHandler;
/// use processors::prelude::*;
///
/// let refusal = ApiError::new(400, "Invalid MIME type. Only image types are supported.");
/// let model = ScriptedModel::new([Turn::error(refusal), Turn::text("It is a chart.")]);
/// let agent = Agent::builder()
///     .model(model.clone())
///     .error(UnsupportedFileHandler::new())
///     .build()
///     .unwrap();
/// let mut question = Message::user("What are these?");
/// question.content.parts.push(Part::File { mime_type: "image/png".into(), data: "AAAA".into() });
/// question.content.parts.push(Part::File { mime_type: "application/pdf".into(), data: "JVBE".into() });
/// let result = agent.generate(vec![question]).await.unwrap();
/// assert_eq!(result.text, "It is a chart.");
/// let parts = &model.requests()[1].prompt[0].content.parts;
/// assert!(matches!(&parts[1], Part::File { mime_type, .. } if mime_type == "image/png"));
/// assert!(matches!(&parts[2], Part::Text { text } if text.contains("(application/pdf) was left out")));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct UnsupportedFileHandler;

/// The per-request state of an [`UnsupportedFileHandler`]: its attempts in the step.
#[derive(Debug, Default)]
pub struct UnsupportedFileHandlerState {
    attempts: StepAttempts,
}

/// What an error says of the files' types.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Accepted {
    /// The model takes these media types (and, for `type/*`, any of that type): the error
    /// lists them after words such as "should be" or "supported:".
    Only(Vec<String>),
    /// The model refuses these: the error names them with no list of what it takes.
    Not(Vec<String>),
    /// Nothing said: every file goes.
    Nothing,
}

/// Words after which an error lists the types a model takes.
const TAKES: &[&str] = &[
    "should be",
    "must be",
    "supported:",
    "supported types",
    "supported formats",
    "only supports",
    "one of",
    "allowed",
];

impl Accepted {
    fn of(text: &str) -> Accepted {
        let types = |text: &str| -> Vec<String> {
            text.split(|c: char| {
                c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '[' | ']')
            })
            .map(|w| w.trim_end_matches(['.', ':']))
            .filter(|w| is_media_type(w))
            .map(str::to_owned)
            .collect()
        };
        let list = TAKES.iter().filter_map(|t| text.find(t)).min();
        let mut taken = list.map_or_else(Vec::new, |at| types(&text[at..]));
        if text.contains("only image") {
            taken.push("image/*".into());
        }
        if !taken.is_empty() {
            return Accepted::Only(taken);
        }
        match types(text) {
            refused if refused.is_empty() => Accepted::Nothing,
            refused => Accepted::Not(refused),
        }
    }

    fn accepts(&self, mime_type: &str) -> bool {
        let mime = mime_type.to_lowercase();
        let named = |types: &[String]| {
            types.iter().any(|t| match t.strip_suffix("/*") {
                Some(kind) => mime.split('/').next() == Some(kind),
                None => *t == mime,
            })
        };
        match self {
            Accepted::Nothing => false,
            Accepted::Only(types) => named(types),
            Accepted::Not(types) => !named(types),
        }
    }
}

/// Whether `word` reads as a media type (`image/png`, `application/vnd.ms-excel`).
fn is_media_type(word: &str) -> bool {
    const KINDS: &[&str] = &["image", "application", "text", "audio", "video"];
    word.split_once('/').is_some_and(|(kind, sub)| {
        KINDS.contains(&kind)
            && !sub.is_empty()
            && sub
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '*'))
    })
}

impl UnsupportedFileHandler {
    /// The handler.
    pub fn new() -> Self {
        Self
    }

    /// Whether `error` refuses a file's type.
    pub fn is_file_type_error(error: &ApiError) -> bool {
        let text = error_text(error);
        error.status == Some(400)
            && (mentions_any(&text, REFUSALS) || text.contains("invalid_image_format"))
    }
}

#[processor(crate = processors_runtime, id = "unsupported-file-handler")]
impl UnsupportedFileHandler {
    fn process_api_error(
        &self,
        error: &ApiError,
        list: &mut MessageList,
        step: StepNumber,
        state: &mut UnsupportedFileHandlerState,
    ) -> ApiErrorAction {
        if !Self::is_file_type_error(error) || state.attempts.used(step.0) > 0 {
            return ApiErrorAction::Unhandled;
        }
        let accepted = Accepted::of(&error_text(error));
        let mut changed = Vec::new();
        for message in list.all() {
            let mut message = message.clone();
            let mut left_out = false;
            for part in &mut message.content.parts {
                if let Part::File { mime_type, .. } = part
                    && !accepted.accepts(mime_type)
                {
                    let note = format!(
                        "[a file ({mime_type}) was left out: the model does not accept files of this type]"
                    );
                    *part = Part::Text { text: note.into() };
                    left_out = true;
                }
            }
            if left_out {
                changed.push(message);
            }
        }
        if changed.is_empty() {
            return ApiErrorAction::Unhandled;
        }
        state.attempts.add(step.0);
        tracing::debug!(
            files = changed.len(),
            "the provider refused a file's type; retrying with it left out"
        );
        for message in changed {
            list.replace(message);
        }
        ApiErrorAction::Retry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_says_which_types_stay() {
        let anthropic = "messages.0.content.1.image.source.base64.media_type: input should be image/jpeg, image/png, image/gif or image/webp";
        let a = Accepted::of(anthropic);
        assert!(a.accepts("image/png") && a.accepts("IMAGE/WEBP"));
        assert!(!a.accepts("image/bmp") && !a.accepts("application/pdf"));
        let openai = Accepted::of("invalid mime type. only image types are supported.");
        assert!(openai.accepts("image/bmp") && !openai.accepts("application/pdf"));
        assert_eq!(Accepted::of("unsupported file type"), Accepted::Nothing);
        // A type named with no list of what the model takes is the one it refuses.
        let named = Accepted::of("unsupported mime type: application/pdf");
        assert!(named.accepts("image/png") && !named.accepts("application/pdf"));
        let listed = Accepted::of("invalid file type image/bmp. supported: image/png, image/jpeg");
        assert!(listed.accepts("image/png") && !listed.accepts("image/bmp"));
        assert!(is_media_type("application/vnd.ms-excel"));
        assert!(!is_media_type("and/or") && !is_media_type("image/"));
    }
}
