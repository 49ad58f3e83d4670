use processors::prelude::*;

#[derive(serde::Deserialize)]
struct Refund {
    order_id: String,
}

/// Refunds an order.
#[tool]
async fn refund(#[args] refund: Refund) -> String {
    refund.order_id
}

fn main() {}
