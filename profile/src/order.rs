//! Sorting by index, shared by the model and the analysis.

/// The order that sorts `n` items by `cmp` (indices, unstable). Every sort in the
/// library and the viewer goes through this one non-generic function (see the crate's
/// notes on size).
pub fn sorted_order(n: usize, cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| cmp(a as usize, b as usize));
    order
}

/// Reorders `v` by `order` (a permutation of its indices, from [`sorted_order`]).
pub fn permute<T>(v: Vec<T>, order: &[u32]) -> Vec<T> {
    let mut slots: Vec<Option<T>> = v.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&i| slots.get_mut(i as usize).and_then(Option::take))
        .collect()
}
