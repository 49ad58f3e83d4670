//! The conversation's memory: which remembered messages come back (`memory_input_filter`,
//! `history_window`, `semantic_recall`), memory brought in from elsewhere (`memory_import`), notes
//! the model keeps (`working_memory`), and a record of the chat (`chat_recording`).

pub mod chat_recording;
pub mod history_window;
pub mod memory_import;
pub mod memory_input_filter;
pub mod semantic_recall;
pub mod working_memory;
