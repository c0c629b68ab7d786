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
mod growth;
mod index;
mod source;
mod top;
mod units;

pub use compact::{
    decode_compact, decode_compact_limited, decode_compact_sized, decode_compact_with_limit,
    CompactDecoder, Finishing,
};
pub use flame::{Edges, FlameBuild, FlameNode, FlameTree, StackSorting};
pub use growth::{flat_of, growth, GrowthError};
pub use index::{Analysed, Filter, FilterError, Frame, Index, IndexBuild, Pattern, ValueOverflow};
pub use source::{SourceLine, SourceTable};
pub use top::{top, Inline, TopRow, TopTable};
pub use units::{format_percent, format_value, output_unit, percentage, scale, scaled_label};

pub(crate) use crate::order::{permute, sorted_order};

#[cfg(test)]
mod tests;
