//! Limits on a run: tokens (`token_limiter`), cost (`cost_guard`), repeated calls and answers
//! (`loop_detection`), and a final answer on the last step (`ensure_final_response`).

pub mod cost_guard;
pub mod ensure_final_response;
pub mod loop_detection;
pub mod token_limiter;
