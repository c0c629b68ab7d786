//! The merged call tree a flame graph draws: root first, one node per distinct
//! (parent, function, inlined) path, laid out in pre-order so a renderer can skip a
//! whole subtree that is off screen. Children are in alphabetical order (as
//! flamegraph.pl draws them, so two profiles line up), a node's own value to the right
//! of its children.
//!
//! Built without hashing: stacks become sequences of name ranks, sorted, and each new
//! stack only opens the nodes past its common prefix with the previous one.

use super::{Filter, Index};
use std::rc::Rc;

pub use pprof_scan::FlameNode;

/// A flame graph's tree, nodes in pre-order (index 0 is the root).
#[derive(Clone, Debug, PartialEq)]
pub struct FlameTree {
    /// Nodes, pre-order; children sorted by name.
    pub nodes: Vec<FlameNode>,
    /// Function names, by [`FlameNode::name`].
    pub names: Vec<String>,
    /// The profile is a diff (has negative values).
    pub diff: bool,
}

impl FlameTree {
    /// Display name of a node ("root" for the root).
    pub fn name(&self, i: usize) -> &str {
        let n = self.nodes[i].name;
        self.names.get(n as usize).map_or("root", String::as_str)
    }

    /// Net value of the samples whose leaf is node `i`: its value less its children's.
    pub fn self_value(&self, i: usize) -> i64 {
        let (mut v, end) = (self.nodes[i].value, self.nodes[i].end as usize);
        let mut c = i + 1;
        while c < end {
            v = v.wrapping_sub(self.nodes[c].value);
            c = (self.nodes[c].end as usize).max(c + 1);
        }
        v
    }

    /// Index of the parent of node `i` (None for the root).
    pub fn parent(&self, i: usize) -> Option<usize> {
        let p = self.path(i);
        p.len().checked_sub(2).map(|k| p[k])
    }

    /// The path from the root to node `i` (inclusive), for breadcrumbs (drawn on every
    /// hover). Found from the root down, each child's subtree before the one holding
    /// `i` skipped whole: the siblings on the way are visited, not every node before
    /// `i` (a scan back to the parent crossed up to the whole tree, milliseconds per
    /// hover on a million-node graph). Just `[i]` for a node not in the tree.
    pub fn path(&self, i: usize) -> Vec<usize> {
        if i >= self.nodes.len() {
            return vec![i];
        }
        let mut p = vec![0];
        self.descend(i, &mut |c, _| p.push(c));
        p
    }

    /// Left edge of node `i`, in value units from the root's (see
    /// [`FlameNode::width`]): the widths of the siblings before it and before each of
    /// its ancestors.
    pub fn x(&self, i: usize) -> i64 {
        let mut x = 0;
        self.descend(i, &mut |_, at| x = at);
        x
    }

    /// Goes from the root down to node `i`, `on` told each node on the way below the
    /// root and its left edge.
    fn descend(&self, i: usize, on: &mut dyn FnMut(usize, i64)) {
        let (mut cur, mut x) = (0, 0i64);
        while cur != i && i < self.nodes.len() {
            // The child of `cur` whose subtree holds `i`.
            let mut c = cur + 1;
            while c < i && self.nodes[c].end as usize <= i {
                x = x.wrapping_add(self.nodes[c].width);
                c = (self.nodes[c].end as usize).max(c + 1);
            }
            on(c, x);
            cur = c;
        }
    }

    /// Pre-order index of the node reached by following `names` (function names) from
    /// the root, taking the widest match at each level: how a zoom survives a change of
    /// sample type or filter.
    pub fn find_path(&self, names: &[&str]) -> Option<usize> {
        let mut cur = 0usize;
        for want in names {
            let mut c = cur + 1;
            let mut found = None;
            while c < self.nodes[cur].end as usize {
                if self.name(c) == *want {
                    found = Some(c);
                    break;
                }
                c = self.nodes[c].end as usize;
            }
            cur = found?;
        }
        Some(cur)
    }
}

/// Left edges (in value units) along a pre-order walk of a flame tree that may skip
/// subtrees, as a flame graph's drawing and hit test walk it: the tree does not keep
/// them (see [`FlameNode::width`]). Told every node the walk reaches, in order.
pub struct Edges(Vec<i64>);

impl Default for Edges {
    /// At the root.
    fn default() -> Self {
        Edges(vec![0])
    }
}

impl Edges {
    /// The left edge of `n`, the walk's next node: the first child of the one before,
    /// its next sibling, or a node past its subtree (skipped).
    pub fn of(&mut self, n: &FlameNode) -> i64 {
        let d = n.depth as usize;
        // (A walk goes down one level at a time.)
        debug_assert!(d < self.0.len(), "a walk that skipped a level");
        self.0.truncate(d + 1);
        let x = self.0.get(d).copied().unwrap_or(0);
        if let Some(next) = self.0.get_mut(d) {
            *next = x.wrapping_add(n.width);
        }
        // Its children start where it does.
        self.0.push(x);
        x
    }
}

impl Index<'_> {
    /// The flame tree for `sample_index` after `filter`. Its values are exact when
    /// [`Index::total`] is `Ok` for this sample index: check that first.
    pub fn flame(&self, sample_index: usize, filter: &Filter) -> FlameTree {
        self.flame_build(sample_index, filter).finish(self)
    }

    /// [`Index::flame`] built a slice at a time ([`FlameBuild::step`]): the samples
    /// read, their stacks sorted and the tree built in the steps (here only the filter
    /// is applied and the names ranked). Once the index has its samples in order
    /// ([`Index::sort_stacks`]) there is no sort: the samples are taken from that order
    /// here, each with only its frames past what it shares with the one taken before
    /// (one sequential pass, a fraction of the build).
    pub fn flame_build(&self, sample_index: usize, filter: &Filter) -> FlameBuild {
        let kept = self.kept(filter);
        // Each kept sample as a root-first sequence of (rank << 1 | inlined).
        let mut seq = self.symbols();
        let mut spans: Vec<(u32, u32, i64)> = Vec::new();
        let mut diff = false;
        let (by_rank, rank) = self.ranks();
        let names = self.names.clone();
        let order = self.order.borrow();
        let Some(o) = order.as_deref() else {
            let read = Reading {
                sample_index,
                kept,
                next: 0,
                rank,
                by_rank,
                seq,
                spans,
            };
            return FlameBuild {
                stage: Stage::Read(read),
                names,
                diff,
            };
        };
        // The values first, in sample order: read in stack order, each was a cache
        // miss or two (most of the build on half a million samples).
        let vals: Vec<i64> = (0..kept.len())
            .map(|i| {
                if kept[i] {
                    self.value(i, sample_index)
                } else {
                    0
                }
            })
            .collect();
        let mut lcps = Vec::new();
        // The stack of the entry at hand, rebuilt from the tails in turn.
        let mut cur = pprof_scan::Symbols::like(&o.tails);
        let mut at = 0;
        // The common prefix with the last sample taken: the least since it.
        let mut lcp = 0;
        for &(n, l, i) in &o.entries {
            cur.truncate(l as usize);
            let next = at + n as usize;
            cur.extend_from(&o.tails, at..next);
            at = next;
            lcp = lcp.min(l);
            let v = vals.get(i as usize).copied().unwrap_or(0);
            if v != 0 {
                diff |= v < 0;
                let start = seq.len() as u32;
                seq.extend_from(&cur, lcp as usize..cur.len());
                spans.push((start, seq.len() as u32 - start, v));
                lcps.push(lcp);
                lcp = u32::MAX;
            }
        }
        FlameBuild {
            stage: Stage::Build(pprof_scan::FlameNodes::sorted(seq, spans, lcps, by_rank)),
            names,
            diff,
        }
    }

    /// Room for this index's symbols (`rank << 1 | inlined`), as narrow as its number of
    /// names allows.
    fn symbols(&self) -> pprof_scan::Symbols {
        pprof_scan::Symbols::below(2 * self.names.len())
    }

    /// Every function-level node in alphabetical order (by rank), and each one's rank.
    fn ranks(&self) -> (Vec<u32>, Vec<u32>) {
        let by_rank =
            super::sorted_order(self.names.len(), &|a, b| self.names[a].cmp(&self.names[b]));
        let mut rank = vec![0u32; by_rank.len()];
        for (r, &n) in by_rank.iter().enumerate() {
            rank[n as usize] = r as u32;
        }
        (by_rank, rank)
    }

    /// Sorts every sample by stack as flame trees order them, a slice at a time
    /// ([`StackSorting::step`]); once [`StackSorting::finish`] has given the order to
    /// this index, every flame tree it builds skips the sort. The viewer runs this
    /// after its first paint: on a Go heap profile (half a million distinct deep
    /// stacks) the sort was most of a sample-type switch or focus change.
    pub fn sort_stacks(&self) -> StackSorting {
        let n = self.sample_count();
        StackSorting {
            rank: self.ranks().1,
            seq: self.symbols(),
            spans: Vec::with_capacity(n),
            sort: None,
        }
    }
}

/// Every sample of an index in the order its flame trees are built (by stack, see
/// [`pprof_scan::StackSort`]), front-coded: each entry's stack is the one before cut to
/// their common prefix, then its own tail. The tails together are the profile's whole
/// call tree (2 million frames where the stacks have 14 million, on a Go heap profile
/// of half a million samples), read in one sequential pass per tree where reading
/// each sample's own frames in stack order was a cache miss per sample.
#[derive(Debug)]
pub(crate) struct StackOrder {
    /// Per entry `(n, lcp, sample)`: its stack is the one before cut to `lcp` frames,
    /// then its next `n` frames of `tails` (as `rank << 1 | inlined`).
    entries: Vec<(u32, u32, i64)>,
    tails: pprof_scan::Symbols,
}

/// An index's samples being sorted by stack ([`Index::sort_stacks`]).
pub struct StackSorting {
    rank: Vec<u32>,
    seq: pprof_scan::Symbols,
    spans: Vec<(u32, u32, i64)>,
    sort: Option<pprof_scan::StackSort>,
}

impl StackSorting {
    /// Reads the next `n` samples of `ix` (the index this sort was started from), or
    /// sorts about `n` of them once all are read: true when sorted.
    pub fn step(&mut self, ix: &Index<'_>, n: usize) -> bool {
        if let Some(sort) = &mut self.sort {
            return sort.step(n);
        }
        let next = self.spans.len();
        if next == 0 {
            self.seq.reserve(ix.frame_count());
        }
        let end = ix.sample_count().min(next.saturating_add(n));
        for i in next..end {
            ix.push_stack(i, &self.rank, &mut self.seq, &mut self.spans, i as i64);
        }
        if end == ix.sample_count() {
            let (seq, spans) = (
                std::mem::take(&mut self.seq),
                std::mem::take(&mut self.spans),
            );
            self.sort = Some(pprof_scan::StackSort::new(seq, spans));
        }
        false
    }

    /// Finishes the sort and gives the order to `ix` (the index it was started from).
    pub fn finish(mut self, ix: &Index<'_>) {
        while !self.step(ix, usize::MAX) {}
        let (tails, entries) = self.sort.map(|s| s.finish()).unwrap_or_default();
        if entries.len() != ix.sample_count() {
            return;
        }
        let order = StackOrder { entries, tails };
        *ix.order.borrow_mut() = Some(Rc::new(order));
    }
}

/// A flame tree being built, a slice of samples at a time, so that a caller with an
/// event loop to serve (the viewer, loading a large profile) can let it run between
/// slices: [`Index::flame`] is this builder run to its end.
pub struct FlameBuild {
    stage: Stage,
    names: Vec<String>,
    diff: bool,
}

/// Where a [`FlameBuild`] is.
enum Stage {
    /// Reading the samples' stacks (no sorted order to take them from yet).
    Read(Reading),
    /// Sorting the stacks, then adding them to the tree.
    Build(pprof_scan::FlameNodes),
}

/// The samples read so far: read in one go, the stacks of 550k samples were a 40 ms
/// task of their own in the viewer's load. (`seq` grows by doubling, so one slice may
/// copy it: reserving its whole size up front raised the page's peak, as a block that
/// large cannot reuse the decoder's freed chunks.)
struct Reading {
    sample_index: usize,
    kept: Rc<[bool]>,
    /// The next sample to read.
    next: usize,
    rank: Vec<u32>,
    by_rank: Vec<u32>,
    seq: pprof_scan::Symbols,
    spans: Vec<(u32, u32, i64)>,
}

impl FlameBuild {
    /// Reads, sorts or adds the next `n` samples or stacks, about, of `ix` (the index
    /// it was started from): true when the tree is complete.
    pub fn step(&mut self, ix: &Index<'_>, n: usize) -> bool {
        match &mut self.stage {
            Stage::Build(nodes) => nodes.step(n),
            Stage::Read(r) => {
                if r.read(ix, n, &mut self.diff) {
                    self.stage = Stage::Build(r.nodes());
                }
                false
            }
        }
    }

    /// The tree, with what is left read and built in one go (`ix`: the index this
    /// build was started from).
    pub fn finish(mut self, ix: &Index<'_>) -> FlameTree {
        let nodes = match self.stage {
            Stage::Build(nodes) => nodes,
            Stage::Read(mut r) => {
                r.read(ix, usize::MAX, &mut self.diff);
                r.nodes()
            }
        };
        FlameTree {
            nodes: nodes.finish(),
            names: self.names,
            diff: self.diff,
        }
    }
}

impl Reading {
    /// Reads the next `n` samples of `ix`: true when all are read.
    fn read(&mut self, ix: &Index<'_>, n: usize, diff: &mut bool) -> bool {
        debug_assert_eq!(ix.sample_count(), self.kept.len(), "not this build's index");
        let end = self.kept.len().min(self.next.saturating_add(n));
        for i in self.next..end {
            let v = ix.value(i, self.sample_index);
            if v == 0 || !self.kept[i] {
                continue;
            }
            *diff |= v < 0;
            ix.push_stack(i, &self.rank, &mut self.seq, &mut self.spans, v);
        }
        self.next = end;
        end == self.kept.len()
    }

    /// The tree builder for the samples read.
    fn nodes(&mut self) -> pprof_scan::FlameNodes {
        pprof_scan::FlameNodes::new(
            std::mem::take(&mut self.seq),
            std::mem::take(&mut self.spans),
            std::mem::take(&mut self.by_rank),
        )
    }
}

// The helpers below are called once per stack and not inlined: V8 runs a wasm function
// in its baseline tier until it is *called* again after being optimized, so the work
// of a long loop must sit in a function the loop calls (see the decoder's
// `Groups::add`).

impl Index<'_> {
    /// Appends sample `i`'s frames to `seq`, root first, as `rank << 1 | inlined`, and
    /// their span with `x` (its value, or its index) to `spans`.
    #[inline(never)]
    fn push_stack(
        &self,
        i: usize,
        rank: &[u32],
        seq: &mut pprof_scan::Symbols,
        spans: &mut Vec<(u32, u32, i64)>,
        x: i64,
    ) {
        let start = seq.len() as u32;
        for f in self.root_first(i) {
            seq.push(rank[f.node as usize] << 1 | u32::from(f.inlined));
        }
        spans.push((start, seq.len() as u32 - start, x));
    }
}
