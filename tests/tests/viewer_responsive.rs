//! A big good profile in the viewer (issue 12), in real headless Chromium: the viewer
//! benchmark's 550k-sample profile (50k distinct stacks, 52 MB raw, 38 MB gzipped; its
//! first flame graph has 1.4M nodes), raw and gzipped. While it loads — decoded,
//! indexed, its flame tree built, drawn — the page keeps answering: no task on its main
//! thread (the browser's own long-task entries) and no lateness of a 20 ms timer in it
//! over 150 ms, and every round trip into the page from the test, asked every 20 ms,
//! within 400 ms (that one also waits on the test's and the browser's processes, which
//! on two loaded cores alone has taken 257 ms with no task over 97 ms). Indexing and
//! building the flame tree in one go once took a single task of 0.5–0.8 s, and round
//! trips of 552–702 ms. The long tasks are printed, each placed among the load's
//! performance marks.

use e2e::{browser_script, target_dir, www};
use serde_json::Value;

/// The longest a task on the page's main thread, or a timer's lateness, may be while
/// loading (the bound for answering: 100 ms, with room for a loaded machine's
/// noise). Measured on an idle 2-core machine: tasks of 50 ms at most, the timer up to
/// 70 ms late. When each stage of the load timed its slices from its own start (the
/// stages' ends ran together) and the first flame tree read every sample's stack in
/// one go (40 ms): tasks of 80–110 ms, the timer 150–180 ms late, and 206 ms on a CI
/// run.
const MAX_MS: f64 = 150.0;
/// The longest a round trip into the page from the test may take (see the module doc).
const MAX_TRIP_MS: f64 = 400.0;

#[test]
fn a_big_profile_loads_while_the_page_keeps_answering() {
    let www = www();
    let dir = target_dir().join("viewer-responsive");
    let _ = std::fs::remove_dir_all(&dir);
    // The benchmark's own files, generated once and shared with `cargo xtask bench-viewer`.
    let profiles = target_dir().join("bench-viewer");
    let r = browser_script(
        "viewer_responsive.mjs",
        &[www.as_os_str(), dir.as_os_str(), profiles.as_os_str()],
        &dir,
    );
    assert_eq!(
        r["errors"],
        Value::Array(vec![]),
        "uncaught errors in the page"
    );
    let files = r["files"].as_array().expect("files");
    assert_eq!(files.len(), 2, "the raw and the gzipped profile");
    for f in files {
        let name = f["name"].as_str().unwrap_or_default();
        let marks: Vec<(&str, f64)> = f["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m[0].as_str().unwrap(), m[1].as_f64().unwrap()))
            .collect();
        let t0 = marks
            .iter()
            .find(|m| m.0 == "file-selected")
            .map_or(0.0, |m| m.1);
        let at = |name: &str| {
            marks
                .iter()
                .find(|m| m.0 == name)
                .map_or(f64::NAN, |m| m.1 - t0)
        };
        let (ping, late) = (
            f["maxPingMs"].as_f64().unwrap(),
            f["lateMs"].as_f64().unwrap(),
        );
        eprintln!(
            "{name}: flame graph painted after {:.0} ms (decoded {:.0}, indexed {:.0}, \
             flame tree {:.0}); {} answers, slowest {ping:.0} ms; timer late by {late:.0} ms at most",
            at("flame-painted"),
            at("decoded"),
            at("indexed"),
            at("flame-built"),
            f["pings"]
        );
        for t in f["longTasks"].as_array().unwrap() {
            eprintln!(
                "  long task at {:.0} ms: {:.0} ms (after {}, before {})",
                t["start"].as_f64().unwrap() - t0,
                t["duration"].as_f64().unwrap(),
                t["after"].as_str().unwrap_or_default(),
                t["before"].as_str().unwrap_or_default()
            );
        }
        assert!(f["error"].is_null(), "{name}: {}", f["error"]);
        // A big gzipped file is inflated off the main thread, in www/inflate-worker.js.
        assert_eq!(
            at("inflate-worker").is_nan(),
            !name.ends_with(".gz"),
            "{name}: the inflate worker must run for the gzipped file, and only for it"
        );
        assert!(
            f["pixels"].as_u64().unwrap_or(0) > 1000,
            "{name}: the flame graph was not painted"
        );
        let longest = f["longTasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["duration"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(
            longest < MAX_MS,
            "{name}: a task of {longest:.0} ms on the page's main thread while loading"
        );
        assert!(
            ping < MAX_TRIP_MS,
            "{name}: the page took {ping:.0} ms to answer while loading"
        );
        assert!(
            late < MAX_MS,
            "{name}: a 20 ms timer fired {late:.0} ms late while loading"
        );
    }
}
