//! Guards that need no model: patterns and credentials (`regex_filter`), reversible anonymisation
//! (`anonymizer`), text normalisation (`unicode_normalizer`), and answers that repeat the system
//! prompt (`system_prompt_scrubber`). The guards that ask a judge are the
//! [`detector`](crate::detector)s.

pub mod anonymizer;
pub mod regex_filter;
pub mod system_prompt_scrubber;
pub mod unicode_normalizer;
