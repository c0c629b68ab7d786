//! The merged call tree a flame graph draws: root first, one node per distinct
//! (parent, function, inlined) path, laid out in pre-order so a renderer can skip a
//! whole subtree that is off screen.

use super::{Filter, Index};
use super::index::FxMap;

/// One box of the flame graph.
#[derive(Clone, Debug, PartialEq)]
pub struct FlameNode {
    /// Function-level node id ([`FlameTree::names`]); the root is `u32::MAX`.
    pub name: u32,
    /// Depth: 0 for the root, 1 for outermost callers.
    pub depth: u32,
    /// This frame was inlined into its parent (drawn marked).
    pub inlined: bool,
    /// Net value of the samples through this path (new − base in a diff).
    pub value: i64,
    /// Net value of samples whose leaf is this node.
    pub self_value: i64,
    /// Sum of positive sample values (the new profile's share in a diff).
    pub grew: i64,
    /// Sum of |negative| sample values (the base's share in a diff).
    pub shrank: i64,
    /// Width in value units: `grew + shrank` (= `value` for ordinary profiles).
    pub width: i64,
    /// Left edge, in value units from the root's left edge.
    pub x: i64,
    /// Index one past this node's last descendant (pre-order), for skipping subtrees.
    pub end: u32,
}

/// A flame graph's tree, nodes in pre-order (index 0 is the root).
#[derive(Clone, Debug, PartialEq)]
pub struct FlameTree {
    /// Nodes, pre-order; children sorted widest first, then by name.
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

struct Build {
    name: u32,
    inlined: bool,
    value: i64,
    self_value: i64,
    grew: i64,
    shrank: i64,
    children: Vec<u32>,
}

impl Index<'_> {
    /// The flame tree for `sample_index` after `filter`.
    pub fn flame(&self, sample_index: usize, filter: &Filter) -> FlameTree {
        let kept = self.kept(filter);
        let mut b = vec![Build {
            name: u32::MAX,
            inlined: false,
            value: 0,
            self_value: 0,
            grew: 0,
            shrank: 0,
            children: vec![],
        }];
        // (parent, function node, inlined) packed into one key.
        let mut child: FxMap<u64, u32> = FxMap::default();
        let mut diff = false;
        for i in 0..self.sample_count() {
            let v = self.value(i, sample_index);
            if v == 0 || !kept[i] {
                continue;
            }
            diff |= v < 0;
            let add = |n: &mut Build| {
                n.value = n.value.wrapping_add(v);
                if v > 0 {
                    n.grew = n.grew.wrapping_add(v);
                } else {
                    n.shrank = n.shrank.wrapping_add(v.wrapping_neg());
                }
            };
            add(&mut b[0]);
            let mut cur = 0u32;
            for f in self.root_first(i) {
                let key = u64::from(cur) << 33 | u64::from(f.node) << 1 | u64::from(f.inlined);
                let next = *child.entry(key).or_insert_with(|| {
                    b.push(Build {
                        name: f.node,
                        inlined: f.inlined,
                        value: 0,
                        self_value: 0,
                        grew: 0,
                        shrank: 0,
                        children: vec![],
                    });
                    let id = b.len() as u32 - 1;
                    b[cur as usize].children.push(id);
                    id
                });
                add(&mut b[next as usize]);
                cur = next;
            }
            b[cur as usize].self_value = b[cur as usize].self_value.wrapping_add(v);
        }
        drop(child);
        let names = &self.names;
        for k in 0..b.len() {
            let mut ch = std::mem::take(&mut b[k].children);
            ch.sort_unstable_by(|&x, &y| {
                let (x, y) = (&b[x as usize], &b[y as usize]);
                (y.grew + y.shrank)
                    .cmp(&(x.grew + x.shrank))
                    .then_with(|| names[x.name as usize].cmp(&names[y.name as usize]))
            });
            b[k].children = ch;
        }
        // Pre-order layout with an explicit stack (deep recursion would overflow).
        let mut nodes: Vec<FlameNode> = Vec::with_capacity(b.len());
        let mut stack: Vec<(u32, u32, i64)> = vec![(0, 0, 0)]; // (build id, depth, x)
        let mut open: Vec<usize> = Vec::new(); // pre-order indices awaiting `end`
        while let Some((id, depth, x)) = stack.pop() {
            while open.last().is_some_and(|&o| nodes[o].depth >= depth) {
                let o = open.pop().unwrap_or_default();
                nodes[o].end = nodes.len() as u32;
            }
            let n = &b[id as usize];
            let width = n.grew.wrapping_add(n.shrank);
            open.push(nodes.len());
            nodes.push(FlameNode {
                name: n.name,
                depth,
                inlined: n.inlined,
                value: n.value,
                self_value: n.self_value,
                grew: n.grew,
                shrank: n.shrank,
                width,
                x,
                end: 0,
            });
            let mut cx = x;
            let mut kids = Vec::with_capacity(n.children.len());
            for &c in &n.children {
                kids.push((c, depth + 1, cx));
                let cn = &b[c as usize];
                cx = cx.wrapping_add(cn.grew.wrapping_add(cn.shrank));
            }
            stack.extend(kids.into_iter().rev());
        }
        let len = nodes.len() as u32;
        for o in open {
            nodes[o].end = len;
        }
        FlameTree {
            nodes,
            names: self.names.clone(),
            diff,
        }
    }
}
