//! The heap over time on real device output: the QEMU firmware's UART capture
//! (`capture.cobs`: the COBS frames it streams over UART0 every 16 messages, stamped
//! with its SysTick clock, recorded by QEMU's `-serial file:` in `cargo xtask firmware`
//! into `HEAPSNAP_FIRMWARE_OUT`) read by `heapsnap timeline` and `heapsnap diff
//! CAPTURE@N`: one row per frame, each figure checked against `heapsnap inspect` of
//! that frame and of the semihosting snapshot file taken at the same cycle, the leak's
//! growth against `heapsnap diff` of the first and last frame. A damaged copy of the
//! capture (a boot banner before it, a corrupted frame in the middle) checks the bad
//! frames and their offsets.
//!
//! Fails (never skips) when the firmware's artifacts are missing: run it through
//! `cargo xtask test`, or `cargo xtask firmware` and set the variable yourself.

use e2e::{heapsnap, run, target_dir};
use heapsnap_profile::analysis::{top, Filter};
use sampler_core::snapshot::{decode, decode_frames};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The ELF copy `cargo xtask firmware` leaves next to the snapshots.
const ELF_NAME: &str = "heapsnap-firmware.elf";
/// The firmware's leak, as its top row names it.
const LEAK: &str = "router::remember_message";

/// The firmware's UART capture.
const CAPTURE_NAME: &str = "capture.cobs";

/// A capture and what the in-memory reader finds in it.
struct Capture {
    path: PathBuf,
    /// Byte offset of each good frame.
    offsets: Vec<usize>,
    /// Cycle and device timestamp (seconds, as the table prints them) of each.
    cycles: Vec<u64>,
    times: Vec<String>,
    /// Byte offset of the corrupted frame, in a damaged copy.
    bad_at: usize,
}

fn read_capture(path: PathBuf, bad_at: usize) -> Capture {
    let bytes = std::fs::read(&path).unwrap();
    let frames = decode_frames(&bytes).frames;
    let (mut offsets, mut cycles, mut times) = (Vec::new(), Vec::new(), Vec::new());
    for f in &frames {
        if let Ok(s) = &f.result {
            offsets.push(f.offset);
            cycles.push(s.cycle);
            let t = s.timestamp.expect("the firmware stamps every frame");
            times.push(format!("{:.6}", t.seconds()));
        }
    }
    Capture {
        path,
        offsets,
        cycles,
        times,
        bad_at,
    }
}

/// The firmware's own capture, as it wrote it: every frame good.
fn uart_capture(out: &Path) -> Capture {
    let cap = read_capture(out.join(CAPTURE_NAME), 0);
    let bytes = std::fs::read(&cap.path).unwrap();
    assert_eq!(
        decode_frames(&bytes).bad_count(),
        0,
        "the UART capture has no bad frame"
    );
    cap
}

/// A boot banner (no delimiter: its own bad frame), then the UART capture with its
/// middle frame followed by a corrupted copy of it.
fn damaged_capture(out: &Path, test: &str) -> Capture {
    let bytes = std::fs::read(out.join(CAPTURE_NAME)).unwrap();
    let frames = decode_frames(&bytes).frames;
    let mut cap = b"boot: heapsnap firmware\r\n".to_vec();
    cap.push(0);
    let mut bad_at = 0;
    for (i, f) in frames.iter().enumerate() {
        let frame = &bytes[f.offset..=f.offset + f.len];
        cap.extend(frame);
        if i == frames.len() / 2 {
            let mut bad = frame.to_vec();
            // A flipped byte inside the frame (never a 0x00, which would split it).
            let mid = bad.len() / 2;
            bad[mid] = if bad[mid] == 0x5a { 0xa5 } else { 0x5a };
            bad_at = cap.len();
            cap.extend(&bad);
        }
    }
    let dir = target_dir().join("firmware-timeline");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}.cobs"));
    std::fs::write(&path, &cap).unwrap();
    read_capture(path, bad_at)
}

fn firmware_out() -> PathBuf {
    e2e::firmware_output(
        "HEAPSNAP_FIRMWARE_OUT",
        ELF_NAME,
        "cargo xtask firmware",
        "firmware_timeline",
    )
}

/// One row of the timeline table or CSV.
#[derive(Debug, PartialEq)]
struct Row {
    index: usize,
    cycle: u64,
    time: String,
    bytes: i64,
    objects: i64,
    offset: usize,
}

fn table_rows(text: &str) -> Vec<Row> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("index"))
        .skip(1)
        .take_while(|l| !l.starts_with("bad frames") && !l.starts_with("top "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Row {
                index: f[0].parse().unwrap(),
                cycle: f[1].parse().unwrap(),
                time: f[2].to_owned(),
                bytes: f[3].parse().unwrap(),
                objects: f[4].parse().unwrap(),
                offset: f[5].parse().unwrap(),
            }
        })
        .collect()
}

fn csv_rows(text: &str) -> Vec<Row> {
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("index,name,offset,cycle,inuse_bytes,inuse_objects,in_use_from,drops,timestamp_ticks,ticks_per_second")
    );
    lines
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 10, "{l}");
            assert_eq!(f[6], "exact", "the firmware counts exact totals: {l}");
            assert_eq!(f[7], "", "the firmware drops nothing: {l}");
            let (ticks, hz): (f64, f64) = (f[8].parse().unwrap(), f[9].parse().unwrap());
            Row {
                index: f[0].parse().unwrap(),
                offset: f[2].parse().unwrap(),
                cycle: f[3].parse().unwrap(),
                time: format!("{:.6}", ticks / hz),
                bytes: f[4].parse().unwrap(),
                objects: f[5].parse().unwrap(),
            }
        })
        .collect()
}

/// The CSV's growth table (after the blank line): (flat, function) by rank.
fn csv_growth(text: &str) -> Vec<(i64, String)> {
    let mut lines = text.lines().skip_while(|l| !l.is_empty()).skip(1);
    assert_eq!(lines.next(), Some("rank,flat,cum,unit,function"), "{text}");
    lines
        .map(|l| {
            let f: Vec<&str> = l.splitn(5, ',').collect();
            assert_eq!(f[3], "bytes", "{l}");
            (f[1].parse().unwrap(), f[4].to_owned())
        })
        .collect()
}

/// `heapsnap inspect`'s exact heap line of an input: (bytes, objects) in use.
fn inspected(input: &str) -> (i64, i64) {
    let text = run(Command::new(heapsnap()).arg("inspect").arg(input));
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("heap (exact)"))
        .unwrap_or_else(|| panic!("no exact heap line in inspect of {input}:\n{text}"));
    // `     6126 bytes in use in 163 objects, peak …`
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[0].parse().unwrap(), w[5].parse().unwrap())
}

fn heapsnap_cmd(args: &[&str], elf: &Path) -> Command {
    let mut c = Command::new(heapsnap());
    c.args(args).arg("--elf").arg(elf);
    c
}

/// The leak's in-use growth in `heapsnap diff A B` (its flat value in the diff's
/// `inuse_space` top table, through the pprof the diff writes).
fn diff_growth(elf: &Path, a: &str, b: &str, name: &str) -> i64 {
    let pb = target_dir().join(format!("firmware-timeline/{name}.pb.gz"));
    std::fs::create_dir_all(pb.parent().unwrap()).unwrap();
    run(heapsnap_cmd(&["diff", a, b], elf).arg("-o").arg(&pb));
    let d = heapsnap_profile::profile::decode(&std::fs::read(&pb).unwrap()).unwrap();
    let i = d.sample_index("inuse_space").unwrap();
    let leak = top(&d, i, &Filter::none())
        .unwrap()
        .rows
        .into_iter()
        .find(|r| r.name.ends_with(LEAK))
        .expect("the leak in the diff");
    leak.flat
}

#[test]
fn uart_capture_timeline_has_a_row_per_frame_and_the_leak_grows_as_diff_says() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let cap = uart_capture(&out);
    let capture = cap.path.to_str().unwrap();
    let text = run(&mut heapsnap_cmd(&["timeline", capture, "-n", "5"], &elf));

    // One row per frame the firmware streamed, in its order, at its offset, with its
    // cycle and device time; more frames than semihosting files (every 16 messages).
    let rows = table_rows(&text);
    let snaps = e2e::firmware_snapshots(&out);
    assert_eq!(rows.len(), cap.offsets.len(), "{text}");
    assert!(rows.len() > snaps.len(), "{text}");
    assert!(
        cap.cycles.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        cap.cycles
    );
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            (r.index, r.cycle, r.offset, r.time.as_str()),
            (i, cap.cycles[i], cap.offsets[i], cap.times[i].as_str())
        );
        // Each row is what inspect says of CAPTURE@i.
        assert_eq!(
            (r.bytes, r.objects),
            inspected(&format!("{capture}@{i}")),
            "row {i}:\n{text}"
        );
    }
    // The device clock runs forward, and so does the heap, by the leak.
    let secs: Vec<f64> = rows.iter().map(|r| r.time.parse().unwrap()).collect();
    assert!(secs.windows(2).all(|w| w[0] < w[1]), "{secs:?}");
    assert!(rows.last().unwrap().bytes > rows[0].bytes, "{text}");
    // The frame streamed at a semihosting file's cycle holds the file's heap.
    for snap in &snaps {
        let cycle = decode(&std::fs::read(snap).unwrap()).unwrap().cycle;
        let r = rows
            .iter()
            .find(|r| r.cycle == cycle)
            .unwrap_or_else(|| panic!("no frame at cycle {cycle}:\n{text}"));
        assert_eq!((r.bytes, r.objects), inspected(snap.to_str().unwrap()));
    }
    assert!(
        text.contains(&format!(
            "{n} snapshot(s): {n} frame(s) in the capture, {n} good, 0 bad",
            n = rows.len()
        )),
        "{text}"
    );
    assert!(text.contains("in use: exact heap totals"), "{text}");

    // The leak's growth is its row in the diff of the first and the last frame.
    let grown = text
        .lines()
        .skip_while(|l| !l.starts_with("top "))
        .find(|l| l.ends_with(LEAK))
        .unwrap_or_else(|| panic!("{LEAK} is not among the growing functions:\n{text}"));
    let grown: i64 = grown.split_whitespace().next().unwrap().parse().unwrap();
    let want = diff_growth(
        &elf,
        &format!("{capture}@0"),
        &format!("{capture}@-1"),
        "uart-first-last",
    );
    assert!(want > 0);
    assert_eq!(grown, want, "{text}");
    let first_grower = text
        .lines()
        .skip_while(|l| !l.starts_with("top "))
        .nth(2)
        .unwrap();
    assert!(first_grower.ends_with(LEAK), "{text}");

    // CSV: the same rows, then the same growth, the leak first.
    let csv = run(&mut heapsnap_cmd(
        &["timeline", "--format", "csv", capture],
        &elf,
    ));
    assert_eq!(csv_rows(&csv), rows, "{csv}");
    let growth = csv_growth(&csv);
    assert!(growth[0].1.ends_with(LEAK), "{csv}");
    assert_eq!(growth[0].0, want, "{csv}");
}

#[test]
fn damaged_capture_keeps_every_good_frame_and_names_the_bad_ones() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let whole = uart_capture(&out);
    let cap = damaged_capture(&out, "damaged");
    let capture = cap.path.to_str().unwrap();
    let text = run(&mut heapsnap_cmd(&["timeline", capture, "-n", "5"], &elf));
    let rows = table_rows(&text);
    assert_eq!(rows.len(), whole.offsets.len(), "{text}");
    let cycles: Vec<u64> = rows.iter().map(|r| r.cycle).collect();
    assert_eq!(cycles, whole.cycles);
    let offsets: Vec<usize> = rows.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, cap.offsets);
    // The bad frames: the banner at 0 and the corrupted one at its offset.
    assert!(text.contains("bad frames (2):"), "{text}");
    let bad: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("bad frames"))
        .skip(1)
        .take(2)
        .collect();
    assert!(bad[0].contains(" offset 0 "), "{bad:?}");
    assert!(
        bad[1].contains(&format!(" offset {} ", cap.bad_at)) && bad[1].contains("checksum"),
        "{bad:?}"
    );
    assert!(
        text.contains(&format!(
            "{} frame(s) in the capture, {} good, 2 bad",
            rows.len() + 2,
            rows.len()
        )),
        "{text}"
    );
}

#[test]
fn diff_of_capture_frames_is_the_diff_of_the_files_at_their_cycles() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let cap = uart_capture(&out);
    let capture = cap.path.to_str().unwrap();
    let snaps = e2e::firmware_snapshots(&out);
    let (first, last) = (&snaps[0], snaps.last().unwrap());
    // The frames streamed at the files' cycles.
    let at = |p: &PathBuf| {
        let c = decode(&std::fs::read(p).unwrap()).unwrap().cycle;
        cap.cycles.iter().position(|&x| x == c).unwrap()
    };
    let (i, j) = (at(first), at(last));
    let files = run(heapsnap_cmd(&["diff"], &elf).arg(first).arg(last));
    let frames = run(&mut heapsnap_cmd(
        &["diff", &format!("{capture}@{i}"), &format!("{capture}@{j}")],
        &elf,
    ));
    assert!(files.contains(LEAK), "{files}");
    // The same report; only the snapshots' header comments differ: the frames are
    // stamped with the device's clock.
    let report = |t: &str| t[t.find("Type: ").unwrap()..].to_owned();
    assert_eq!(report(&frames), report(&files));
    assert!(
        frames.starts_with("heapsnap snapshot v4: ") && frames.contains(" Hz ("),
        "{frames}"
    );
    // A frame of the capture mixed with a plain file.
    let mixed = run(heapsnap_cmd(&["diff", &format!("{capture}@{i}")], &elf).arg(last));
    assert_eq!(report(&mixed), report(&files));

    // A bad index names how many good frames there are.
    let n = cap.offsets.len();
    let o = heapsnap_cmd(
        &["diff", &format!("{capture}@{n}"), &format!("{capture}@0")],
        &elf,
    )
    .output()
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "no good frame @{n}: {capture} has {n} good frame(s) (@0..@{}, or @-{n}..@-1 from the end)",
            n - 1
        )),
        "{err}"
    );
}

#[test]
fn timeline_of_the_snapshot_files_given_out_of_order_is_by_cycle() {
    let out = firmware_out();
    let mut snaps = e2e::firmware_snapshots(&out);
    snaps.reverse();
    let csv = run(Command::new(heapsnap())
        .args(["timeline", "--format", "csv"])
        .args(&snaps));
    let names: Vec<String> = csv
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split(',').nth(1).unwrap().to_owned())
        .collect();
    snaps.reverse();
    let want: Vec<String> = snaps.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(names, want, "{csv}");
}

/// `go tool pprof -top` rows (exact bytes) of what `heapsnap convert --elf` makes of
/// `input` (`CAPTURE@i`), or of its diff against `base`.
fn pprof_rows(input: &str, base: Option<&str>, elf: &Path, dir: &Path) -> Vec<e2e::TopRow> {
    pprof_rows_of(input, base, elf, dir, "inuse_space")
}

/// [`pprof_rows`] for the sample type `sample_index`.
fn pprof_rows_of(
    input: &str,
    base: Option<&str>,
    elf: &Path,
    dir: &Path,
    sample_index: &str,
) -> Vec<e2e::TopRow> {
    let convert = |input: &str, name: &str| {
        let pb = dir.join(name);
        run(heapsnap_cmd(&["convert", input], elf).arg("-o").arg(&pb));
        pb
    };
    let new = convert(input, "new.pb.gz");
    let mut args = vec![
        "-top".to_owned(),
        "-nodefraction=0".to_owned(),
        "-unit=bytes".to_owned(),
        format!("-sample_index={sample_index}"),
    ];
    if let Some(b) = base {
        args.push(format!("-diff_base={}", convert(b, "base.pb.gz").display()));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    e2e::parse_pprof_top(&e2e::pprof(&args, &new))
}

/// The number in `(N B)` of a chart tooltip: the exact in-use bytes of its point.
fn tip_bytes(tip: &serde_json::Value) -> i64 {
    let tip = tip.as_str().expect("a tooltip");
    let end = tip.find(" B)").expect(tip);
    let start = tip[..end].rfind('(').expect(tip) + 1;
    tip[start..end].replace(',', "").parse().expect(tip)
}

#[test]
fn the_viewer_charts_a_capture_and_shows_its_points_and_their_diff() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let cap = damaged_capture(&out, "viewer");
    let capture = cap.path.to_str().unwrap();
    let last = cap.offsets.len() - 1;
    let dir = target_dir().join("firmware-timeline/viewer");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let www = e2e::www();
    let last_arg = last.to_string();
    let args = [
        www.as_os_str(),
        dir.as_os_str(),
        cap.path.as_os_str(),
        elf.as_os_str(),
        "0".as_ref(),
        last_arg.as_ref(),
    ];
    let r = e2e::browser_script("viewer_series.mjs", &args, &dir);
    assert_eq!(
        r["errors"],
        serde_json::json!([]),
        "errors in the page: {r}"
    );

    // One point per good frame; both bad frames marked where they were.
    assert_eq!(r["points"], cap.offsets.len(), "{r}");
    let bad = r["bad"].as_array().unwrap();
    assert_eq!(bad.len(), 2, "{r}");
    assert!(bad[0].as_str().unwrap().contains("offset 0 "), "{r}");
    assert!(
        bad[1]
            .as_str()
            .unwrap()
            .contains(&format!("offset {} ", cap.bad_at)),
        "{r}"
    );
    let head = r["head"].as_str().unwrap();
    assert!(
        head.contains(&format!(
            "{} snapshots of {} frames, 2 bad",
            cap.offsets.len(),
            cap.offsets.len() + 2
        )),
        "{head}"
    );
    // Opens on the last point, whose top table the views show.
    assert_eq!(r["selected"], serde_json::json!([last]), "{r}");

    // The stacked areas are `heapsnap timeline`'s growing functions, in its order.
    let text = run(&mut heapsnap_cmd(&["timeline", capture, "-n", "6"], &elf));
    let growing: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("top "))
        .skip(2)
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    let legend: Vec<&str> = r["legend"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(legend, growing, "{text}");
    assert!(legend[0].ends_with(LEAK), "{legend:?}");

    // In-use bytes at each point shown are the device's, as timeline and inspect say,
    // so the chart rises by what the timeline says.
    let rows = table_rows(&text);
    assert_eq!(tip_bytes(&r["first"]["tip"]), rows[0].bytes, "{r}");
    assert_eq!(tip_bytes(&r["second"]["tip"]), rows[last].bytes, "{r}");
    assert!(rows[last].bytes > rows[0].bytes);

    // A click shows that point: the top table is pprof's of `heapsnap convert CAP@i`.
    for (key, at) in [("first", 0), ("second", last)] {
        let shown = &r[key];
        assert!(
            shown["status"]
                .as_str()
                .unwrap()
                .contains(&format!("viewer.cobs@{at}")),
            "{shown}"
        );
        let theirs = pprof_rows(&format!("{capture}@{at}"), None, &elf, &dir);
        e2e::assert_same_table(key, &e2e::page_rows(&shown["rows"]), &theirs);
    }
    // The opening view (the last point) is the same table.
    let theirs = pprof_rows(&format!("{capture}@{last}"), None, &elf, &dir);
    e2e::assert_same_table("last", &e2e::page_rows(&r["last"]["rows"]), &theirs);

    // Shift-click: the diff of the two points, with the older as the base, equals
    // pprof's -diff_base of the two frames (what `heapsnap diff CAP@0 CAP@-1` says).
    let theirs = pprof_rows(
        &format!("{capture}@{last}"),
        Some(&format!("{capture}@0")),
        &elf,
        &dir,
    );
    e2e::assert_same_table("diff", &e2e::page_rows(&r["diff"]["rows"]), &theirs);
    assert!(
        r["diffBase"].as_str().unwrap().contains("viewer.cobs@0"),
        "{r}"
    );
    let leak = theirs.iter().find(|t| t.name.ends_with(LEAK)).unwrap();
    assert!(leak.flat > 0, "the leak grew: {leak:?}");

    // Peak: the point with the most in use, shown alone (no base left).
    let peak = rows
        .iter()
        .enumerate()
        .max_by_key(|(i, r)| (r.bytes, std::cmp::Reverse(*i)))
        .unwrap()
        .0;
    assert_eq!(r["peak"], serde_json::json!([peak]), "{r}");
    assert_eq!(r["peakBase"], false, "{r}");
    // Objects: the areas are the same functions' object counts, as pprof's
    // inuse_objects table of that point says (0 for a function without a row).
    assert_eq!(r["objectsLegend"], r["legend"], "{r}");
    let tip = r["objectsTip"].as_str().unwrap();
    let theirs = pprof_rows_of(
        &format!("{capture}@{last}"),
        None,
        &elf,
        &dir,
        "inuse_objects",
    );
    for f in &legend {
        let line = tip
            .lines()
            .find(|l| l.strip_prefix(f).is_some_and(|r| r.starts_with(": ")))
            .unwrap_or_else(|| panic!("no line for {f} in the objects tooltip: {tip}"));
        let shown: i64 = line[f.len() + 2..].replace(',', "").parse().expect(line);
        let want = theirs.iter().find(|t| t.name == *f).map_or(0, |t| t.flat);
        assert_eq!(shown, want, "{f} at the last point: {tip}");
    }
    assert!(
        theirs
            .iter()
            .any(|t| legend.contains(&t.name.as_str()) && t.flat > 0),
        "no growing function holds objects at the last point: {theirs:?}"
    );
    // Another file ends the series; the demo's link opens the same chart.
    assert_eq!(r["closed"], true, "{r}");
    assert_eq!(r["linkPoints"], cap.offsets.len(), "{r}");
}

#[test]
fn the_viewer_charts_snapshot_files_opened_together_as_timeline_does() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let snaps = e2e::firmware_snapshots(&out);
    assert!(snaps.len() >= 3, "{snaps:?}");
    let dir = target_dir().join("firmware-timeline/viewer-files");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let www = e2e::www();
    // Given newest first: the series is in cycle order, as `timeline FILES…` orders it.
    let mut given = snaps.clone();
    given.reverse();
    let mut args = vec![www.as_os_str(), dir.as_os_str(), elf.as_os_str()];
    args.extend(given.iter().map(|p| p.as_os_str()));
    // And a series that fails: two snapshots and a file that is not one.
    let junk = dir.join("notes.bin");
    std::fs::write(&junk, b"not a snapshot\n").unwrap();
    let bad: Vec<String> = [&snaps[0], &snaps[1], &junk]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    std::env::set_var("SERIES_BAD", bad.join(","));
    let r = e2e::browser_script("viewer_series_files.mjs", &args, &dir);
    std::env::remove_var("SERIES_BAD");
    assert_eq!(
        r["errors"],
        serde_json::json!([]),
        "errors in the page: {r}"
    );

    let given: Vec<&str> = given.iter().map(|p| p.to_str().unwrap()).collect();
    let csv = run(Command::new(heapsnap())
        .args(["timeline", "--format", "csv"])
        .args(&given));
    // (name, cycle, in-use bytes) per row (plain files: no offset).
    let rows: Vec<(&str, u64, i64)> = csv
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1], f[3].parse().unwrap(), f[4].parse().unwrap())
        })
        .collect();
    assert_eq!(r["points"], rows.len(), "{r}");
    let head = r["head"].as_str().unwrap();
    assert!(
        head.contains(&format!("{n} files: {n} snapshots", n = rows.len())),
        "{head}"
    );
    // Point by point: the file `timeline` lists there, and its in-use bytes.
    let tips = r["tips"].as_array().unwrap();
    for (i, (name, cycle, bytes)) in rows.iter().enumerate() {
        let tip = tips[i].as_str().unwrap();
        let file = Path::new(name).file_name().unwrap().to_str().unwrap();
        let rest = tip.strip_prefix(&format!("#{i} {file} (cycle {cycle}"));
        assert!(
            rest.is_some_and(|r| r.starts_with(')') || r.starts_with(',')),
            "point {i}: {tip}"
        );
        assert_eq!(tip_bytes(&tips[i]), *bytes, "point {i}: {tip}");
    }
    // In cycle order, which is the files' name order here.
    let cycles: Vec<u64> = rows.iter().map(|r| r.1).collect();
    assert!(cycles.windows(2).all(|w| w[0] < w[1]), "{csv}");
    // Opens on the last point: pprof's table of that file converted with the ELF.
    let last = rows.len() - 1;
    assert_eq!(r["selected"], serde_json::json!([last]), "{r}");
    let file = Path::new(rows[last].0)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert!(r["status"].as_str().unwrap().contains(file), "{r}");
    let theirs = pprof_rows(rows[last].0, None, &elf, &dir);
    e2e::assert_same_table("last", &e2e::page_rows(&r["rows"]), &theirs);
    // The areas: `timeline`'s growing functions (none may have failed).
    assert_eq!(r["legendError"], serde_json::Value::Null, "{r}");
    assert!(!r["legend"].as_array().unwrap().is_empty(), "{r}");

    // The failed series: the CLI's reason in the chart's place, nothing left "Reading…".
    let cli = Command::new(heapsnap())
        .arg("timeline")
        .args(&bad)
        .output()
        .unwrap();
    assert!(
        !cli.status.success(),
        "timeline took a file that is not a snapshot"
    );
    let cli = String::from_utf8_lossy(&cli.stderr);
    let why = cli
        .split_once("notes.bin: ")
        .map(|(_, why)| why.trim())
        .unwrap_or_else(|| panic!("the CLI's error names no file: {cli}"));
    let bad_error = r["badError"].as_str().unwrap_or_default();
    assert!(
        bad_error.contains(&format!("notes.bin: {why}")),
        "the page says {bad_error:?}, the CLI {why:?}"
    );
    assert_eq!(
        r["badLoading"],
        serde_json::Value::Null,
        "still reading: {r}"
    );
}
