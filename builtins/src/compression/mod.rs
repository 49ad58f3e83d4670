//! A long conversation compressed before the model sees it (`chat_compression`).

pub mod chat_compression;
