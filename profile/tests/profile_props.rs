//! Property tests of the profile operations over random profiles: the codec round trip
//! is exact, `diff` is NEW − BASE per stack whatever the inputs (pprof's `-diff_base`
//! arithmetic), folded output keeps every value, a flame node's path is its chain of
//! parents, a flame tree built from the index's sorted stacks is the one built by
//! sorting, and unsampling is monotone and never
//! below the sampled value.

use heapsnap_profile::export::folded;
use heapsnap_profile::import::scale_heap_sample;
use heapsnap_profile::profile::{self, Builder, Line, Profile};
use proptest::prelude::*;
use std::collections::BTreeMap;

const FUNCS: [&str; 5] = ["main", "serve", "parse", "alloc_buf", "leak"];

/// A profile from stacks of function indices (leaf first) and values.
fn build(samples: &[(Vec<usize>, i64, i64)]) -> Profile {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    b.sample_type("inuse_space", "bytes");
    b.period("space", "bytes", 512);
    for (stack, a, i) in samples {
        let locs: Vec<u64> = stack
            .iter()
            .map(|&f| {
                let fid = b.function(FUNCS[f], "", "src/lib.rs", 0);
                b.location(
                    0,
                    0x1000 + f as u64 * 0x10,
                    vec![Line {
                        function_id: fid,
                        line: f as i64 + 1,
                        column: 0,
                    }],
                    false,
                )
            })
            .collect();
        b.sample(locs, vec![*a, *i], vec![]);
    }
    b.finish()
}

/// Net value per stack (by function names, leaf first).
fn per_stack(p: &Profile) -> BTreeMap<Vec<String>, (i64, i64)> {
    let mut m: BTreeMap<Vec<String>, (i64, i64)> = BTreeMap::new();
    for s in &p.sample {
        let names = s
            .location_id
            .iter()
            .map(|id| {
                let l = p.location.iter().find(|l| l.id == id).unwrap();
                let f = p
                    .function
                    .iter()
                    .find(|f| f.id == l.line[0].function_id)
                    .unwrap();
                p.str(f.name).to_owned()
            })
            .collect();
        let e = m.entry(names).or_default();
        e.0 += s.value[0];
        e.1 += s.value[1];
    }
    m.retain(|_, v| *v != (0, 0));
    m
}

fn samples() -> impl Strategy<Value = Vec<(Vec<usize>, i64, i64)>> {
    prop::collection::vec(
        (
            prop::collection::vec(0..FUNCS.len(), 1..5),
            0..10_000i64,
            0..10_000i64,
        ),
        0..20,
    )
}

proptest! {
    #[test]
    fn codec_round_trip(s in samples()) {
        let p = build(&s);
        prop_assert_eq!(profile::decode(&profile::encode(&p)).unwrap(), p);
    }

    #[test]
    fn diff_is_new_minus_base_per_stack(base in samples(), new in samples()) {
        let (b, n) = (build(&base), build(&new));
        let d = profile::diff(&b, &n).unwrap();
        d.check_valid().unwrap();
        let mut want = per_stack(&n);
        for (k, v) in per_stack(&b) {
            let e = want.entry(k).or_default();
            e.0 -= v.0;
            e.1 -= v.1;
        }
        want.retain(|_, v| *v != (0, 0));
        prop_assert_eq!(per_stack(&d), want);
    }

    #[test]
    fn flame_path_is_the_chain_of_nearest_parents(s in samples()) {
        let p = build(&s);
        let ix = heapsnap_profile::analysis::Index::new(&p);
        let f = ix.flame(0, &heapsnap_profile::analysis::Filter::none());
        for i in 0..f.nodes.len() {
            // The definition: a node's parent is the nearest earlier node one level up.
            let d = f.nodes[i].depth;
            let parent = (0..i).rev().find(|&j| f.nodes[j].depth + 1 == d);
            prop_assert_eq!(f.parent(i), parent);
            let path = f.path(i);
            prop_assert_eq!(path.len(), d as usize + 1);
            prop_assert_eq!(path.last(), Some(&i));
        }
    }

    #[test]
    fn flame_from_the_sorted_stacks_is_the_flame_sorted_anew(
        s in samples(), base in samples(), slice in 1usize..50,
    ) {
        use heapsnap_profile::analysis::{Filter, Index};
        // A profile and a diff (negative values, samples that net to zero).
        for p in [build(&s), profile::diff(&build(&base), &build(&s)).unwrap()] {
            let ix = Index::new(&p);
            let filters = [
                Filter::none(),
                Filter::new("serve", "").unwrap(),
                Filter::new("", "leak").unwrap(),
                Filter::new("parse|alloc", "main").unwrap(),
            ];
            let want: Vec<_> = (0..2)
                .flat_map(|si| filters.iter().map(move |f| (si, f)))
                .map(|(si, f)| ix.flame(si, f))
                .collect();
            // Built a slice at a time (as the viewer loads), stepped to the end or
            // finished part-way, before and after the sort.
            let sliced = |steps: usize| -> Vec<_> {
                (0..2)
                    .flat_map(|si| filters.iter().map(move |f| (si, f)))
                    .map(|(si, f)| {
                        let mut b = ix.flame_build(si, f);
                        let mut k = 0;
                        while k < steps && !b.step(&ix, slice) {
                            k += 1;
                        }
                        b.finish(&ix)
                    })
                    .collect()
            };
            prop_assert_eq!(&sliced(usize::MAX), &want);
            prop_assert_eq!(&sliced(slice % 4), &want);
            let mut sort = ix.sort_stacks();
            while !sort.step(&ix, slice) {}
            sort.finish(&ix);
            let got: Vec<_> = (0..2)
                .flat_map(|si| filters.iter().map(move |f| (si, f)))
                .map(|(si, f)| ix.flame(si, f))
                .collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(&sliced(usize::MAX), &want);
            prop_assert_eq!(&sliced(slice % 4), &want);
        }
    }

    #[test]
    fn folded_keeps_every_value(s in samples()) {
        let p = build(&s);
        for i in 0..2 {
            let total: i64 = folded(&p, i).lines().map(|l| l.rsplit(' ').next().unwrap().parse::<i64>().unwrap()).sum();
            let want: i64 = p.sample.iter().map(|x| x.value[i]).sum();
            prop_assert_eq!(total, want);
        }
    }

    #[test]
    fn unsampling_scales_up_monotonically(count in 1i64..1000, size in 1i64..100_000, rate in 2i64..1_000_000) {
        let (c, b) = scale_heap_sample(count, count * size, rate);
        prop_assert!(c >= count && b >= count * size);
        // Bigger objects are likelier to be sampled: they are scaled up less.
        let (_, b2) = scale_heap_sample(count, count * size * 2, rate);
        prop_assert!(b2 as f64 / (count * size * 2) as f64 <= b as f64 / (count * size) as f64 + 1e-9);
        prop_assert_eq!(scale_heap_sample(count, count * size, 1), (count, count * size));
    }
}

proptest! {
    /// Left edges (not kept in the tree): `FlameTree::x`, found from the root down,
    /// agrees with each node's children laid side by side from its own left edge, in
    /// order, and they fit inside it; a walk that skips subtrees finds the same edges.
    /// (The layout itself, a node's own value right of its children, is the one the
    /// builder's stack order gives: see the unit test of the tree's shape.)
    #[test]
    fn flame_children_lie_side_by_side_inside_their_parent(
        s in samples(), base in samples(), skips in prop::collection::vec(any::<bool>(), 64),
    ) {
        use heapsnap_profile::analysis::{Edges, Filter, Index};
        for p in [build(&s), profile::diff(&build(&base), &build(&s)).unwrap()] {
            let ix = Index::new(&p);
            for si in 0..2 {
                let f = ix.flame(si, &Filter::none());
                let n = &f.nodes;
                prop_assert_eq!(f.x(0), 0);
                for i in 0..n.len() {
                    let (mut c, mut x) = (i + 1, f.x(i));
                    while c < n[i].end as usize {
                        prop_assert_eq!(f.x(c), x, "node {} child {}", i, c);
                        x += n[c].width;
                        c = n[c].end as usize;
                    }
                    prop_assert!(x <= f.x(i) + n[i].width, "children of {} past its right edge", i);
                }
                // A walk that skips subtrees, as the drawing does, finds the same edges.
                let (mut edges, mut i) = (Edges::default(), 0);
                while i < n.len() {
                    prop_assert_eq!(edges.of(&n[i]), f.x(i), "node {}", i);
                    i = if skips[i % skips.len()] && i > 0 { n[i].end as usize } else { i + 1 };
                }
            }
        }
    }
}
