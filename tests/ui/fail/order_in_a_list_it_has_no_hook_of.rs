use processors::builtins::order::Ordered;
use processors::builtins::BatchParts;
use processors::builtins::UnicodeNormalizer;

fn main() {
    let _ = Ordered::input()
        .with(UnicodeNormalizer::new())
        .with(BatchParts::builder().build().unwrap());
}
