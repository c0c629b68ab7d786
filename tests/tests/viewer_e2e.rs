//! The viewer in real headless Chromium against `go tool pprof`: a heap profile written
//! by Go's own runtime is opened through the page's file input, and for every sample
//! type every top-table row (name, flat, cum, percentages) must equal what
//! `go tool pprof -top -nodefraction=0` prints. Also: the flame canvas draws, a
//! malformed file shows the error and the page keeps working, focus matches pprof's
//! `-focus`, the source view, URL-hash persistence across a reload, zoom, and the CSP.
//!
//! Needs the bundle (`cargo xtask viewer`; `HEAPSNAP_WWW` = its `www/`), Chromium and
//! playwright-core (`cargo xtask test` installs both). Missing pieces fail the test with
//! a message; nothing is skipped. Screenshots: `target/viewer-e2e/*.png`.

use e2e::{go_heap_profile, node_modules, pprof, repo_root, run, target_dir, www};
use serde_json::Value;
use std::process::Command;

/// One row of pprof's `-top` text: (name, flat, flat%, sum%, cum, cum%).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    flat: i64,
    flat_pct: f64,
    sum_pct: f64,
    cum: i64,
    cum_pct: f64,
}

/// Parses `go tool pprof -top -unit=bytes` output (values are exact with that unit:
/// `8388608B`, counts as `5000bytes`).
fn parse_pprof_top(text: &str) -> Vec<Row> {
    let num = |s: &str| -> i64 {
        let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        digits
            .parse()
            .unwrap_or_else(|_| panic!("pprof value {s:?}"))
    };
    let pct = |s: &str| -> f64 {
        s.trim_end_matches('%')
            .parse()
            .unwrap_or_else(|_| panic!("pprof percentage {s:?}"))
    };
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert!(f.len() >= 6, "unexpected pprof line {l:?}");
            let name = f[5..].join(" ");
            let name = name
                .trim_end_matches(" (inline)")
                .trim_end_matches(" (partial-inline)")
                .to_owned();
            Row {
                name,
                flat: num(f[0]),
                flat_pct: pct(f[1]),
                sum_pct: pct(f[2]),
                cum: num(f[3]),
                cum_pct: pct(f[4]),
            }
        })
        .collect()
}

fn page_rows(v: &Value) -> Vec<Row> {
    v.as_array()
        .expect("rows array")
        .iter()
        .map(|r| Row {
            name: r["name"].as_str().expect("name").to_owned(),
            flat: r["flat"].as_f64().expect("flat") as i64,
            flat_pct: r["flatPct"].as_f64().expect("flatPct"),
            sum_pct: r["sumPct"].as_f64().expect("sumPct"),
            cum: r["cum"].as_f64().expect("cum") as i64,
            cum_pct: r["cumPct"].as_f64().expect("cumPct"),
        })
        .collect()
}

/// pprof prints `%5.2f` (≥ 1%) or two significant digits (`%5.2g`, < 1%), and
/// `100%` for anything within ±0.05 of it.
fn pct_close(ours: f64, pprof: f64) -> bool {
    let d = (ours - pprof).abs();
    if pprof == 100.0 {
        d <= 0.0501
    } else if pprof.abs() >= 1.0 {
        d <= 0.0051
    } else {
        d <= 0.051 * pprof.abs() + 1e-12
    }
}

fn assert_same_table(what: &str, ours: &[Row], theirs: &[Row]) {
    let names = |r: &[Row]| r.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(ours),
        names(theirs),
        "{what}: rows (in order) differ from go tool pprof -top"
    );
    for (a, b) in ours.iter().zip(theirs) {
        assert_eq!(
            (a.flat, a.cum),
            (b.flat, b.cum),
            "{what}: {} flat/cum differ from pprof",
            a.name
        );
        for (x, y, col) in [
            (a.flat_pct, b.flat_pct, "flat%"),
            (a.sum_pct, b.sum_pct, "sum%"),
            (a.cum_pct, b.cum_pct, "cum%"),
        ] {
            assert!(
                pct_close(x, y),
                "{what}: {} {col} is {x} in the viewer, {y} in pprof",
                a.name
            );
        }
    }
}

#[test]
fn viewer_shows_pprof_top_for_every_sample_type_of_a_go_heap_profile() {
    let www = www();
    let nm = node_modules();
    let dir = target_dir().join("viewer-e2e");
    let _ = std::fs::remove_dir_all(&dir);
    let profile = go_heap_profile(&dir.join("go"));
    // A truncated gzip: a real-looking file that is broken.
    let bytes = std::fs::read(&profile).expect("profile");
    let malformed = dir.join("truncated.pb.gz");
    std::fs::write(&malformed, &bytes[..bytes.len() / 2]).expect("write");
    let source = repo_root().join("tests/go/heapalloc/main.go");

    let script = repo_root().join("tests/browser/viewer_e2e.mjs");
    run(Command::new("node")
        .arg(&script)
        .arg(&www)
        .arg(&profile)
        .arg(&malformed)
        .arg(&source)
        .arg(&dir)
        .env("HEAPSNAP_NODE_MODULES", &nm));
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("result.json")).expect("result.json"),
    )
    .expect("result.json is JSON");
    eprintln!("screenshots: {}/{{flame,top,source}}.png", dir.display());

    assert_eq!(
        result["errors"],
        Value::Array(vec![]),
        "uncaught errors in the page"
    );
    let err = result["malformedError"].as_str().unwrap_or_default();
    assert!(
        err.contains("truncated.pb.gz") && err.contains("gzip"),
        "malformed file error: {err:?}"
    );
    assert_eq!(
        result["errorAfterGoodFile"],
        Value::Bool(false),
        "the error stays after a good file"
    );

    let types: Vec<&str> = result["sampleTypes"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        types,
        [
            "alloc_objects",
            "alloc_space",
            "inuse_objects",
            "inuse_space"
        ]
    );
    assert_eq!(
        result["defaultSampleType"], "inuse_space",
        "pprof's default: the last sample type"
    );
    for st in &types {
        let text = pprof(
            &[
                "-top",
                "-nodefraction=0",
                "-unit=bytes",
                &format!("-sample_index={st}"),
            ],
            &profile,
        );
        let theirs = parse_pprof_top(&text);
        assert!(
            theirs.len() >= 5,
            "pprof printed too few rows for {st}:\n{text}"
        );
        assert_same_table(st, &page_rows(&result["tables"][st]), &theirs);
        let painted = result["flamePixels"][st]["painted"].as_u64().unwrap_or(0);
        assert!(
            painted > 2000,
            "{st}: the flame canvas is (nearly) blank: {} painted pixels",
            painted
        );
    }

    let focus = parse_pprof_top(&pprof(
        &[
            "-top",
            "-nodefraction=0",
            "-unit=bytes",
            "-sample_index=inuse_space",
            "-focus=main\\.nested",
        ],
        &profile,
    ));
    assert_same_table(
        "focus main\\.nested",
        &page_rows(&result["focusNested"]),
        &focus,
    );
    assert_same_table(
        "focus (?i)MAIN\\.NESTED",
        &page_rows(&result["focusCaseless"]),
        &focus,
    );
    let bad = result["badFocusError"].as_str().unwrap_or_default();
    assert!(
        bad.contains("focus is not a valid regular expression") && bad.contains("main("),
        "bad focus error: {bad:?}"
    );
    assert_eq!(
        result["badFocusRows"].as_u64(),
        result["tables"]["inuse_space"]
            .as_array()
            .map(|a| a.len() as u64),
        "a bad focus filters nothing"
    );

    let mut by_name: Vec<String> = result["tables"]["inuse_space"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    by_name.sort();
    by_name.reverse();
    let sorted: Vec<String> = result["sortedByName"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sorted.iter().collect::<std::collections::BTreeSet<_>>(),
        by_name.iter().collect(),
        "sorting lost rows"
    );
    assert!(
        sorted == by_name || sorted.iter().rev().eq(by_name.iter()),
        "name sort: {sorted:?}"
    );

    let tip = result["tooltip"].as_str().unwrap_or_default();
    assert!(
        tip.contains('%') && tip.contains("main"),
        "hover tooltip: {tip:?}"
    );

    let without = result["sourceWithoutText"].as_str().unwrap_or_default();
    assert!(
        without.contains("main.leakLarge") && without.contains("Drop main.go"),
        "source view without text: {without:?}"
    );
    let hot = result["sourceHotLines"].as_array().expect("hot lines");
    let leak_flat = page_rows(&result["tables"]["inuse_space"])
        .iter()
        .find(|r| r.name == "main.leakLarge")
        .unwrap()
        .flat;
    assert_eq!(
        hot.iter()
            .map(|l| l["flat"].as_i64().unwrap_or(0))
            .sum::<i64>(),
        leak_flat,
        "source lines' flat sum"
    );
    assert!(
        hot.iter().any(|l| l["code"]
            .as_str()
            .unwrap_or_default()
            .contains("make([]byte, 1<<20)")),
        "the hot line shows the allocating code: {hot:?}"
    );

    let after = &result["afterReload"];
    assert_eq!(
        after["sampleType"], "alloc_space",
        "sample type survives a reload ({})",
        after["hash"]
    );
    assert_eq!(after["ignore"], "churn");
    assert!(
        !after["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "main.churn"),
        "ignore=churn still applied after reload"
    );
    assert!(
        result["zoomCrumbs"].as_array().map_or(0, Vec::len) >= 2,
        "click did not zoom: {}",
        result["zoomCrumbs"]
    );
    assert_eq!(
        result["cspBlocksOtherOrigins"],
        Value::Bool(true),
        "a fetch to another origin was not blocked by the CSP"
    );
    assert!(result["dropped"].as_str().unwrap_or_default().contains("dropped.pb.gz"), "drag and drop opened the file");
    let old = result["noDecompressionStreamError"]
        .as_str()
        .unwrap_or_default();
    assert!(
        old.contains("go-heap.pb.gz: this browser cannot inflate gzip") && old.contains("gunzip"),
        "error without DecompressionStream: {old:?}"
    );
    let pre = &result["preload"];
    assert_eq!(pre["view"], "flame", "?profile= opens in the flame graph");
    assert!(
        pre["status"].as_str().unwrap_or_default().contains("preload.pb.gz"),
        "?profile= loaded the served file: {pre}"
    );
    for shot in ["flame.png", "top.png", "source.png"] {
        assert!(
            dir.join(shot)
                .metadata()
                .map(|m| m.len() > 10_000)
                .unwrap_or(false),
            "screenshot {shot} missing or empty"
        );
    }
}
