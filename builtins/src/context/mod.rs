//! What the model is told besides the conversation: instructions (`system_prompt`), the working
//! directory and date (`environment`), a folder's files (`directory_context`), the editor's state
//! (`editor_context`).

pub mod directory_context;
pub mod editor_context;
pub mod environment;
pub mod system_prompt;
