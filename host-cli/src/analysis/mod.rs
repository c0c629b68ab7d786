//! Profile analysis: the numbers `go tool pprof` prints (top), the merged call tree a
//! flame graph draws, per-line values for a source view, focus/ignore filters and unit
//! formatting. Plain Rust over the one profile model ([`crate::profile::Profile`]), so
//! `heapsnap top` and the browser viewer show the same figures, and both are tested
//! natively.
//!
//! Granularity is pprof's default, *functions*: a frame is a function name (inlined
//! frames included, each `Line` of a location is one frame); frames without a function
//! name are named after their mapping's file as pprof does (`[binary]`).

mod compact;
mod flame;
mod index;
mod source;
mod top;
mod units;

pub use compact::{decode_compact, decode_compact_with_limit, CompactDecoder};
pub use flame::{FlameNode, FlameTree};
pub use index::{Filter, FilterError, Frame, Index, Pattern};
pub use source::{SourceLine, SourceTable};
pub use top::{top, Inline, TopRow, TopTable};
pub use units::{format_percent, format_value, Unit};

/// The order that sorts `n` items by `cmp` (indices, unstable). Every sort in the
/// analysis and the viewer goes through this one non-generic function: each `sort_by`
/// call site is its own copy of the standard sort, kilobytes of wasm apiece.
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

#[cfg(test)]
mod tests;
