//! The viewer opens every input format the CLI reads, in real headless Chromium: files
//! that are not pprof (a heapsnap snapshot, a truncated one, gperftools heap and CPU,
//! jemalloc, Go `debug=1` heap, goroutine, a program's own count profile, block and
//! mutex text, Java heapz and contentionz text, folded stacks) go through the importer module, loaded in a worker only then (`www/import-worker.js`, `viewer-import`), and must show the same
//! top table as `go tool pprof -top` shows for what `heapsnap convert` makes of the
//! same file, or the same error the CLI gives. A plain pprof profile never loads the
//! importer. (The firmware snapshot dropped with its ELF, symbolized in the browser,
//! is in `firmware_e2e.rs`, which has the firmware.)
//!
//! Needs the bundle (`cargo xtask viewer`; `HEAPSNAP_WWW` = its `www/`), Chromium and
//! playwright-core (`cargo xtask test` installs both).

use e2e::{
    assert_same_table, go_heap_profile, heapsnap, page_rows, parse_pprof_top, pprof, repo_root,
    run, target_dir,
};
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden(name: &str) -> PathBuf {
    repo_root().join("profile/tests/golden").join(name)
}

/// What the CLI makes of `input` (`heapsnap convert --no-local`: the browser has no
/// local files to find mapped programs in), as pprof's `-top` rows for `sample_type`,
/// printed in `unit` (the sample type's own: the page shows values unscaled).
fn cli_rows(input: &Path, sample_type: &str, unit: &str, dir: &Path) -> Vec<e2e::TopRow> {
    let name = input.file_name().unwrap().to_string_lossy();
    let pb = dir.join(format!("{name}.pb.gz"));
    run(Command::new(heapsnap())
        .args(["convert", "--no-local", "-o"])
        .arg(&pb)
        .arg(input));
    let text = pprof(
        &[
            "-top",
            "-nodefraction=0",
            // Exact values: times in their own unit, the rest as plain numbers.
            &format!("-unit={unit}"),
            // The profile as converted: pprof would otherwise symbolize addresses
            // from any program on this machine that a mapping names.
            "-symbolize=none",
            &format!("-sample_index={sample_type}"),
        ],
        &pb,
    );
    parse_pprof_top(&text)
}

#[test]
fn every_format_the_cli_reads_opens_in_the_viewer_with_the_same_top_table() {
    let dir = target_dir().join("viewer-import");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let inputs = [
        ("snapshot", golden("host.snap")),
        ("firmware", golden("firmware.snap")),
        ("gperftools", golden("gperftools.heap")),
        ("jemalloc", golden("jemalloc.heap")),
        ("go_text", golden("go.heap")),
        ("folded", golden("gperftools.folded")),
        ("cpu", golden("gperftools.cpu")),
        ("goroutine", golden("go.goroutine")),
        ("custom", golden("go.custom")),
        ("java_heap", golden("java.heapz")),
        ("java_contention", golden("java.contentionz")),
        ("block", golden("go.block")),
        ("mutex", golden("go.mutex")),
    ];
    // A snapshot cut short: the CLI's error, with its offset.
    let snap = std::fs::read(golden("host.snap")).unwrap();
    let truncated = dir.join("truncated.snap");
    std::fs::write(&truncated, &snap[..snap.len() / 2]).unwrap();
    // A plain pprof profile: decoded by the viewer itself, no importer.
    let pprof_file = go_heap_profile(&dir);

    let mut cases: Vec<(&str, Vec<&Path>)> = inputs
        .iter()
        .map(|(name, f)| (*name, vec![f.as_path()]))
        .collect();
    cases.push(("truncated", vec![truncated.as_path()]));
    cases.push(("pprof", vec![pprof_file.as_path()]));
    let result = e2e::open_in_viewer(&dir, &cases);

    for (name, f) in &inputs {
        let case = &result[name];
        assert!(
            case["error"].is_null(),
            "{name}: the viewer refused {}: {}",
            f.display(),
            case["error"]
        );
        assert_eq!(case["importer"], 1, "{name}: not read by the importer");
        assert_eq!(case["answers"], 2, "{name}: the page stopped answering");
        // Every sample type; the default one is what the page opened with.
        let default = case["sampleType"].as_str().expect("a sample type");
        assert_eq!(
            page_rows(&case["top"]),
            page_rows(&case["tops"][default]),
            "{name}: the default type's table"
        );
        let types = case["sampleTypes"].as_array().expect("sample types");
        assert!(!types.is_empty(), "{name}: no sample types");
        for st in types.iter().filter_map(|t| t.as_str()) {
            let unit = match (*name, st) {
                ("java_contention", "delay") => "us",
                (_, "cpu" | "delay") => "ns",
                _ => "bytes",
            };
            let theirs = cli_rows(f, st, unit, &dir);
            assert!(!theirs.is_empty(), "{name}: pprof shows no rows for {st}");
            assert_same_table(
                &format!("{name} ({st})"),
                &page_rows(&case["tops"][st]),
                &theirs,
            );
        }
    }

    // A program's own count profile shows under its own type name, as pprof's `Type:`.
    assert_eq!(
        result["custom"]["sampleTypes"],
        serde_json::json!(["example.com/conns"]),
        "the custom count profile's sample types"
    );

    // The CLI's own error for the truncated snapshot, named by the file.
    let out = Command::new(heapsnap())
        .arg("top")
        .arg(&truncated)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the CLI took a truncated snapshot");
    let cli = String::from_utf8_lossy(&out.stderr);
    let why = cli
        .lines()
        .find_map(|l| l.split_once("truncated.snap: ").map(|(_, w)| w.trim()))
        .unwrap_or_else(|| panic!("the CLI's error names no file: {cli}"));
    let page = result["truncated"]["error"].as_str().unwrap_or_default();
    assert!(
        page.contains("truncated.snap") && page.contains(why) && page.contains("truncated"),
        "the viewer's error {page:?} is not the CLI's {why:?}"
    );

    let p = &result["pprof"];
    assert!(p["error"].is_null(), "pprof refused: {}", p["error"]);
    assert_eq!(p["importer"], 0, "a pprof profile loaded the importer");
}
