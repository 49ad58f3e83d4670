use processors::prelude::*;

struct Order {
    id: String,
}

/// Cancels an order.
#[tool]
async fn cancel(order: Order) -> String {
    order.id
}

fn main() {}
