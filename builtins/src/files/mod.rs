//! Files named in the input: `@path` references expanded into their contents (`at_file`).

pub mod at_file;
