//! The top table: `go tool pprof -top -nodefraction=0` at function granularity.

use super::index::FxMap;
use super::{Filter, Index, ValueOverflow};
use crate::profile::Profile;

/// pprof's default `-edgefraction`: edges below this share of the flat sum are trimmed
/// from the graph before `-top` labels inlined functions.
const EDGE_FRACTION: f64 = 0.001;

/// How a function appears under its callers, as pprof labels it in `-top`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inline {
    /// Called normally (or a root).
    No,
    /// Only ever inlined into its callers: pprof's `(inline)`.
    Full,
    /// Inlined into some callers, called from others: `(partial-inline)`.
    Partial,
}

/// One function of the top table.
#[derive(Clone, Debug, PartialEq)]
pub struct TopRow {
    /// Function name (pprof's printable name, without the inline label).
    pub name: String,
    /// Node id in the [`Index`] (for linking to flame and source views).
    pub node: u32,
    /// Value of samples whose leaf frame is this function.
    pub flat: i64,
    /// Value of samples with this function anywhere on the stack (once per sample).
    pub cum: i64,
    /// `flat / total × 100`.
    pub flat_pct: f64,
    /// Running sum of `flat_pct` down the table.
    pub sum_pct: f64,
    /// `cum / total × 100`.
    pub cum_pct: f64,
    /// pprof's inline label.
    pub inline: Inline,
}

/// The top table for one sample index.
#[derive(Clone, Debug, PartialEq)]
pub struct TopTable {
    /// Rows, sorted as pprof: |flat| descending, then name, then |cum| descending.
    pub rows: Vec<TopRow>,
    /// The total percentages are relative to (see [`Index::total`]).
    pub total: i64,
    /// Sum of the values kept by the filter.
    pub shown: i64,
}

/// The top table of `profile` for `sample_index` after `filter`: what `heapsnap top`
/// prints. Builds an [`Index`]; callers with several views should build one and call
/// [`Index::top`]. An error when the values overflow 64-bit sums ([`Index::total`]).
pub fn top(
    profile: &Profile,
    sample_index: usize,
    filter: &Filter,
) -> Result<TopTable, ValueOverflow> {
    Index::new(profile).top(sample_index, filter)
}

impl Index<'_> {
    /// See [`top`].
    pub fn top(&self, sample_index: usize, filter: &Filter) -> Result<TopTable, ValueOverflow> {
        // First: once the total fits, every sum below is exact (see `Index::total`).
        let total = self.total(sample_index)?;
        let n = self.node_count();
        let (mut flat, mut cum) = (vec![0i64; n], vec![0i64; n]);
        let mut seen = vec![u32::MAX; n];
        // pprof labels a function by the inline flags of its incoming edges (an edge is
        // inline when every occurrence is). Only functions that are inlined somewhere
        // need the per-edge map; for the others every incoming edge is a plain call.
        let can_inline = self.inlinable();
        // Per edge into an inlinable function: (all occurrences inline, weight). pprof
        // drops edges lighter than `-edgefraction` (0.001 of the total) before it labels,
        // so a rare call path does not turn `(inline)` into `(partial-inline)` or back.
        // Edge key → index into `edge_data`.
        let mut edges: FxMap<u64, u64> = FxMap::default();
        let mut edge_data: Vec<(u64, bool, i64)> = Vec::new();
        let mut sample_edges: Vec<u64> = Vec::new();
        let mut called = vec![false; n];
        let kept = self.kept(filter);
        let mut shown = 0i64;
        for (i, &keep) in kept.iter().enumerate() {
            let v = self.value(i, sample_index);
            if v == 0 || !keep {
                continue;
            }
            shown = shown.wrapping_add(v);
            let mut parent: Option<u32> = None;
            sample_edges.clear();
            for f in self.root_first(i) {
                let node = f.node;
                if seen[node as usize] != i as u32 {
                    seen[node as usize] = i as u32;
                    cum[node as usize] = cum[node as usize].wrapping_add(v);
                }
                if let Some(p) = parent.filter(|&p| p != node) {
                    if can_inline[node as usize] {
                        let key = u64::from(p) << 32 | u64::from(node);
                        let at = *edges.entry(key).or_insert_with(|| {
                            edge_data.push((key, true, 0));
                            edge_data.len() as u64 - 1
                        });
                        let e = &mut edge_data[at as usize];
                        e.1 &= f.inlined;
                        // Weight once per sample, as pprof (recursion repeats edges).
                        if !sample_edges.contains(&key) {
                            sample_edges.push(key);
                            e.2 = e.2.wrapping_add(v);
                        }
                    } else {
                        called[node as usize] = true;
                    }
                }
                parent = Some(node);
            }
            if let Some(leaf) = parent {
                flat[leaf as usize] = flat[leaf as usize].wrapping_add(v);
            }
        }
        // pprof's cutoff is of the graph's flat sum (signed: a diff's net change), not
        // of the report total.
        let flat_sum = flat.iter().fold(0i64, |a, &v| a.wrapping_add(v));
        let edge_cutoff = ((flat_sum as f64 * EDGE_FRACTION) as i64).wrapping_abs();
        let mut inline_in: Vec<(bool, bool)> = called.iter().map(|&c| (false, c)).collect();
        for &(key, inl, weight) in &edge_data {
            if weight.wrapping_abs() < edge_cutoff {
                continue;
            }
            let e = &mut inline_in[(key & 0xffff_ffff) as usize];
            if inl {
                e.0 = true
            } else {
                e.1 = true
            }
        }
        let pct = |v: i64| {
            if total == 0 {
                0.0
            } else {
                v as f64 / total as f64 * 100.0
            }
        };
        let rows: Vec<TopRow> = (0..n)
            .filter(|&k| flat[k] != 0 || cum[k] != 0)
            .map(|k| TopRow {
                name: self.names[k].clone(),
                node: k as u32,
                flat: flat[k],
                cum: cum[k],
                flat_pct: pct(flat[k]),
                sum_pct: 0.0,
                cum_pct: pct(cum[k]),
                inline: match inline_in[k] {
                    (true, false) => Inline::Full,
                    (true, true) => Inline::Partial,
                    _ => Inline::No,
                },
            })
            .collect();
        let order = super::sorted_order(rows.len(), &|a, b| {
            let (a, b) = (&rows[a], &rows[b]);
            b.flat
                .wrapping_abs()
                .cmp(&a.flat.wrapping_abs())
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| b.cum.wrapping_abs().cmp(&a.cum.wrapping_abs()))
        });
        let mut rows = super::permute(rows, &order);
        let mut sum = 0i64;
        for r in &mut rows {
            sum = sum.wrapping_add(r.flat);
            r.sum_pct = pct(sum);
        }
        Ok(TopTable { rows, total, shown })
    }
}
