use processors::prelude::*;

struct Shop;

impl Shop {
    /// Opens the shop.
    #[tool]
    async fn open(&self) -> bool {
        true
    }
}

fn main() {}
