use processors::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Refund {
    order_id: String,
}

/// Refunds an order.
#[tool]
async fn refund(#[args] refund: Refund, amount: u64) -> String {
    format!("{} {amount}", refund.order_id)
}

fn main() {}
