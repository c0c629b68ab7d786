//! The viewer's diff view in real headless Chromium against `go tool pprof -diff_base`:
//! two heap profiles of one Go process, written by Go's own runtime before and after
//! some memory is released and more is kept, are opened the way a user does (the new
//! one through "Open profile…", the base through "Compare with base…"). For every
//! sample type every top-table row must equal what
//! `go tool pprof -top -nodefraction=0 -diff_base=BASE NEW` prints; the flame graph is
//! painted in the growth colour where pprof shows growth and in the shrinkage colour
//! where it shows shrinkage; clearing the base brings back the plain profile's numbers
//! (`go tool pprof -top NEW`). A base dropped on "Compare with base…", and both files
//! picked at once (the older is the base), give the same diff; a
//! `#profile=URL&base=URL` link opens it and keeps it across a reload.
//!
//! Needs the bundle (`cargo xtask viewer`; `HEAPSNAP_WWW` = its `www/`), Chromium and
//! playwright-core (`cargo xtask test` installs both). Missing pieces fail the test with
//! a message; nothing is skipped. Screenshots: `target/viewer-diff/diff.png` (flame
//! graph) and `diff-top.png`.

use e2e::{
    assert_same_table, browser_script, go_heap_profile_pair, go_heap_sample_types, page_rows,
    parse_pprof_top, pprof, target_dir, www, TopRow,
};
use heapsnap_profile::analysis::format_value;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;

/// The focus filter tried on the diff: one function that shrank, one that grew.
const FOCUS: &str = r"main\.(leakLarge|nested)$";

/// `go tool pprof -top -nodefraction=0 -unit=bytes -sample_index=ST [-diff_base=BASE]
/// [EXTRA…] NEW`.
fn pprof_top(st: &str, base: Option<&Path>, new: &Path) -> Vec<TopRow> {
    pprof_top_with(st, base, new, &[])
}

fn pprof_top_with(st: &str, base: Option<&Path>, new: &Path, extra: &[&str]) -> Vec<TopRow> {
    let mut args = vec![
        "-top".to_owned(),
        "-nodefraction=0".to_owned(),
        "-unit=bytes".to_owned(),
        format!("-sample_index={st}"),
    ];
    if let Some(b) = base {
        args.push(format!("-diff_base={}", b.display()));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = pprof(&args, new);
    let rows = parse_pprof_top(&text);
    assert!(
        rows.len() >= 5,
        "pprof printed too few rows for {st}:\n{text}"
    );
    rows
}

fn count(v: &Value, what: &str) -> u64 {
    v[what]
        .as_u64()
        .unwrap_or_else(|| panic!("no {what} count in {v}"))
}

#[test]
fn viewer_diff_against_a_base_equals_pprof_diff_base() {
    let www = www();
    let dir = target_dir().join("viewer-diff");
    let _ = std::fs::remove_dir_all(&dir);
    let (base, new) = go_heap_profile_pair(&dir.join("go"));

    let result = browser_script(
        "viewer_diff.mjs",
        &[
            www.as_os_str(),
            base.as_os_str(),
            new.as_os_str(),
            dir.as_os_str(),
            OsStr::new(FOCUS),
        ],
        &dir,
    );
    eprintln!("screenshots: {}/diff{{,-top}}.png", dir.display());

    assert_eq!(
        result["errors"],
        Value::Array(vec![]),
        "uncaught errors in the page"
    );
    assert_eq!(
        result["consoleErrors"],
        Value::Array(vec![]),
        "errors on the console"
    );
    let types = go_heap_sample_types(&result);

    let status = result["diffStatus"].as_str().unwrap_or_default();
    assert!(
        status.contains("go-new.pb.gz − go-base.pb.gz"),
        "the status does not name new − base: {status:?}"
    );
    assert!(
        result["chip"]
            .as_str()
            .unwrap_or_default()
            .contains("go-base.pb.gz"),
        "base chip: {}",
        result["chip"]
    );
    assert_eq!(result["legend"], Value::Bool(true), "no grew/shrank legend");

    let mut shrinkage_seen = false;
    for st in &types {
        let theirs = pprof_top(st, Some(&base), &new);
        assert_same_table(
            &format!("diff, {st}"),
            &page_rows(&result["diff"]["tables"][st]),
            &theirs,
        );
        // The fixture changes in both directions where that is possible: alloc_* only
        // grow (they count every allocation since the start), inuse_* also shrink.
        let grew = theirs.iter().any(|r| r.flat > 0);
        let shrank = theirs.iter().any(|r| r.flat < 0);
        assert!(grew, "{st}: nothing grew in the fixture");
        assert_eq!(
            shrank,
            st.starts_with("inuse"),
            "{st}: the fixture should shrink exactly in the inuse types"
        );
        shrinkage_seen |= shrank;

        let px = &result["diff"]["pixels"][st];
        assert!(
            count(px, "painted") > 2000,
            "{st}: the diff flame graph is (nearly) blank: {px}"
        );
        assert!(
            count(px, "grew") > 2000,
            "{st}: pprof shows growth but the flame graph has (almost) no growth red: {px}"
        );
        if shrank {
            assert!(
                count(px, "shrank") > 2000,
                "{st}: pprof shows shrinkage but the flame graph has (almost) no shrinkage blue: {px}"
            );
        } else {
            assert_eq!(
                count(px, "shrank"),
                0,
                "{st}: nothing shrank but the flame graph shows shrinkage blue: {px}"
            );
        }
        // main.leakLarge and main.buffers allocated the same in both (they only
        // released memory): pprof leaves them out of the diff, the flame graph draws
        // them (wide: new + base) in the no-change grey, not in a growth tint.
        if st.starts_with("alloc") {
            for f in ["main.leakLarge", "main.buffers"] {
                assert!(
                    !theirs.iter().any(|r| r.name == f),
                    "{st}: {f} changed in the fixture"
                );
            }
            assert!(
                count(px, "unchanged") > 2000,
                "{st}: the unchanged frames are not drawn in the no-change grey: {px}"
            );
        }
        assert!(
            count(px, "warm") < count(px, "grew") / 10,
            "{st}: the diff flame graph is painted in the plain (non-diff) colours: {px}"
        );
    }
    assert!(shrinkage_seen);

    // Hovering runtime.main (second row, middle): its change, new and base values are
    // its cum in the diff, in the new profile and in the base.
    let tip = result["tooltip"].as_str().unwrap_or_default();
    let cum_of = |rows: &[TopRow]| {
        rows.iter()
            .find(|r| r.name == "runtime.main")
            .unwrap_or_else(|| panic!("no runtime.main in pprof's top"))
            .cum
    };
    let inuse = pprof_top("inuse_space", Some(&base), &new);
    let (change, in_new, in_base) = (
        cum_of(&inuse),
        cum_of(&pprof_top("inuse_space", None, &new)),
        cum_of(&pprof_top("inuse_space", None, &base)),
    );
    assert_eq!(change, in_new - in_base);
    for want in [
        format!("runtime.mainchange {}", format_value(change, "bytes")),
        format!(
            "new {} · base {}",
            format_value(in_new, "bytes"),
            format_value(in_base, "bytes")
        ),
    ] {
        assert!(tip.contains(&want), "diff tooltip {tip:?} lacks {want:?}");
    }

    assert_same_table(
        &format!("diff, inuse_space, focus {FOCUS}"),
        &page_rows(&result["diffFocused"]),
        &pprof_top_with(
            "inuse_space",
            Some(&base),
            &new,
            &[&format!("-focus={FOCUS}")],
        ),
    );

    // Clearing the base: the plain profile's numbers and colours.
    let cleared = result["clearedStatus"].as_str().unwrap_or_default();
    assert_eq!(
        cleared,
        result["plainStatus"].as_str().unwrap_or("?"),
        "the status after clearing the base is not the plain profile's"
    );
    assert_eq!(
        result["chipAfterClear"],
        Value::Bool(false),
        "base chip stays"
    );
    assert_eq!(
        result["legendAfterClear"],
        Value::Bool(false),
        "legend stays"
    );
    for st in &types {
        assert_same_table(
            &format!("base cleared, {st}"),
            &page_rows(&result["plain"]["tables"][st]),
            &pprof_top(st, None, &new),
        );
        let px = &result["plain"]["pixels"][st];
        assert_eq!(
            count(px, "shrank"),
            0,
            "{st}: shrinkage blue without a base: {px}"
        );
        assert!(
            count(px, "unchanged") < 500,
            "{st}: no-change grey without a base: {px}"
        );
        assert!(
            count(px, "warm") > 2000,
            "{st}: the plain colours are not back: {px}"
        );
    }

    // The same diff from a base dropped on "Compare with base…" and from both files
    // picked at once (new first; the base is the older).
    let dropped = &result["droppedOnBase"];
    assert!(
        dropped["status"]
            .as_str()
            .unwrap_or_default()
            .contains("go-new.pb.gz − dropped-base.pb.gz"),
        "drop on Compare with base: {}",
        dropped["status"]
    );
    assert_same_table("dropped base", &page_rows(&dropped["table"]), &inuse);
    let together = &result["pickedTogether"];
    assert!(
        together["status"]
            .as_str()
            .unwrap_or_default()
            .contains("go-new.pb.gz − go-base.pb.gz"),
        "two files at once: the older should be the base: {}",
        together["status"]
    );
    assert_same_table("two files at once", &page_rows(&together["table"]), &inuse);

    // The diff link keeps its base across the app's hash rewrites and a reload, and
    // loses it when the base is cleared.
    let link = &result["link"];
    for (when, st) in [("opened", "inuse_space"), ("reloaded", "alloc_space")] {
        let s = link[when]["status"].as_str().unwrap_or_default();
        assert!(
            s.contains("demo/new.pb.gz − demo/base.pb.gz") && s.contains(&format!("{st}:")),
            "#profile=…&base=… link, {when}: {s:?} (hash {})",
            link[when]["hash"]
        );
    }
    let hash = link["cleared"]["hash"].as_str().unwrap_or("(not cleared)");
    assert!(
        hash.contains("profile=demo") && !hash.contains("base="),
        "the link after clearing the base: {hash}"
    );

    for shot in ["diff.png", "diff-top.png"] {
        assert!(
            dir.join(shot)
                .metadata()
                .map(|m| m.len() > 10_000)
                .unwrap_or(false),
            "screenshot {shot} missing or empty"
        );
    }
}
