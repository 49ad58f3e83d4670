//! The tuple lengths a processor list may have, for the impls written once per length.

/// Calls `$gen!(0 A, 1 B, …)` for each tuple length a processor list may have (1 to 16).
macro_rules! for_each_tuple {
    ($gen:ident) => {
        $gen!(0 A);
        $gen!(0 A, 1 B);
        $gen!(0 A, 1 B, 2 C);
        $gen!(0 A, 1 B, 2 C, 3 D);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O);
        $gen!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L, 12 M, 13 N, 14 O, 15 P);
    };
}

pub(crate) use for_each_tuple;
