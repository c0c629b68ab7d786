//! Bad device input in the browser (issue 14's "bad input"), in real headless Chromium
//! on the QEMU firmware's own output: an ELF from another build than the snapshot's, a
//! capture in which no frame is good, and a 2 GiB capture. Each must give, in the page,
//! the error the CLI gives for the same files (what, which file, the build ids, the
//! frames and why the last one failed). The 2 GiB capture the page streams, as the CLI
//! does: its chart has the points `heapsnap timeline` lists, its last point's views are
//! those of the same frames read whole, and the importer's memory stays far below the
//! capture's size.
//!
//! Needs `cargo xtask firmware` (`HEAPSNAP_FIRMWARE_OUT`), the bundle (`cargo xtask
//! viewer`), Chromium and playwright-core (`cargo xtask test` provides all).

use e2e::{heapsnap, target_dir};
use sampler_core::snapshot::decode_frames;
use std::path::{Path, PathBuf};
use std::process::Command;

const ELF_NAME: &str = "heapsnap-firmware.elf";

fn firmware_out() -> PathBuf {
    e2e::firmware_output(
        "HEAPSNAP_FIRMWARE_OUT",
        ELF_NAME,
        "cargo xtask firmware",
        "viewer_bad_series",
    )
}

/// The CLI's one-line error for `args` (it must fail), without the `heapsnap: ` prefix.
fn cli_error(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(heapsnap()).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "the CLI did not refuse: {err}");
    let line = err
        .lines()
        .find(|l| !l.contains("warning:"))
        .unwrap_or_default();
    line.strip_prefix("heapsnap: ").unwrap_or(line).to_owned()
}

/// `capture` with one byte flipped inside every frame: each frame is still delimited,
/// none decodes.
fn all_frames_bad(capture: &Path, to: &Path) -> usize {
    let mut bytes = std::fs::read(capture).unwrap();
    let frames = decode_frames(&bytes).frames;
    assert!(
        frames.len() >= 3,
        "the firmware's capture has too few frames"
    );
    for f in &frames {
        let mid = f.offset + f.len / 2;
        bytes[mid] = if bytes[mid] == 0x5a { 0xa5 } else { 0x5a };
    }
    let after = decode_frames(&bytes);
    assert!(
        after.frames.iter().all(|f| f.result.is_err()),
        "a frame survived the damage"
    );
    std::fs::write(to, &bytes).unwrap();
    after.bad_count()
}

#[test]
fn the_page_gives_the_clis_errors_for_a_wrong_elf_and_no_good_frame_and_charts_a_2_gib_capture() {
    let out = firmware_out();
    let dir = target_dir().join("viewer-bad-series");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let elf = out.join(ELF_NAME);

    // Another build's ELF: the optimization matrix's o3 snapshot with the os ELF.
    let matrix = out.join("matrix");
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(matrix.join("o3-nolto"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    snaps.sort();
    let snap = snaps.pop().expect("a snapshot of the o3 build");
    let wrong = matrix.join("os-nolto").join(ELF_NAME);
    let wrong_elf_cli = cli_error(&[
        "top".as_ref(),
        "--elf".as_ref(),
        wrong.as_os_str(),
        snap.as_os_str(),
    ]);
    assert!(wrong_elf_cli.contains("different build"), "{wrong_elf_cli}");

    // A capture with no good frame.
    let bad = dir.join("all-bad.cobs");
    let bad_frames = all_frames_bad(&out.join("capture.cobs"), &bad);
    let no_good_cli = cli_error(&["timeline".as_ref(), bad.as_os_str()]);

    // 2 GiB, sparse: a real capture, then a hole.
    let huge = dir.join("huge.cobs");
    {
        let f = std::fs::File::create(&huge).unwrap();
        std::io::Write::write_all(&mut &f, &std::fs::read(out.join("capture.cobs")).unwrap())
            .unwrap();
        f.set_len(2 << 30).unwrap();
    }
    // The CLI streams it (bounded memory), and so does the page.
    let timeline = e2e::run(
        Command::new(heapsnap())
            .args(["timeline", "--format", "csv", "--elf"])
            .arg(&elf)
            .arg(&huge),
    );
    let rows = timeline
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .count();
    assert!(rows >= 3, "{timeline}");
    // The same frames gzipped: a capture the page holds whole (no streaming).
    let gz = dir.join("capture.cobs.gz");
    {
        use std::io::Write;
        let mut w = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        w.write_all(&std::fs::read(out.join("capture.cobs")).unwrap())
            .unwrap();
        w.finish().unwrap();
    }

    let result = e2e::open_in_viewer(
        &dir,
        &[
            ("wrong_elf", vec![snap.as_path(), wrong.as_path()]),
            ("no_good", vec![bad.as_path(), elf.as_path()]),
            ("series_huge", vec![huge.as_path(), elf.as_path()]),
            ("series_held", vec![gz.as_path(), elf.as_path()]),
            // The chart asks the importer at once, while the last frame of a streamed
            // capture is still being read from the file: on a slow disk its request
            // came to the handler that reads files, and the page failed with "Cannot
            // read properties of undefined" (seen once in CI). Made slow on purpose.
            ("series_huge_slowread", vec![huge.as_path(), elf.as_path()]),
        ],
    );
    let page = |case: &str| -> String {
        result[case]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{case}: the page showed no error: {}", result[case]))
            .to_owned()
    };
    // The CLI's error names the input paths; the page names the files as picked, and
    // gives no advice about a command-line switch it does not have.
    let same = |case: &str, cli: &str, files: &[&Path]| {
        let shown = page(case);
        let mut cli = cli
            .strip_suffix(" (--force-elf uses it anyway)")
            .unwrap_or(cli)
            .to_owned();
        for f in files {
            let name = f.file_name().unwrap().to_string_lossy();
            cli = cli.replace(&*f.display().to_string(), &name);
        }
        assert!(
            shown.contains(&cli) && !shown.contains("--"),
            "{case}: the page says {shown:?}, the CLI {cli:?}"
        );
    };
    assert!(
        wrong_elf_cli.ends_with("(--force-elf uses it anyway)"),
        "{wrong_elf_cli}"
    );
    same("wrong_elf", &wrong_elf_cli, &[&snap, &wrong]);
    same("no_good", &no_good_cli, &[&bad]);
    assert!(
        no_good_cli.contains(&bad_frames.to_string()),
        "the CLI does not count the bad frames ({bad_frames}): {no_good_cli}"
    );
    let (streamed, held) = (&result["series_huge"], &result["series_held"]);
    let slow = &result["series_huge_slowread"];
    for (case, r) in [
        ("series_huge", streamed),
        ("series_held", held),
        ("series_huge_slowread", slow),
    ] {
        assert!(r["error"].is_null(), "{case}: {}", r["error"]);
        assert_eq!(r["points"], rows, "{case}: the chart's points");
        assert!(
            r["top"].as_array().is_some_and(|t| !t.is_empty()),
            "{case}: no top rows"
        );
    }
    assert!(
        streamed["status"].as_str().unwrap().contains("huge.cobs"),
        "{}",
        streamed["status"]
    );
    // The last point's views: the same frame, streamed or held.
    assert_eq!(streamed["top"], held["top"]);
    assert_eq!(streamed["tops"], held["tops"]);
    assert_eq!(slow["tops"], held["tops"]);
    // Streamed: the importer's memory is bounded by a frame, not the 2 GiB.
    let memory = streamed["phases"]["memory"].as_f64().unwrap();
    assert!(
        memory < (64 << 20) as f64,
        "the importer's wasm memory after a 2 GiB capture: {memory} bytes"
    );
}
