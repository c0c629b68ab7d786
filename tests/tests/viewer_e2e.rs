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

use e2e::{
    assert_same_table, browser_script, go_heap_profile, go_heap_sample_types, page_rows,
    parse_pprof_top, pprof, repo_root, target_dir, www,
};
use serde_json::Value;

#[test]
fn viewer_shows_pprof_top_for_every_sample_type_of_a_go_heap_profile() {
    let www = www();
    let dir = target_dir().join("viewer-e2e");
    let _ = std::fs::remove_dir_all(&dir);
    let profile = go_heap_profile(&dir.join("go"));
    // A truncated gzip: a real-looking file that is broken.
    let bytes = std::fs::read(&profile).expect("profile");
    let malformed = dir.join("truncated.pb.gz");
    std::fs::write(&malformed, &bytes[..bytes.len() / 2]).expect("write");
    let source = repo_root().join("tests/go/heapalloc/main.go");

    let result = browser_script(
        "viewer_e2e.mjs",
        &[
            www.as_os_str(),
            profile.as_os_str(),
            malformed.as_os_str(),
            source.as_os_str(),
            dir.as_os_str(),
        ],
        &dir,
    );
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
    // A small gzipped profile is inflated on the page: a worker's start would cost
    // more than the inflating (a big one takes the worker: viewer_responsive).
    assert!(
        result["workers"]
            .as_array()
            .is_some_and(|w| !w.iter().any(|u| u
                .as_str()
                .is_some_and(|u| u.ends_with("/inflate-worker.js")))),
        "an inflate worker was started for a small file: {}",
        result["workers"]
    );
    assert_eq!(
        result["wholeFileDecodes"],
        Value::from(0),
        "good files must decode while they stream in (since the page's reload: two gzipped, one raw)"
    );
    // The raw protobuf (streamed, no gzip) reads the same as the gzipped file.
    assert!(
        result["gzTable"].as_array().is_some_and(|t| !t.is_empty()),
        "no top table after the drop"
    );
    assert_eq!(
        result["rawTable"], result["gzTable"],
        "raw vs gzipped profile"
    );
    assert_eq!(
        result["errorAfterGoodFile"],
        Value::Bool(false),
        "the error stays after a good file"
    );

    let types = go_heap_sample_types(&result);
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
    assert!(
        result["dropped"]
            .as_str()
            .unwrap_or_default()
            .contains("dropped.pb.gz"),
        "drag and drop opened the file"
    );
    let old = result["noDecompressionStreamError"]
        .as_str()
        .unwrap_or_default();
    assert!(
        old.contains("go-heap.pb.gz: this browser cannot inflate gzip") && old.contains("gunzip"),
        "error without DecompressionStream: {old:?}"
    );
    let trap = result["trapError"].as_str().unwrap_or_default();
    assert!(
        trap.contains("internal error") && trap.contains("unreachable") && trap.contains("Reload"),
        "a wasm trap is reported in the page: {trap:?}"
    );
    let pre = &result["preload"];
    assert_eq!(pre["view"], "flame", "?profile= opens in the flame graph");
    assert!(
        pre["status"]
            .as_str()
            .unwrap_or_default()
            .contains("preload.pb.gz"),
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
