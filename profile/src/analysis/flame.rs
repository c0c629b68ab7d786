//! The merged call tree a flame graph draws: root first, one node per distinct
//! (parent, function, inlined) path, laid out in pre-order so a renderer can skip a
//! whole subtree that is off screen. Children are in alphabetical order (as
//! flamegraph.pl draws them, so two profiles line up), a node's own value to the right
//! of its children.
//!
//! Built without hashing: stacks become sequences of name ranks, sorted, and each new
//! stack only opens the nodes past its common prefix with the previous one.

use super::{Filter, Index};

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
        let mut cur = 0;
        while cur != i {
            // The child of `cur` whose subtree holds `i`.
            let mut c = cur + 1;
            while c < i && self.nodes[c].end as usize <= i {
                c = (self.nodes[c].end as usize).max(c + 1);
            }
            p.push(c);
            cur = c;
        }
        p
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

impl Index<'_> {
    /// The flame tree for `sample_index` after `filter`. Its values are exact when
    /// [`Index::total`] is `Ok` for this sample index: check that first.
    pub fn flame(&self, sample_index: usize, filter: &Filter) -> FlameTree {
        self.flame_build(sample_index, filter).finish()
    }

    /// [`Index::flame`] built a slice at a time ([`FlameBuild::step`]): the samples
    /// are read here (a fraction of the work), the stacks sorted and the tree built
    /// in the steps.
    pub fn flame_build(&self, sample_index: usize, filter: &Filter) -> FlameBuild {
        let kept = self.kept(filter);
        // Alphabetical rank of every function-level node.
        let by_rank =
            super::sorted_order(self.names.len(), &|a, b| self.names[a].cmp(&self.names[b]));
        let mut rank = vec![0u32; by_rank.len()];
        for (r, &n) in by_rank.iter().enumerate() {
            rank[n as usize] = r as u32;
        }
        // Each kept sample as a root-first sequence of (rank << 1 | inlined).
        let mut seq: Vec<u32> = Vec::new();
        let mut spans: Vec<(u32, u32, i64)> = Vec::new();
        let mut diff = false;
        for (i, &keep) in kept.iter().enumerate() {
            let v = self.value(i, sample_index);
            if v == 0 || !keep {
                continue;
            }
            diff |= v < 0;
            let start = seq.len() as u32;
            self.push_ranks(i, &rank, &mut seq);
            spans.push((start, seq.len() as u32 - start, v));
        }
        FlameBuild {
            nodes: pprof_scan::FlameNodes::new(seq, spans, by_rank),
            names: self.names.clone(),
            diff,
        }
    }
}

/// A flame tree being built, a slice of stacks at a time, so that a caller with an
/// event loop to serve (the viewer, loading a large profile) can let it run between
/// slices: [`Index::flame`] is this builder run to its end.
pub struct FlameBuild {
    nodes: pprof_scan::FlameNodes,
    names: Vec<String>,
    diff: bool,
}

impl FlameBuild {
    /// Sorts or adds the next `n` stacks, about: true when the tree is complete.
    pub fn step(&mut self, n: usize) -> bool {
        self.nodes.step(n)
    }

    /// The tree, with what is left built in one go.
    pub fn finish(self) -> FlameTree {
        FlameTree {
            nodes: self.nodes.finish(),
            names: self.names,
            diff: self.diff,
        }
    }
}

// The helpers below are called once per stack and not inlined: V8 runs a wasm function
// in its baseline tier until it is *called* again after being optimized, so the work
// of a long loop must sit in a function the loop calls (see the decoder's
// `Groups::add`).

impl Index<'_> {
    /// Appends sample `i`'s frames, root first, as `rank << 1 | inlined`.
    #[inline(never)]
    fn push_ranks(&self, i: usize, rank: &[u32], seq: &mut Vec<u32>) {
        seq.extend(
            self.root_first(i)
                .map(|f| rank[f.node as usize] << 1 | u32::from(f.inlined)),
        );
    }
}
