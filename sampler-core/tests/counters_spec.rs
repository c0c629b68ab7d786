//! The spec's counter table (`docs/snapshot-format.md` §2.1) lists the same counters, in
//! the same order, as the code's one list: a counter added to one and not the other
//! fails here.

use sampler_core::snapshot::COUNTERS_V1;
use sampler_core::Counters;

/// `(index, name)` of every row of the first table after the `### 2.1 Counters` heading.
fn spec_counters() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/snapshot-format.md");
    let spec = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let section = spec
        .split_once("\n### 2.1 Counters\n")
        .unwrap_or_else(|| panic!("{path}: no `### 2.1 Counters` section"))
        .1;
    let rows: Vec<Vec<String>> = section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect();
    assert!(
        rows.len() > 2,
        "{path} §2.1: no counter table (header, separator, rows)"
    );
    rows[2..]
        .iter()
        .map(|r| {
            assert_eq!(
                r.len(),
                3,
                "{path} §2.1: row {r:?} is not `| # | name | meaning |`"
            );
            (r[0].clone(), r[1].clone())
        })
        .collect()
}

#[test]
fn spec_counter_table_matches_the_code() {
    let code: Vec<(String, String)> = Counters::LIST
        .iter()
        .enumerate()
        .map(|(i, c)| (i.to_string(), c.name.to_owned()))
        .collect();
    assert_eq!(
        spec_counters(),
        code,
        "docs/snapshot-format.md §2.1 and sampler-core's counter table differ \
         (left: the spec, right: the code); update the one that is wrong"
    );
}

#[test]
fn spec_states_the_version_1_minimum() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/snapshot-format.md");
    let spec = std::fs::read_to_string(path).unwrap();
    for said in [
        format!("keeps the first {COUNTERS_V1} and ignores the rest"),
        format!("Fewer than {COUNTERS_V1} is\n`Malformed`"),
    ] {
        assert!(
            spec.contains(&said),
            "{path} §2.1 does not say {said:?}: the code's version-1 minimum is {COUNTERS_V1}"
        );
    }
}

#[test]
fn the_list_is_the_struct() {
    // Each wire position holds its own value, under its own name, and round-trips.
    for i in 0..Counters::LEN {
        let mut values = [0u64; Counters::LEN];
        values[i] = 1;
        let c = Counters::from_array(values);
        assert_eq!(c.to_array(), values);
        let named: Vec<(&str, u64)> = c.iter().collect();
        let expected: Vec<(&str, u64)> = Counters::LIST
            .iter()
            .zip(values)
            .map(|(info, v)| (info.name, v))
            .collect();
        assert_eq!(named, expected);
    }
    let c = Counters {
        live_map_full: 4,
        ..Counters::ZERO
    };
    assert_eq!(c.iter().nth(3), Some(("live_map_full", 4)));
    assert_eq!(Counters::ZERO, Counters::default());
    assert_eq!(COUNTERS_V1, 7, "version 1's minimum is fixed by the spec");
    // The decoder checks the flag at position COUNTERS_V1, and `heap()` reads the four
    // after it: the table must keep them there.
    let names: Vec<&str> = Counters::LIST.iter().map(|c| c.name).collect();
    assert_eq!(
        names[COUNTERS_V1..COUNTERS_V1 + 5],
        [
            "heap_totals",
            "heap_allocs",
            "heap_frees",
            "heap_in_use_bytes",
            "heap_peak_bytes"
        ]
    );
    let mut h = Counters::ZERO;
    assert_eq!(h.heap(), None, "not counted is absent, not zero");
    let t = sampler_core::HeapTotals {
        allocs: 9,
        frees: 4,
        in_use_bytes: 100,
        peak_bytes: 160,
    };
    h.set_heap(Some(t));
    assert_eq!((h.heap(), t.in_use_objects()), (Some(t), 5));
    h.set_heap(None);
    assert_eq!(h, Counters::ZERO);
    // A doc comment over several lines is one sentence in the list.
    assert_eq!(
        Counters::LIST[3].meaning,
        "Sampled objects not tracked because the live-object map was full \
         (their frees cannot be credited)."
    );
}
