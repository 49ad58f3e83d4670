//! The options every judging detector has (judge, threshold, stream window, instructions),
//! validated in one place, and the setters its builder shares.

use super::Judge;
use crate::config::{ConfigError, Sites};
use std::fmt;
use std::num::NonZeroUsize;

/// The options every judging detector has, set by the builders' shared setters and checked
/// by [`DetectorOptions::check`].
#[derive(Clone)]
pub(crate) struct DetectorOptions {
    pub judge: Judge,
    /// A category (or value) counts at this score (0 to 1).
    pub threshold: f64,
    /// On the stream, how many text deltas are judged together.
    pub window: NonZeroUsize,
    /// The user's guidance for the judge.
    pub instructions: Option<String>,
    /// Where the detector acts.
    pub sites: Sites,
    /// Whether a flagged verdict's reason gives the flagged categories' scores.
    pub include_scores: bool,
}

impl fmt::Debug for DetectorOptions {
    /// The instructions are not shown (they may hold what the product keeps to itself), only
    /// whether there are any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetectorOptions")
            .field("judge", &self.judge)
            .field("threshold", &self.threshold)
            .field("window", &self.window)
            .field("sites", &self.sites)
            .field("has_instructions", &self.instructions.is_some())
            .field("include_scores", &self.include_scores)
            .finish()
    }
}

/// The default stream window of the detectors: 10 deltas.
pub(crate) const DEFAULT_WINDOW: NonZeroUsize = NonZeroUsize::new(10).unwrap();

impl DetectorOptions {
    /// Options with `judge`, `threshold`, a window of 10 deltas and the detector's `sites`.
    pub fn new(judge: Judge, threshold: f64, sites: Sites) -> Self {
        DetectorOptions {
            judge,
            threshold,
            window: DEFAULT_WINDOW,
            instructions: None,
            sites,
            include_scores: false,
        }
    }

    /// Checks the options of a detector whose sites are `offered`: a threshold from 0 to 1,
    /// and at least one of the offered sites on.
    pub fn check(&self, offered: Sites) -> Result<(), ConfigError> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(ConfigError::OutOfRange {
                option: "threshold",
                value: self.threshold.to_string(),
                expected: "use a number from 0 to 1 (a category is flagged when its score is at least the threshold)",
            });
        }
        self.sites.check(offered)?;
        Ok(())
    }

    /// The instructions as a paragraph of the judge's prompt (`Guidance: …`), or nothing.
    pub fn guidance(&self) -> String {
        self.instructions
            .as_ref()
            .map(|i| format!("\nGuidance: {i}\n"))
            .unwrap_or_default()
    }
}

/// The setters of [`DetectorOptions`] on a detector's builder (a field `options`): the
/// threshold and the instructions, and, for the detectors that judge the stream, the window
/// and the sites. One definition, so that every detector names and documents them alike.
macro_rules! detector_setters {
    (@common $threshold:literal) => {
        /// A category counts when the judge's score is at least `threshold`, from 0 to 1
        #[doc = concat!("(default ", $threshold, "); `build()` refuses any other number.")]
        pub fn threshold(mut self, threshold: f64) -> Self {
            self.options.threshold = threshold;
            self
        }

        /// Adds your own guidance to the judge's prompt (what counts in your product).
        pub fn instructions(mut self, text: impl Into<String>) -> Self {
            self.options.instructions = Some(text.into());
            self
        }
    };
    (@scores) => {
        /// Whether the reason of a flagged verdict (the trip wire's, the warning's, the retry's
        /// feedback) gives each flagged category's score:
        /// `the input was flagged for hate (scores: hate 0.91)` (default: no; the scores are in
        /// the metadata either way).
        pub fn include_scores(mut self, yes: bool) -> Self {
            self.options.include_scores = yes;
            self
        }
    };
    (threshold = $threshold:literal) => {
        $crate::detector::options::detector_setters!(@common $threshold);
    };
    (threshold = $threshold:literal, scores) => {
        $crate::detector::options::detector_setters!(@common $threshold);
        $crate::detector::options::detector_setters!(@scores);
    };
    (threshold = $threshold:literal, sites = $sites:literal, scores) => {
        $crate::detector::options::detector_setters!(threshold = $threshold, sites = $sites);
        $crate::detector::options::detector_setters!(@scores);
    };
    (threshold = $threshold:literal, sites = $sites:literal) => {
        $crate::detector::options::detector_setters!(@common $threshold);

        /// On the stream, how many text deltas are held back and judged together (default
        /// 10); the end of a text block is judged whatever the count.
        pub fn chunk_window(mut self, deltas: std::num::NonZeroUsize) -> Self {
            self.options.window = deltas;
            self
        }

        /// Where the detector acts
        #[doc = concat!("(default ", $sites, "); `build()` refuses a set with none of them.")]
        pub fn sites(mut self, sites: $crate::config::Sites) -> Self {
            self.options.sites = sites;
            self
        }
    };
}
pub(crate) use detector_setters;
