//! Hand-built profiles with answers worked out on paper (see each test's comment).

use super::*;
use crate::limits::Limits;
use crate::profile::{self, Builder, Line, Profile, Sample};
use prost::Message;

fn line(f: u64, l: i64) -> Line {
    Line {
        function_id: f,
        line: l,
        column: 0,
    }
}

/// main → a → b → [c inlined into b]; main → b → [c]; main → rec → rec (recursion).
///
/// | sample | stack (leaf first)  | alloc_space | inuse_space |
/// |--------|---------------------|-------------|-------------|
/// | S1     | a, main             | 100         | 10          |
/// | S2     | [c,b], a, main      | 200         | 20          |
/// | S3     | rec, rec, main      | 50          | 0           |
/// | S4     | [c,b], main         | 30          | 3           |
fn sample_profile() -> Profile {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    b.sample_type("inuse_space", "bytes");
    let main = b.function("main", "main", "/src/app/main.go", 9);
    let a = b.function("a", "a", "/src/app/a.go", 19);
    let bf = b.function("b", "b", "/src/app/b.go", 39);
    let c = b.function("c", "c", "/src/app/c.go", 30);
    let rec = b.function("rec", "rec", "/src/app/rec.go", 49);
    let l1 = b.location(0, 0x10, vec![line(main, 10)], false);
    let l2 = b.location(0, 0x20, vec![line(a, 20)], false);
    let l3 = b.location(0, 0x30, vec![line(c, 31), line(bf, 40)], false);
    let l4 = b.location(0, 0x40, vec![line(rec, 50)], false);
    let l5 = b.location(0, 0x50, vec![line(rec, 52)], false);
    b.sample(vec![l2, l1], vec![100, 10], vec![]);
    b.sample(vec![l3, l2, l1], vec![200, 20], vec![]);
    b.sample(vec![l4, l5, l1], vec![50, 0], vec![]);
    b.sample(vec![l3, l1], vec![30, 3], vec![]);
    b.finish()
}

fn rows(t: &TopTable) -> Vec<(&str, i64, i64)> {
    t.rows
        .iter()
        .map(|r| (r.name.as_str(), r.flat, r.cum))
        .collect()
}

#[test]
fn top_counts_recursion_once_and_inlined_leaf_as_flat() {
    let p = sample_profile();
    let t = top(&p, 0, &Filter::none()).unwrap();
    assert_eq!(t.total, 380);
    // flat: c gets S2+S4 (the innermost line of the leaf location), a gets S1, rec S3.
    // cum: rec once for S3 although it is on the stack twice.
    assert_eq!(
        rows(&t),
        vec![
            ("c", 230, 230),
            ("a", 100, 300),
            ("rec", 50, 50),
            ("b", 0, 230),
            ("main", 0, 380)
        ]
    );
    let c = &t.rows[0];
    assert!((c.flat_pct - 230.0 / 380.0 * 100.0).abs() < 1e-9);
    assert!((t.rows[1].sum_pct - 330.0 / 380.0 * 100.0).abs() < 1e-9);
    assert!((t.rows[4].sum_pct - 100.0).abs() < 1e-9);
    assert!((t.rows[4].cum_pct - 100.0).abs() < 1e-9);
    assert_eq!(c.inline, Inline::Full, "c only ever appears inlined into b");
    assert_eq!(t.rows[3].inline, Inline::No);
}

#[test]
fn top_skips_zero_samples_and_functions_with_nothing() {
    let p = sample_profile();
    let t = top(&p, 1, &Filter::none()).unwrap();
    assert_eq!(t.total, 33);
    assert_eq!(
        rows(&t),
        vec![("c", 23, 23), ("a", 10, 30), ("b", 0, 23), ("main", 0, 33)]
    );
}

#[test]
fn focus_and_ignore_follow_pprof() {
    let p = sample_profile();
    let t = top(&p, 0, &Filter::new("^rec$", "").unwrap()).unwrap();
    assert_eq!(rows(&t), vec![("rec", 50, 50), ("main", 0, 50)]);
    assert_eq!(
        t.total, 380,
        "percentages stay relative to the whole profile"
    );
    // Ignore drops every sample with c on its stack (matched via the inlined frame).
    let t = top(&p, 0, &Filter::new("", "^c$").unwrap()).unwrap();
    assert_eq!(
        rows(&t),
        vec![("a", 100, 100), ("rec", 50, 50), ("main", 0, 150)]
    );
    // Both: focus a, ignore c → S1 only.
    let t = top(&p, 0, &Filter::new("^a$", "^c$").unwrap()).unwrap();
    assert_eq!(rows(&t), vec![("a", 100, 100), ("main", 0, 100)]);
    // File names match too (pprof matches function name or file name).
    let t = top(&p, 0, &Filter::new("rec\\.go", "").unwrap()).unwrap();
    assert_eq!(t.shown, 50);
    assert!(Filter::new("(", "").is_err());
    assert_eq!(Filter::new("", "[").unwrap_err().which, "ignore");
}

/// One filter change asks `kept` from the top table, the flame graph, the source view
/// and the shown total: the regex runs for the first only, a new filter runs again.
#[test]
fn kept_runs_the_patterns_once_per_filter() {
    use std::cell::Cell;
    use std::rc::Rc;
    let p = sample_profile();
    let ix = Index::new(&p);
    let calls = Rc::new(Cell::new(0));
    let counted = |re: &'static str| {
        let calls = calls.clone();
        Pattern::new(move |s: &str| {
            calls.set(calls.get() + 1);
            s == re
        })
    };
    let filter = Filter {
        focus: Some(counted("rec")),
        ignore: None,
    };
    let first = ix.kept(&filter);
    let asked = calls.get();
    assert!(asked > 0);
    let si = 0;
    let top = ix.top(si, &filter).unwrap();
    ix.flame(si, &filter);
    let again = ix.kept(&filter.clone());
    assert_eq!(calls.get(), asked, "the same filter ran its patterns again");
    assert_eq!(first, again);
    assert_eq!(rows(&top), vec![("rec", 50, 50), ("main", 0, 50)]);
    let other = Filter {
        focus: Some(counted("rec")),
        ignore: None,
    };
    assert_eq!(ix.kept(&other), first);
    assert!(calls.get() > asked, "a new filter must be evaluated");
}

#[test]
fn flame_tree_merges_paths_root_first_and_marks_inlined_frames() {
    let p = sample_profile();
    let ix = Index::new(&p);
    let f = ix.flame(0, &Filter::none());
    let shape: Vec<(u32, &str, i64, i64, bool)> = (0..f.nodes.len())
        .map(|i| {
            (
                f.nodes[i].depth,
                f.name(i),
                f.nodes[i].value,
                f.x(i),
                f.nodes[i].inlined,
            )
        })
        .collect();
    // Children alphabetical; a node's self value (a: 100) right of its children.
    assert_eq!(
        shape,
        vec![
            (0, "root", 380, 0, false),
            (1, "main", 380, 0, false),
            (2, "a", 300, 0, false),
            (3, "b", 200, 0, false),
            (4, "c", 200, 0, true),
            (2, "b", 30, 300, false),
            (3, "c", 30, 300, true),
            (2, "rec", 50, 330, false),
            (3, "rec", 50, 330, false),
        ]
    );
    assert_eq!(f.self_value(2), 100);
    assert_eq!(f.nodes[0].end, 9);
    assert_eq!(f.nodes[2].end, 5, "a's subtree is b, c");
    assert_eq!(f.nodes[5].end, 7);
    assert_eq!(f.path(4), vec![0, 1, 2, 3, 4]);
    assert_eq!(f.path(8), vec![0, 1, 7, 8]);
    // Found from the root down: the same as the nearest earlier node one level up.
    for i in 0..f.nodes.len() {
        let d = f.nodes[i].depth;
        let naive = (0..i).rev().find(|&j| f.nodes[j].depth + 1 == d);
        assert_eq!(f.parent(i), naive, "parent of node {i}");
    }
    assert_eq!(f.path(0), vec![0]);
    assert_eq!(f.path(99), vec![99], "a node not in the tree");
    assert_eq!(f.find_path(&["main", "b", "c"]), Some(6));
    assert_eq!(f.find_path(&["main", "zzz"]), None);
    assert!(!f.diff);
}

#[test]
fn source_lines_have_flat_and_cum_per_line() {
    let p = sample_profile();
    let ix = Index::new(&p);
    let rec = ix.node_of("rec").unwrap();
    let s = ix.source(rec, 0, &Filter::none());
    assert_eq!(s.file, "/src/app/rec.go");
    assert_eq!(s.start_line, 49);
    // Leaf line 50 gets flat; the caller frame on line 52 only cum; once per sample.
    assert_eq!(
        s.lines,
        vec![
            SourceLine {
                line: 50,
                flat: 50,
                cum: 50
            },
            SourceLine {
                line: 52,
                flat: 0,
                cum: 50
            }
        ]
    );
    assert_eq!((s.flat, s.cum), (50, 50));
    let a = ix.source(ix.node_of("a").unwrap(), 0, &Filter::none());
    assert_eq!(
        a.lines,
        vec![SourceLine {
            line: 20,
            flat: 100,
            cum: 300
        }]
    );
    let c = ix.source(ix.node_of("c").unwrap(), 1, &Filter::none());
    assert_eq!(
        c.lines,
        vec![SourceLine {
            line: 31,
            flat: 23,
            cum: 23
        }]
    );
}

/// base: S1 = 100; new: S1 = 150, S2 = 200 (alloc_space). The diff's base samples are
/// negated and labelled, so percentages are relative to the base total (100).
#[test]
fn diff_against_base_shows_growth_relative_to_base_total() {
    let new = sample_profile();
    let mut base = sample_profile();
    base.sample.retain(|s| s.value[0] == 100);
    let mut new2 = new.clone();
    new2.sample
        .retain(|s| s.value[0] == 100 || s.value[0] == 200);
    new2.sample[0].value = vec![150, 15].into();
    let d = profile::diff(&base, &new2).unwrap();
    let ix = Index::new(&d);
    let t = ix.top(0, &Filter::none()).unwrap();
    assert_eq!(t.total, 100);
    assert_eq!(
        rows(&t),
        vec![
            ("c", 200, 200),
            ("a", 50, 250),
            ("b", 0, 200),
            ("main", 0, 250)
        ]
    );
    assert!((t.rows[0].flat_pct - 200.0).abs() < 1e-9);
    let f = ix.flame(0, &Filter::none());
    assert!(f.diff);
    let a = f.find_path(&["main", "a"]).unwrap();
    // new 350 (150 + 200), base 100: net +250 over a width of 450.
    assert_eq!(
        (f.nodes[a].value, f.nodes[a].shrank(), f.nodes[a].width),
        (250, 100, 450)
    );
}

/// A profile large enough that the CLI merges its samples on a thread of their own,
/// and builds, validates and indexes them by halves on two threads: the samples come
/// out as the whole-file decoder's in the file's order (each stack's first sample,
/// summed), and every figure is the same.
#[test]
fn large_compact_decodes_are_built_by_halves_in_order() {
    let mut b = Builder::new();
    b.sample_type("inuse_space", "bytes");
    let locs: Vec<u64> = (0..40u64)
        .map(|i| {
            let f = b.function(&format!("f{i}"), "", "x.go", 1);
            b.location(0, 0x10 * (i + 1), vec![line(f, 1)], false)
        })
        .collect();
    let mut x = 11u64;
    let mut stacks = Vec::new();
    for _ in 0..70_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let stack: Vec<u64> = (0..2 + (x >> 60))
            .map(|d| locs[(x.rotate_right(5 * d as u32 + 3) % 40) as usize])
            .collect();
        stacks.push(stack);
    }
    let mut p = b.finish();
    // Written one sample per stack occurrence, as a file has them (the builder merges).
    p.sample = stacks
        .iter()
        .enumerate()
        .map(|(i, s)| Sample {
            location_id: s.as_slice().into(),
            value: vec![i as i64 % 7 + 1].into(),
            label: Vec::new().into(),
        })
        .collect();
    let raw = p.encode_to_vec();
    // Large enough that `decode_compact` merges on a thread of its own: the same
    // profile as merged where it is read, whatever the pieces it is fed in.
    assert!(raw.len() >= 1 << 20, "{} bytes", raw.len());
    let c = decode_compact(&raw).unwrap();
    let mut here = CompactDecoder::new();
    for piece in raw.chunks(1 << 16) {
        assert!(here.feed(piece));
    }
    assert_eq!(here.finish().ok().as_ref(), Some(&c));
    let mut beside = CompactDecoder::new().merging_beside();
    for piece in raw.chunks(999) {
        assert!(beside.feed(piece));
    }
    assert_eq!(beside.finish().ok().as_ref(), Some(&c));
    // Dropped halfway (as after a bad field): the merging thread ends, with its groups.
    let mut halfway = CompactDecoder::new().merging_beside();
    assert!(halfway.feed(&raw[..raw.len() / 2]));
    drop(halfway);
    let mut first: Vec<(Vec<u64>, i64)> = Vec::new();
    let mut at: std::collections::HashMap<Vec<u64>, usize> = Default::default();
    for s in &p.sample {
        let k = s.location_id.to_vec();
        match at.get(&k) {
            Some(&i) => first[i].1 += s.value[0],
            None => {
                at.insert(k.clone(), first.len());
                first.push((k, s.value[0]));
            }
        }
    }
    assert!(first.len() > 1 << 15, "{} stacks", first.len());
    let got: Vec<(Vec<u64>, i64)> = c
        .sample
        .iter()
        .map(|s| (s.location_id.to_vec(), s.value[0]))
        .collect();
    assert_eq!(got, first);
    assert_eq!(
        top(&c, 0, &Filter::none()).unwrap(),
        top(&p, 0, &Filter::none()).unwrap()
    );
    assert_eq!(
        Index::new(&c).flame(0, &Filter::none()),
        Index::new(&p).flame(0, &Filter::none())
    );
}

/// The merging decoder checks its samples at once where the locations are the ids
/// 1..=n (the groups' id and value-count ranges), else sample by sample: every bad
/// stack and value count is refused either way, whole or built in slices (the
/// viewer), and a good profile with other ids is read.
#[test]
fn compact_decodes_refuse_every_bad_sample() {
    let sliced = |raw: &[u8]| {
        let mut d = CompactDecoder::new();
        for piece in raw.chunks(7) {
            d.feed(piece);
        }
        let mut f = d.finishing().map_err(|_| ())?;
        while !f.step(1) {}
        f.finish().map_err(|_| ())
    };
    // Merged on a thread of its own (the CLI's large inputs).
    let beside = |raw: &[u8]| {
        let mut d = CompactDecoder::new().merging_beside();
        for piece in raw.chunks(7) {
            d.feed(piece);
        }
        d.finish()
    };
    let decodes = |p: &Profile| {
        let raw = p.encode_to_vec();
        let (whole, compact, in_slices, merged_beside) = (
            profile::decode(&raw).is_ok(),
            decode_compact(&raw).is_ok(),
            sliced(&raw).is_ok(),
            beside(&raw).is_ok(),
        );
        assert_eq!(
            (compact, in_slices, merged_beside),
            (whole, whole, whole),
            "{:?}",
            p.sample
        );
        whole
    };
    let good = sample_profile();
    assert!(decodes(&good));
    for bad_stack in [vec![1u64, 0], vec![2, 6], vec![u64::MAX]] {
        let mut p = good.clone();
        p.sample[2].location_id = bad_stack.as_slice().into();
        assert!(!decodes(&p));
    }
    let mut p = good.clone();
    p.sample[3].value = vec![1].into();
    assert!(!decodes(&p));
    // Locations 1, 7, 3, 9, 5: not 1..=n, so each sample is checked.
    let mut sparse = good.clone();
    let ids = [1u64, 7, 3, 9, 5];
    for (l, &id) in sparse.location.iter_mut().zip(&ids) {
        l.id = id;
    }
    for s in &mut sparse.sample {
        let stack: Vec<u64> = s.location_id.iter().map(|i| ids[i as usize - 1]).collect();
        s.location_id = stack.as_slice().into();
    }
    assert!(decodes(&sparse));
    assert_eq!(
        top(
            &decode_compact(&sparse.encode_to_vec()).unwrap(),
            0,
            &Filter::none()
        )
        .unwrap(),
        top(&good, 0, &Filter::none()).unwrap()
    );
    sparse.sample[1].location_id = [7u64, 4, 1].as_slice().into();
    assert!(!decodes(&sparse));
}

#[test]
fn compact_decode_merges_equal_stacks_and_keeps_every_figure() {
    let mut p = sample_profile();
    // Duplicate every sample three times with labels, as a real heap profile has one
    // sample per (stack, object size).
    let dup: Vec<Sample> = p
        .sample
        .iter()
        .flat_map(|s| std::iter::repeat_n(s.clone(), 3))
        .collect();
    p.sample = dup;
    let raw = p.encode_to_vec();
    let c = decode_compact(&raw).unwrap();
    assert_eq!(c.sample.len(), 4);
    for si in 0..2 {
        assert_eq!(
            top(&c, si, &Filter::none()).unwrap(),
            top(&p, si, &Filter::none()).unwrap()
        );
        assert_eq!(
            Index::new(&c).flame(si, &Filter::none()),
            Index::new(&p).flame(si, &Filter::none())
        );
    }
    // Gzipped input decodes the same.
    let gz = profile::encode(&p);
    assert_eq!(decode_compact(&gz).unwrap(), c);
}

#[test]
fn compact_decode_rejects_bad_input_with_an_error() {
    assert!(decode_compact(&[]).is_err());
    let raw = sample_profile().encode_to_vec();
    for cut in [1, raw.len() / 3, raw.len() - 1] {
        assert!(decode_compact(&raw[..cut]).is_err(), "truncated at {cut}");
    }
    assert!(decode_compact(b"this is not a profile at all").is_err());
    assert!(
        decode_compact(&[0x1f, 0x8b, 8, 0, 0, 0]).is_err(),
        "corrupt gzip"
    );
    // A dangling location id is caught by validation.
    let mut p = sample_profile();
    p.sample[0].location_id.extend([999]);
    let e = decode_compact(&p.encode_to_vec()).unwrap_err().to_string();
    assert!(e.contains("999"), "{e}");
}

/// The streaming decoder gives the same profile however the file is cut into pieces:
/// split at every byte, and fed in pieces of 1 to 7 bytes (fields, keys and lengths
/// then straddle pieces in every way).
#[test]
fn compact_decoder_is_independent_of_how_the_input_is_cut() {
    let new = sample_profile();
    let mut base = sample_profile();
    base.sample.truncate(2);
    // A diff (base-labelled samples) with extra string and numeric labels.
    let mut p = profile::diff(&base, &new).unwrap();
    let k = p.string_table.len() as i64;
    p.string_table
        .extend(["thread".into(), "io".into(), "bytes".into()]);
    for (i, s) in p.sample.iter_mut().enumerate() {
        let mut label = Vec::from(std::mem::take(&mut s.label));
        label.push(profile::Label {
            key: k + 2,
            str: 0,
            num: 16 * i as i64,
            num_unit: 0,
        });
        if i % 2 == 0 {
            label.push(profile::Label {
                key: k,
                str: k + 1,
                num: 0,
                num_unit: 0,
            });
        }
        s.label = label.into();
    }
    let raw = p.encode_to_vec();
    let whole = decode_compact(&raw).unwrap();
    for si in 0..whole.sample_type.len() {
        assert_eq!(
            top(&whole, si, &Filter::none()).unwrap(),
            top(&p, si, &Filter::none()).unwrap()
        );
    }
    for cut in 0..=raw.len() {
        let mut d = CompactDecoder::new();
        assert!(d.feed(&raw[..cut]) && d.feed(&raw[cut..]), "cut at {cut}");
        assert_eq!(d.finish().ok().as_ref(), Some(&whole), "cut at {cut}");
    }
    for piece in 1..8 {
        let mut d = CompactDecoder::new();
        for c in raw.chunks(piece) {
            assert!(d.feed(c));
        }
        assert_eq!(d.finish().ok().as_ref(), Some(&whole), "pieces of {piece}");
    }
    // Ending inside a field is not a profile, and the decoder says so itself.
    let mut d = CompactDecoder::new();
    d.feed(&raw[..raw.len() - 1]);
    let e = d
        .finish()
        .unwrap_err()
        .expect("the scan names a truncated end");
    assert_eq!(
        e.to_string(),
        profile::decode(&raw[..raw.len() - 1])
            .unwrap_err()
            .to_string()
    );
}

/// A gzip bomb of one huge field: the streaming decoder refuses it when it reads the
/// field's length, before gathering any of its bytes (the viewer's wasm memory never
/// holds them).
#[test]
fn compact_decoder_refuses_a_field_past_the_inflated_cap_at_its_header() {
    let limits = crate::limits::Limits {
        inflated_size: 1000,
        ..Default::default()
    };
    let mut d = CompactDecoder::with_limits(&limits, 100).inflated();
    // string_table entry declared 5000 bytes long, 10 of them sent.
    let mut b = vec![0x32, 0x88, 0x27];
    b.extend([b'x'; 10]);
    assert!(!d.feed(&b));
    match d.finish() {
        Err(Some(profile::ProfileError::TooLarge { limit: 1000 })) => {}
        other => panic!("{:?}", other.err()),
    }
    // Under the cap the same stream is only truncated, with an offset of the
    // inflated data.
    let mut d = CompactDecoder::new().inflated();
    assert!(d.feed(&b));
    let e = d.finish().unwrap_err().unwrap().to_string();
    assert!(e.contains("of the inflated data"), "{e}");
}

#[test]
fn units_are_human() {
    // pprof's Label: each value in its own best unit.
    assert_eq!(format_value(512, "bytes"), "512B");
    assert_eq!(format_value(1536, "bytes"), "1.50kB");
    assert_eq!(format_value(-3 * 1024 * 1024, "bytes"), "-3MB");
    assert_eq!(format_value(150 << 30, "bytes"), "150GB");
    assert_eq!(format_value(12345, "count"), "12345");
    assert_eq!(format_value(2_500_000, "nanoseconds"), "2.50ms");
    assert_eq!(format_value(1_280_000, "microseconds"), "1.28s");
    assert_eq!(format_value(7, "widgets"), "7widgets");
    assert_eq!(format_value(3, "\u{212A}B"), "3kB"); // KELVIN SIGN lowers to k in Go
    assert_eq!(format_percent(99.96), "100%");
    assert_eq!(format_percent(12.345), "12.35%");
    assert_eq!(format_percent(0.65), "0.65%");
    assert_eq!(format_percent(0.0026), "0.0026%");
    assert_eq!(format_percent(0.095), "0.095%");
    assert_eq!(format_percent(-0.5), "-0.5%");
    assert_eq!(format_percent(0.0), "0%");
}

/// pprof's `measurement` (go 1.19's vendored copy), value by value: families by every
/// spelling, `sniffUnit`'s trailing-s rule, the default unit when nothing fits, unknown
/// units with their suffix, and Go's round-half-even `%.2f` on exact binary ties.
#[test]
fn pprof_measurement() {
    assert_eq!(scaled_label(1_280_000_000, "nanoseconds", "auto"), "1.28s");
    assert_eq!(scaled_label(1500, "microseconds", "ms"), "1.50ms");
    assert_eq!(scaled_label(1500, "us", "auto"), "1.50ms");
    assert_eq!(scaled_label(7200, "seconds", "auto"), "2hrs");
    assert_eq!(scaled_label(0, "ns", "auto"), "0");
    assert_eq!(scale(0, "ns", "minimum"), (0.0, "s")); // the time default
    assert_eq!(scaled_label(3, "kilobytes", "auto"), "3kB");
    assert_eq!(scaled_label(2048, "KB", "MB"), "2MB");
    assert_eq!(scaled_label(5, "MBs", "auto"), "5MB");
    assert_eq!(scaled_label(-2048, "bytes", "kB"), "-2kB");
    assert_eq!(scaled_label(1500, "milligcu", "auto"), "1.50GCU");
    // "μs" is three bytes: pprof trims its "s" and knows it not.
    assert_eq!(scaled_label(12, "μs", "μs"), "12μs");
    assert_eq!(scaled_label(12, "\u{39C}ss", "auto"), "12us"); // lowers to "μs"+s
    assert_eq!(scaled_label(12, "widgets", "widgets"), "12widgets");
    assert_eq!(scaled_label(12, "count", "count"), "12");
    assert_eq!(scaled_label(12, "", ""), "12");
    // 0.125 and 0.375 are exact in binary: ties, to even as Go's %.2f.
    assert_eq!(scaled_label(128, "bytes", "kB"), "0.12kB");
    assert_eq!(scaled_label(384, "bytes", "kB"), "0.38kB");
    assert_eq!(scaled_label(1, "bytes", "MB"), "0");
    assert_eq!(output_unit([(1024, 1024)], 10 << 20, "bytes"), "kB");
    assert_eq!(output_unit([(2 << 20, 2 << 20)], 10 << 20, "bytes"), "MB");
    assert_eq!(output_unit([(5, 5)], 10, "widgets"), "widgets");
    assert_eq!(output_unit([(0, 0)], 0, "count"), "count");
    assert_eq!(percentage(1, 1), "  100%");
    assert_eq!(percentage(1, 3), "33.33%");
    assert_eq!(percentage(1, 200), "  0.5%");
    assert_eq!(percentage(1, 813), " 0.12%");
    assert_eq!(percentage(0, 813), "    0%");
    assert_eq!(percentage(1, 10_000_000), "1e-05%");
    assert_eq!(percentage(3, 130_000), "0.0023%");
}

/// A string table with bytes that are not UTF-8 is read (pprof reads it), each bad
/// sequence one U+FFFD, by the full and the streaming decoder alike.
#[test]
fn invalid_utf8_strings_are_decoded_lossily() {
    let mut b = Builder::new();
    b.sample_type("space", "bytes");
    let f = b.function("fn_AAAA", "fn_AAAA", "a.c", 1);
    let l = b.location(0, 0x10, vec![line(f, 1)], false);
    b.sample(vec![l], vec![5], vec![]);
    let mut raw = b.finish().encode_to_vec();
    // Patch the name's bytes in place (same length): "fn_\xff\xe2\x82A".
    let at = raw.windows(4).position(|w| w == b"AAAA").unwrap();
    raw[at..at + 3].copy_from_slice(b"\xff\xe2\x82");
    let full = profile::decode(&raw).unwrap();
    let compact = decode_compact(&raw).unwrap();
    for p in [&full, &compact] {
        assert!(
            p.string_table.iter().any(|s| s == "fn_\u{fffd}\u{fffd}A"),
            "{:?}",
            p.string_table
        );
    }
}

/// The hand-written sample reader of `decode_compact` must agree with prost and
/// validation: over thousands of random byte mutations and truncations of a real
/// profile (with labels and a diff base), it accepts exactly what `profile::decode`
/// accepts, and then every figure is the same.
#[test]
fn compact_decode_agrees_with_prost_on_mutated_input() {
    let new = sample_profile();
    let mut base = sample_profile();
    base.sample.truncate(2);
    let mut p = profile::diff(&base, &new).unwrap();
    let bytes_key = p.string_table.len() as i64;
    p.string_table.push("bytes".into());
    for (k, s) in p.sample.iter_mut().enumerate() {
        let mut label = Vec::from(std::mem::take(&mut s.label));
        label.push(profile::Label {
            key: bytes_key,
            str: 0,
            num: 64 * k as i64,
            num_unit: bytes_key,
        });
        s.label = label.into();
    }
    let raw = p.encode_to_vec();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut accepted, mut rejected, mut named) = (0, 0, 0);
    for round in 0..4000 {
        let mut b = raw.clone();
        if round % 10 == 0 {
            b.truncate(next() as usize % raw.len());
        } else {
            for _ in 0..1 + next() % 3 {
                let i = next() as usize % b.len();
                b[i] = next() as u8;
            }
        }
        let full = profile::decode(&b);
        let compact = decode_compact(&b);
        // The streaming decoder, fed in pieces, accepts the same and, where it names
        // the error itself, names the same one.
        let mut d = CompactDecoder::new();
        for c in b.chunks(7) {
            if !d.feed(c) {
                break;
            }
        }
        match (d.finish(), &full) {
            (Ok(_), Ok(_)) | (Err(None), Err(_)) => {}
            (Err(Some(e)), Err(f)) => {
                named += 1;
                assert_eq!(e.to_string(), f.to_string(), "round {round}: streamed")
            }
            (s, f) => panic!(
                "round {round}: streamed {:?} vs prost {:?}",
                s.err(),
                f.as_ref().err()
            ),
        }
        assert_eq!(
            full.is_ok(),
            compact.is_ok(),
            "round {round}: prost {:?} vs compact {:?}",
            full.as_ref().err(),
            compact.as_ref().err()
        );
        match (full, compact) {
            (Ok(f), Ok(c)) => {
                accepted += 1;
                for si in 0..f.sample_type.len() {
                    assert_eq!(
                        top(&f, si, &Filter::none()).unwrap(),
                        top(&c, si, &Filter::none()).unwrap(),
                        "round {round}"
                    );
                }
            }
            (Err(a), Err(b)) => {
                rejected += 1;
                assert_eq!(
                    a.to_string(),
                    b.to_string(),
                    "round {round}: same error message"
                );
            }
            _ => unreachable!(),
        }
    }
    assert!(
        accepted > 100 && rejected > 100 && named > rejected / 2,
        "mutations exercised both paths: {accepted} ok, {rejected} errors \
         ({named} named by the streaming decoder)"
    );
}

/// Regression (Go runtime profile, `runtime.semacquire`): pprof trims edges lighter than
/// 0.001 of the total before labelling, so a function inlined only on a rare path is
/// not `(inline)`, and one called plainly on a rare path stays `(inline)`, not partial.
///
/// | sample | stack (leaf first) | value |
/// |--------|--------------------|-------|
/// | S1     | a, main            | 9999  |
/// | S2     | [c,b], main        | 1     |  c inlined into b: edge b→c weight 1 < 10
/// | S3     | [d,main]           | 5000  |  d inlined into main: weight 5000
/// | S4     | d, a, main         | 2     |  a → d plain call: weight 2 < 15 (cutoff)
#[test]
fn top_inline_labels_ignore_edges_below_pprofs_edge_fraction() {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    let main = b.function("main", "main", "/m.go", 1);
    let a = b.function("a", "a", "/a.go", 1);
    let bf = b.function("b", "b", "/b.go", 1);
    let c = b.function("c", "c", "/c.go", 1);
    let d = b.function("d", "d", "/d.go", 1);
    let lmain = b.location(0, 0x10, vec![line(main, 2)], false);
    let la = b.location(0, 0x20, vec![line(a, 2)], false);
    let lcb = b.location(0, 0x30, vec![line(c, 2), line(bf, 2)], false);
    let ldmain = b.location(0, 0x40, vec![line(d, 2), line(main, 3)], false);
    let ld = b.location(0, 0x50, vec![line(d, 3)], false);
    b.sample(vec![la, lmain], vec![9999], vec![]);
    b.sample(vec![lcb, lmain], vec![1], vec![]);
    b.sample(vec![ldmain], vec![5000], vec![]);
    b.sample(vec![ld, la, lmain], vec![2], vec![]);
    let p = b.finish();
    let t = top(&p, 0, &Filter::none()).unwrap();
    assert_eq!(t.total, 15002);
    let label = |name: &str| t.rows.iter().find(|r| r.name == name).map(|r| r.inline);
    assert_eq!(
        label("c"),
        Some(Inline::No),
        "b→c weighs 1, below the cutoff of 15"
    );
    assert_eq!(
        label("d"),
        Some(Inline::Full),
        "the plain a→d call weighs 2, trimmed"
    );
    assert_eq!(label("a"), Some(Inline::No));
}

/// A large profile's flame tree has over a million nodes (1.37M for the viewer
/// benchmark's): every byte of a node is a megabyte of the browser's memory.
#[test]
fn flame_nodes_stay_small() {
    assert!(std::mem::size_of::<FlameNode>() <= 40);
}

/// Values whose sums leave 64 bits: the builder and the viewer's decoder (pprof-scan's
/// groups) keep a sample apart rather than wrap its stack's sum, and every analysis
/// path (CLI decoder, viewer decoder) refuses the total with the exact sum; sums that
/// fit still merge.
#[test]
fn sums_past_64_bits_are_refused_never_wrapped() {
    let build = |vals: &[i64]| {
        let mut b = Builder::new();
        b.sample_type("inuse_space", "bytes");
        let f = b.function("f", "f", "f.c", 1);
        let l = b.location(0, 0x10, vec![line(f, 2)], false);
        for &v in vals {
            b.sample(vec![l], vec![v], vec![]);
        }
        b.finish()
    };
    let p = build(&[i64::MAX, i64::MAX, 5]);
    assert_eq!(
        p.sample.iter().map(|s| s.value[0]).collect::<Vec<_>>(),
        [i64::MAX, i64::MAX, 5]
    );
    // Encoded as separate samples on one stack: the viewer's decoder merges by stack.
    let mut one = build(&[1]);
    one.sample = vec![one.sample[0].clone(); 3];
    for (s, v) in one.sample.iter_mut().zip([i64::MAX, i64::MAX, 5]) {
        s.value = vec![v].into();
    }
    let bytes = profile::encode(&one);
    let want = ValueOverflow {
        sample_type: "inuse_space".into(),
        unit: "bytes".into(),
        sum: 2 * i64::MAX as u128 + 5,
    };
    for q in [
        profile::decode(&bytes).unwrap(),
        decode_compact(&bytes).unwrap(),
        p,
    ] {
        let ix = Index::new(&q);
        assert_eq!(ix.total(0), Err(want.clone()));
        assert_eq!(ix.top(0, &Filter::none()), Err(want.clone()));
    }
    // Sums that fit merge as before, in both.
    let fit = build(&[1 << 61, 1 << 61, 1 << 61]);
    assert_eq!(fit.sample.len(), 1);
    assert_eq!(fit.sample[0].value[..], [3 << 61]);
    let mut three = build(&[1 << 61]);
    three.sample = vec![three.sample[0].clone(); 3];
    let c = decode_compact(&profile::encode(&three)).unwrap();
    assert_eq!(c.sample.len(), 1);
    assert_eq!(c.sample[0].value[..], [3 << 61]);
    assert_eq!(Index::new(&c).total(0), Ok(3 << 61));
}

#[test]
fn overflow_sums_print_exactly() {
    for n in [
        0u128,
        9,
        10,
        18446744073709551614,
        u128::from(u64::MAX) * 3 + 7,
        u128::MAX,
    ] {
        let e = ValueOverflow {
            sample_type: "t".into(),
            unit: "u".into(),
            sum: n,
        };
        assert!(e.to_string().contains(&format!("add up to {n},")), "{e}");
    }
}

/// 3000 stacks of 1 to 6 frames over 5 functions (many equal, or prefixes of others,
/// across several merge passes): the index and the flame tree built in slices of a
/// few samples are the ones built in one go, and the flame tree's children are in
/// name order with every value accounted for. Over 300 functions too, whose stacks
/// are sorted as two bytes a frame where five functions take one.
#[test]
fn sliced_builds_are_the_whole_builds() {
    check_sliced_builds(&["e", "d", "c", "b", "a"].map(String::from));
    let many: Vec<String> = (0..300).rev().map(|i| format!("f{i:03}")).collect();
    check_sliced_builds(&many);
}

fn check_sliced_builds(names: &[String]) {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    let locs: Vec<u64> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let f = b.function(n, n, "/src/x.go", 1);
            b.location(0, 0x10 * (i as u64 + 1), vec![line(f, 1)], false)
        })
        .collect();
    let (mut x, mut total) = (7u32, 0i64);
    for v in 1..=3000i64 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        // Five functions: from x's bits; more: one of five spread over them all.
        let spread = names.len() as u32 / 5;
        let stack: Vec<u64> = (0..1 + (x >> 16) % 6)
            .map(|d| {
                let k = (x >> (2 * d + 3)) % 5;
                locs[(k * spread + (x >> 24) % spread.max(1) * u32::from(d == 0)) as usize]
            })
            .collect();
        b.sample(stack, vec![v], vec![]);
        total += v;
    }
    let p = b.finish();
    let whole = Index::new(&p);
    let mut build = Index::build_shared(std::rc::Rc::new(p.clone()));
    let mut steps = 0;
    while !build.step(7) {
        steps += 1;
    }
    let sliced = build.finish();
    assert!(steps > 100, "{steps} steps");
    // Natively the whole build is two halves on two threads: every sample's frames
    // as the sliced build found them, the halves joined where they meet.
    for i in 0..p.sample.len() {
        let frames = |ix: &Index<'_>| ix.root_first(i).copied().collect::<Vec<_>>();
        assert_eq!(frames(&whole), frames(&sliced), "sample {i}");
    }
    let filter = Filter::none();
    let tree = whole.flame(0, &filter);
    let mut f = sliced.flame_build(0, &filter);
    steps = 0;
    while !f.step(&sliced, 5) {
        steps += 1;
    }
    assert!(steps > 100, "{steps} steps");
    assert_eq!(f.finish(&sliced), tree);
    // And from the index's stacks sorted once (the viewer's background sort).
    let mut sort = sliced.sort_stacks();
    while !sort.step(&sliced, 13) {}
    sort.finish(&sliced);
    assert!(sliced.order.borrow().is_some(), "the sorted order is kept");
    assert_eq!(sliced.flame(0, &filter), tree);
    assert_eq!(tree.nodes[0].value, total);
    // Pre-order, children in name order, each node's value its children's and its own.
    for i in 0..tree.nodes.len() {
        let (mut c, end, mut sum, mut last) = (i + 1, tree.nodes[i].end as usize, 0, "");
        while c < end {
            assert!(tree.name(c) > last, "children of {i} in name order");
            last = tree.name(c);
            sum += tree.nodes[c].value;
            c = tree.nodes[c].end as usize;
        }
        assert_eq!(sum + tree.self_value(i), tree.nodes[i].value);
    }
}

/// Stacks are kept as their varints: a writer's overlong (non-canonical) ones must
/// come out of the streaming decoder as the same stacks prost reads, so that equal
/// stacks merge and a written profile is canonical.
#[test]
fn compact_decode_reads_overlong_stack_varints_as_prost_does() {
    let mut p = sample_profile();
    p.sample.clear();
    let mut raw = p.encode_to_vec();
    // Two samples of the stack [2, 1] (leaf first), the second with each id overlong.
    for (ids, v) in [
        (&[2u8, 1][..], 5u8),
        (&[0x82, 0x00, 0x81, 0x80, 0x00][..], 7),
    ] {
        let mut s = vec![0x0a, ids.len() as u8];
        s.extend(ids);
        s.extend([0x12, 2, v, 0]);
        raw.push(0x12);
        raw.push(s.len() as u8);
        raw.extend(s);
    }
    let full = profile::decode(&raw).unwrap();
    assert_eq!(full.sample[1].location_id, full.sample[0].location_id);
    // (The merge keys stacks by their bytes as written, so these two stay apart: every
    // view is a sum over samples, and sums the same.)
    let compact = decode_compact(&raw).unwrap();
    assert_eq!(compact.sample.len(), 2);
    for s in &compact.sample {
        assert_eq!(s.location_id, full.sample[0].location_id);
        assert_eq!(s.location_id.to_vec(), vec![2, 1]);
    }
    assert_eq!(
        profile::encode(&compact),
        profile::encode(&full),
        "written back, the same canonical bytes"
    );
}

/// `decode_compact` inflates a gzipped input into its streaming decoder piece by piece
/// (no separate scan, nothing held whole): every cut and every corrupted byte of a
/// gzipped profile, and limits it goes over, must give exactly the whole-file decoder's
/// answer and error message.
#[test]
fn compact_decode_of_gzip_answers_as_the_whole_file_decoder() {
    let mut p = sample_profile();
    // Enough samples for the inflated stream to span several 1 MiB pieces.
    let s0 = p.sample[0].clone();
    for k in 0..120_000 {
        let mut s = s0.clone();
        s.value = vec![k, 1].into();
        s.location_id.extend([1 + k as u64 % 5]);
        p.sample.push(s);
    }
    let gz = profile::encode(&p);
    assert!(p.encode_to_vec().len() > 1 << 20);
    let same = |b: &[u8], limits: &Limits, what: &str| {
        let whole = profile::decode_limited(b, limits);
        let compact = decode_compact_limited(b, limits);
        match (&whole, &compact) {
            (Ok(_), Ok(_)) => {}
            (Err(w), Err(c)) => assert_eq!(w.to_string(), c.to_string(), "{what}"),
            _ => panic!(
                "{what}: whole {:?} vs compact {:?}",
                whole.err(),
                compact.err()
            ),
        }
        compact.is_ok()
    };
    assert!(same(&gz, &Limits::default(), "whole file"));
    for cut in (0..gz.len()).step_by(gz.len() / 97 + 1) {
        assert!(!same(
            &gz[..cut],
            &Limits::default(),
            &format!("cut at {cut}")
        ));
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for round in 0..60 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut b = gz.clone();
        let i = 10 + x as usize % (b.len() - 10);
        b[i] ^= 1 << (x >> 61);
        same(
            &b,
            &Limits::default(),
            &format!("round {round}: byte {i} flipped"),
        );
    }
    // Over the inflated-size cap, and over the entry budget.
    let tight = Limits {
        inflated_size: 1 << 20,
        ..Limits::default()
    };
    assert!(!same(&gz, &tight, "inflated cap"));
    let few = Limits {
        entries_base: 1000,
        entries_per_byte: 0,
        ..Limits::default()
    };
    assert!(!same(&gz, &few, "entry budget"));
}

/// The index holds each sample's frames as varints: frame indices past one byte's
/// (over 127, here up to 600) must read back whole and in order, root first, in
/// every view that walks them.
#[test]
fn deep_stacks_past_one_byte_frame_indices_read_back_in_order() {
    let mut b = Builder::new();
    b.sample_type("inuse_space", "bytes");
    // 300 locations of two lines each (the outer inlining the inner): 600 frames.
    let locs: Vec<u64> = (0..300)
        .map(|i| {
            let outer = b.function(&format!("f{i}"), "", "/src/deep.go", 1);
            let inner = b.function(&format!("f{i}_inl"), "", "/src/deep.go", 1);
            b.location(0, 0x1000 + i, vec![line(inner, 2), line(outer, 3)], false)
        })
        .collect();
    // Leaf first: the last location is the leaf, f0 the root.
    let leaf_first: Vec<u64> = locs.iter().rev().copied().collect();
    b.sample(leaf_first, vec![7], vec![]);
    let p = b.finish();
    let ix = Index::new(&p);
    let names: Vec<&str> = ix
        .root_first(0)
        .map(|f| ix.names[f.node as usize].as_str())
        .collect();
    let want: Vec<String> = (0..300)
        .flat_map(|i| [format!("f{i}"), format!("f{i}_inl")])
        .collect();
    assert_eq!(names, want);
    let f = ix.flame(0, &Filter::none());
    assert_eq!(f.nodes.len(), 601, "root and one node per frame");
    assert_eq!(f.name(600), "f299_inl");
    assert_eq!(f.path(600).len(), 601);
    let t = top(&p, 0, &Filter::none()).unwrap();
    assert_eq!(t.rows.len(), 600);
    assert!(t.rows.iter().all(|r| r.cum == 7));
    // A focus on a frame deep in the stack keeps the sample; an ignore drops it.
    let t = top(&p, 0, &Filter::new("^f250_inl$", "").unwrap()).unwrap();
    assert_eq!(t.shown, 7);
    let t = top(&p, 0, &Filter::new("", "^f250_inl$").unwrap()).unwrap();
    assert_eq!(t.shown, 0);
}

/// `top` without a filter expands each sample's locations on two threads instead of
/// indexing the stacks: the same table as [`Index::top`], on a diff (base samples,
/// signed values) and its new profile of 20,000 samples (past the size that starts a
/// thread), with
/// inlined frames on some paths, recursion, unknown location ids and zero values.
#[test]
fn unstacked_top_is_the_indexed_top() {
    let mut b = Builder::new();
    b.sample_type("alloc_space", "bytes");
    b.sample_type("inuse_space", "bytes");
    let funcs: Vec<u64> = (0..40)
        .map(|i| b.function(&format!("f{i}"), "", &format!("/src/f{i}.go"), i))
        .collect();
    // Functions only ever inlined (`(inline)`), but g0, also called from the last
    // location (`(partial-inline)`).
    let inl: Vec<u64> = (0..4)
        .map(|i| b.function(&format!("g{i}"), "", "/src/g.go", i))
        .collect();
    // Locations of one line, and of two (the first inlined into the second).
    let mut locs = Vec::new();
    for i in 0..60u64 {
        let f = funcs[(i * 7 % 40) as usize];
        let lines = if i % 5 == 0 {
            vec![line(inl[(i / 5 % 4) as usize], 1), line(f, 2)]
        } else if i == 59 {
            vec![line(inl[0], 3)]
        } else {
            vec![line(f, 3)]
        };
        locs.push(b.location(0, 0x100 + i, lines, false));
    }
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..20_000 {
        let depth = 1 + next(12) as usize;
        let mut stack: Vec<u64> = (0..depth).map(|_| locs[next(60) as usize]).collect();
        if next(50) == 0 {
            stack.push(9_999); // unknown: skipped by both
        }
        let v = next(1000) as i64 * i64::from(next(10) != 0);
        b.sample(stack, vec![v, v / 3], vec![]);
    }
    // Last (in the second half): f35 calling g1, which the first half has only seen
    // inlined into f35 (location 5): the edge is then not inline, g1 partial.
    let f35 = b.location(0, 0x200, vec![line(funcs[35], 4)], false);
    let g1 = b.location(0, 0x201, vec![line(inl[1], 5)], false);
    for _ in 0..100 {
        b.sample(vec![g1, f35], vec![1000, 1000], vec![]);
    }
    let p = b.finish();
    let new = {
        let mut q = p.clone();
        for s in q.sample.iter_mut().step_by(3) {
            let v: Vec<i64> = s.value.iter().map(|v| v * 2).collect();
            s.value = v.into();
        }
        q
    };
    let d = profile::diff(&p, &new).unwrap();
    // Both past the size that starts a thread (`beside`'s 16,384 items).
    assert!(p.sample.len().min(d.sample.len()) > 1 << 14);
    for prof in [&p, &d] {
        let ix = Index::new(prof);
        for si in 0..2 {
            let want = ix.top(si, &Filter::none()).unwrap();
            let label = |f: &str| want.rows.iter().find(|r| r.name == f).map(|r| r.inline);
            assert_eq!(
                (label("g0"), label("g1"), label("g2")),
                (
                    Some(Inline::Partial),
                    Some(Inline::Partial),
                    Some(Inline::Full)
                )
            );
            assert_eq!(top(prof, si, &Filter::none()).unwrap(), want);
        }
    }
}
