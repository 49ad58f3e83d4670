pub use processors_providers as providers;
pub use processors_runtime::*;
