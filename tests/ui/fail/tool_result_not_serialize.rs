use processors::prelude::*;

struct Receipt {
    total: u64,
}

/// Buys it.
#[tool]
async fn buy(item: String) -> Result<Receipt, String> {
    Ok(Receipt { total: item.len() as u64 })
}

fn main() {}
