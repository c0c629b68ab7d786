//! The viewer reads a pprof file as `go tool pprof` does, in real headless Chromium:
//! every profile of the parity corpus (written by Go code with pprof's own `profile`
//! package and Go's runtime: `drop_frames`/`keep_frames`, inlined and partially
//! inlined functions, names that are not UTF-8, every runtime profile) is opened
//! through the page's file input, and for every sample type the top table equals
//! `go tool pprof -top -nodefraction=0` row for row. pprof prunes a profile's
//! `drop_frames` on reading; a viewer that showed `malloc` and `operator new` where
//! pprof shows the allocating function would disagree on every row here.
//!
//! (The CLI's parity with the same corpus, including the custom units this test leaves
//! out because pprof prints them rounded, is `pprof_parity.rs`.)
//!
//! Needs the bundle (`cargo xtask viewer`; `HEAPSNAP_WWW` = its `www/`), Chromium and
//! playwright-core (`cargo xtask test` installs both).

use e2e::{
    assert_same_table, go_profile_corpus, open_in_viewer, page_rows, parse_pprof_top, pprof,
    target_dir,
};
use std::path::PathBuf;

#[test]
fn viewer_top_tables_equal_pprof_on_the_parity_corpus() {
    let dir = target_dir().join("viewer-pprof-parity");
    let _ = std::fs::remove_dir_all(&dir);
    let corpus = go_profile_corpus(&dir.join("go"));
    // Exactly printed by pprof with `-unit=bytes` / `-unit=ns`: bytes, counts and
    // nanoseconds (units.pb.gz's widgets and hours are rounded by pprof's printer).
    let files: Vec<PathBuf> = corpus
        .iter()
        .filter(|f| {
            let n = f.file_name().unwrap().to_string_lossy();
            !n.starts_with("units")
        })
        .cloned()
        .collect();
    for needed in ["frames.pb.gz", "utf8.pb.gz", "heap.pb.gz", "cpu.pb.gz"] {
        assert!(
            files.iter().any(|f| f.ends_with(needed)),
            "{needed} is not in the corpus {corpus:?}"
        );
    }
    let name = |f: &PathBuf| f.file_name().unwrap().to_string_lossy().replace('.', "_");
    let names: Vec<String> = files.iter().map(name).collect();
    let cases: Vec<(&str, Vec<&std::path::Path>)> = names
        .iter()
        .zip(&files)
        .map(|(n, f)| (n.as_str(), vec![f.as_path()]))
        .collect();
    let result = open_in_viewer(&dir, &cases);

    let mut compared = 0;
    for f in &files {
        let case = &result[name(f)];
        assert!(
            case["error"].is_null(),
            "the viewer refused {}: {}",
            f.display(),
            case["error"]
        );
        assert_eq!(
            case["importer"],
            0,
            "{}: a pprof file went through the importer",
            f.display()
        );
        let types = case["sampleTypes"].as_array().expect("sample types");
        assert!(!types.is_empty(), "{}: no sample types", f.display());
        for (i, st) in types.iter().enumerate() {
            let st = st.as_str().expect("a sample type name");
            // By index: utf8.pb.gz's first type is not valid UTF-8 in the file.
            let text = pprof(
                &[
                    "-top",
                    "-nodefraction=0",
                    "-symbolize=none",
                    "-unit=bytes",
                    &format!("-sample_index={i}"),
                ],
                f,
            );
            // Times are printed in their own unit by `-unit=bytes`; ask again in ns.
            let text = if text.lines().any(|l| l.starts_with("Type:")) && parse_top(&text).is_none()
            {
                pprof(
                    &[
                        "-top",
                        "-nodefraction=0",
                        "-symbolize=none",
                        "-unit=ns",
                        &format!("-sample_index={i}"),
                    ],
                    f,
                )
            } else {
                text
            };
            let theirs = parse_top(&text).unwrap_or_else(|| {
                panic!(
                    "{} ({st}): pprof's values are rounded:\n{text}",
                    f.display()
                )
            });
            assert_same_table(
                &format!("{} ({st})", f.display()),
                &page_rows(&case["tops"][st]),
                &theirs,
            );
            compared += 1;
        }
    }
    assert!(compared >= 15, "only {compared} tables compared");
}

/// pprof's rows, if every value it printed is exact (an integer and its unit).
fn parse_top(text: &str) -> Option<Vec<e2e::TopRow>> {
    let exact = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .all(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() >= 6
                && [f[0], f[3]].iter().all(|v| {
                    v.trim_end_matches(|c: char| c.is_ascii_alphabetic())
                        .parse::<i64>()
                        .is_ok()
                })
        });
    exact.then(|| parse_pprof_top(text))
}
