pub use processors_runtime::*;
