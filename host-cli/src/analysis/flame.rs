//! The merged call tree a flame graph draws: root first, one node per distinct
//! (parent, function, inlined) path, laid out in pre-order so a renderer can skip a
//! whole subtree that is off screen. Children are in alphabetical order (as
//! flamegraph.pl draws them, so two profiles line up), a node's own value to the right
//! of its children.
//!
//! Built without hashing: stacks become sequences of name ranks, sorted, and each new
//! stack only opens the nodes past its common prefix with the previous one.

use super::{Filter, Index};

/// One box of the flame graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlameNode {
    /// Function-level node id ([`FlameTree::names`]); the root is `u32::MAX`.
    pub name: u32,
    /// Depth: 0 for the root, 1 for outermost callers.
    pub depth: u32,
    /// This frame was inlined into its parent (drawn marked).
    pub inlined: bool,
    /// Net value of the samples through this path (new − base in a diff).
    pub value: i64,
    /// Width in value units: the sum of |sample values| (= `value` for ordinary
    /// profiles; new + base in a diff, where `width - shrank()` is the new share).
    pub width: i64,
    /// Left edge, in value units from the root's left edge.
    pub x: i64,
    /// Index one past this node's last descendant (pre-order), for skipping subtrees.
    pub end: u32,
}

impl FlameNode {
    /// Sum of |negative| sample values through this node: the base's share in a diff.
    /// (Width counts them once, value takes them off once: `width - value` is twice.)
    pub fn shrank(&self) -> i64 {
        self.width.wrapping_sub(self.value) / 2
    }
}

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

    /// Index of the parent of node `i` (None for the root): the nearest earlier node
    /// one level up.
    pub fn parent(&self, i: usize) -> Option<usize> {
        let d = self.nodes.get(i)?.depth;
        (0..i).rev().find(|&j| self.nodes[j].depth + 1 == d)
    }

    /// The path from the root to node `i` (inclusive), for breadcrumbs.
    pub fn path(&self, i: usize) -> Vec<usize> {
        let mut p = vec![i];
        let mut cur = i;
        while let Some(q) = self.parent(cur) {
            p.push(q);
            cur = q;
        }
        p.reverse();
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
    /// The flame tree for `sample_index` after `filter`.
    pub fn flame(&self, sample_index: usize, filter: &Filter) -> FlameTree {
        let kept = self.kept(filter);
        // Alphabetical rank of every function-level node.
        let mut by_rank: Vec<u32> = (0..self.names.len() as u32).collect();
        by_rank.sort_unstable_by(|&a, &b| self.names[a as usize].cmp(&self.names[b as usize]));
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
        let slice = |s: &(u32, u32, i64)| &seq[s.0 as usize..(s.0 + s.1) as usize];
        // Lexicographic; a stack that is a prefix of another sorts after it, so a
        // node's self value lands right of its children.
        spans.sort_unstable_by(|a, b| cmp_stacks(slice(a), slice(b)));
        let root = FlameNode {
            name: u32::MAX,
            depth: 0,
            inlined: false,
            value: 0,
            width: 0,
            x: 0,
            end: 0,
        };
        // Exact node count first: growing a Vec of a million nodes by doubling would
        // hold two copies at once (wasm memory never shrinks back).
        let mut count = 1usize;
        let mut last: &[u32] = &[];
        for sp in &spans {
            let s = slice(sp);
            count += s.len() - lcp(s, last);
            last = s;
        }
        let mut nodes = Vec::with_capacity(count);
        nodes.push(root);
        let mut path: Vec<usize> = vec![0];
        let mut prev: &[u32] = &[];
        for sp in &spans {
            let s = slice(sp);
            add_stack(&mut nodes, &mut path, s, prev, sp.2, &by_rank);
            prev = s;
        }
        let len = nodes.len() as u32;
        for o in path {
            nodes[o].end = len;
        }
        FlameTree {
            nodes,
            names: self.names.clone(),
            diff,
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

/// Lexicographic order of two stacks, a stack that is a prefix of another after it.
#[inline(never)]
fn cmp_stacks(a: &[u32], b: &[u32]) -> std::cmp::Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.cmp(y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| b.len().cmp(&a.len()))
}

/// Length of the common prefix of two stacks.
#[inline(never)]
fn lcp(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Adds one stack (root first, after `prev` in sorted order) of value `v`: closes the
/// nodes of `path` past the common prefix, opens new ones, adds `v` along the path.
#[inline(never)]
fn add_stack(
    nodes: &mut Vec<FlameNode>,
    path: &mut Vec<usize>,
    s: &[u32],
    prev: &[u32],
    v: i64,
    by_rank: &[u32],
) {
    let lcp = lcp(s, prev);
    while path.len() > lcp + 1 {
        let o = path.pop().unwrap_or(0);
        nodes[o].end = nodes.len() as u32;
    }
    for &key in &s[lcp..] {
        let parent = *path.last().unwrap_or(&0);
        let (px, pw) = (nodes[parent].x, nodes[parent].width);
        path.push(nodes.len());
        nodes.push(FlameNode {
            name: by_rank[(key >> 1) as usize],
            depth: path.len() as u32 - 1,
            inlined: key & 1 == 1,
            value: 0,
            width: 0,
            x: px.wrapping_add(pw),
            end: 0,
        });
    }
    for &n in path.iter() {
        let node = &mut nodes[n];
        node.value = node.value.wrapping_add(v);
        node.width = node.width.wrapping_add(v.wrapping_abs());
    }
}
