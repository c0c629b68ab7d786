//! The `heapsnap` binary: inputs (file, stdin, serial capture), outputs on stdout only,
//! and bad input — each a one-line message naming the problem, a non-zero exit, no
//! panic, nothing on stdout.

#[path = "../../profile/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn heapsnap() -> Command {
    Command::new(env!("CARGO_BIN_EXE_heapsnap"))
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Asserts a clean failure and returns its one line of stderr.
fn fails(out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should have failed; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(
        out.stdout.is_empty(),
        "data on stdout on error: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("heapsnap: "), "{err}");
    err
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn snap_bytes() -> Vec<u8> {
    common::firmware_snapshot().encode().unwrap()
}

#[test]
fn empty_file() {
    let d = common::tmp("cli");
    let p = write(&d, "empty", b"");
    for cmd in ["convert", "top", "inspect"] {
        let e = fails(heapsnap().arg(cmd).arg(&p).output().unwrap());
        assert!(e.contains("empty input"), "{e}");
    }
}

#[test]
fn truncated_snapshot() {
    let d = common::tmp("cli");
    let b = snap_bytes();
    let p = write(&d, "truncated.snap", &b[..b.len() / 2]);
    let e = fails(
        heapsnap()
            .arg("convert")
            .arg(&p)
            .arg("-o")
            .arg(d.join("x.pb.gz"))
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("truncated.snap") && e.contains("snapshot is truncated"),
        "{e}"
    );
    assert!(!d.join("x.pb.gz").exists(), "wrote output for a bad input");
}

#[test]
fn corrupt_snapshot() {
    let d = common::tmp("cli");
    let mut b = snap_bytes();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    let p = write(&d, "corrupt.snap", &b);
    let e = fails(heapsnap().arg("inspect").arg(&p).output().unwrap());
    assert!(
        e.contains("corrupt.snap") && (e.contains("checksum mismatch") || e.contains("corrupt")),
        "{e}"
    );
}

#[test]
fn garbage_file() {
    let d = common::tmp("cli");
    let p = write(&d, "garbage", b"\xff\xfe this is not a profile at all");
    let e = fails(heapsnap().arg("top").arg(&p).output().unwrap());
    assert!(
        e.contains("not a heapsnap snapshot, a COBS serial capture or a pprof profile"),
        "{e}"
    );
}

#[test]
fn pprof_with_dangling_ids() {
    use heapsnap_profile::profile::{self, Builder, Line};
    let d = common::tmp("cli");
    let mut b = Builder::new();
    b.sample_type("inuse_space", "bytes");
    let f = b.function("leak", "", "", 0);
    let l = b.location(
        0,
        0x10,
        vec![Line {
            function_id: f,
            line: 1,
            column: 0,
        }],
        false,
    );
    b.sample(vec![l], vec![64], vec![]);
    let mut p = b.finish();
    p.sample[0].location_id = [l, 999].into();
    let path = write(&d, "dangling.pb.gz", &profile::encode(&p));
    let e = fails(heapsnap().arg("top").arg(&path).output().unwrap());
    assert!(
        e.contains("sample 0 refers to location 999, which does not exist"),
        "{e}"
    );
    p.sample[0].location_id = [l].into();
    p.location[0].line[0].function_id = 77;
    let path = write(&d, "dangling-fn.pb.gz", &profile::encode(&p));
    let e = fails(
        heapsnap()
            .arg("diff")
            .arg(&path)
            .arg(&path)
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("location 1 refers to function 77, which does not exist"),
        "{e}"
    );
}

#[test]
fn elf_problems() {
    let d = common::tmp("cli");
    let snap = write(&d, "fw.snap", &snap_bytes());
    let not_elf = write(&d, "not-elf", b"not an ELF");
    let e = fails(
        heapsnap()
            .arg("convert")
            .arg(&snap)
            .arg("--elf")
            .arg(&not_elf)
            .output()
            .unwrap(),
    );
    assert!(e.contains("not-elf: not a readable ELF file"), "{e}");
    let e = fails(
        heapsnap()
            .arg("convert")
            .arg(&snap)
            .arg("--elf")
            .arg(d.join("missing.elf"))
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("cannot read ELF") && e.contains("missing.elf"),
        "{e}"
    );
    // A real ELF without DWARF: cc, stripped.
    let exe = d.join("nodebug");
    let st = Command::new("cc")
        .args(["-g0", "-s", "-o"])
        .arg(&exe)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/symfix.c"
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let e = fails(
        heapsnap()
            .arg("top")
            .arg(&snap)
            .arg("--elf")
            .arg(&exe)
            .output()
            .unwrap(),
    );
    assert!(e.contains("ELF has no DWARF debug info"), "{e}");
}

#[test]
fn wrong_flag_and_sample_index() {
    let d = common::tmp("cli");
    let snap = write(&d, "fw2.snap", &snap_bytes());
    let out = heapsnap()
        .arg("convert")
        .arg(&snap)
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--bogus"));
    let e = fails(
        heapsnap()
            .arg("top")
            .arg(&snap)
            .args(["--sample-index", "wall_time"])
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("must be one of: alloc_objects, alloc_space, inuse_objects, inuse_space"),
        "{e}"
    );
    let e = fails(
        heapsnap()
            .arg("top")
            .arg(&snap)
            .args(["--sample-index", "9"])
            .output()
            .unwrap(),
    );
    assert!(e.contains("outside the range [0..3]"), "{e}");
}

#[test]
fn stdin_and_formats() {
    let mut child = heapsnap()
        .args(["convert", "-", "--format", "folded"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&snap_bytes())
        .unwrap();
    let folded = ok(child.wait_with_output().unwrap());
    assert_eq!(
        folded,
        "0x8000101;0x8002001;0x8001235 2189\n0x8004441 1024\n"
    );
    // pprof to a pipe is fine (only a terminal is refused), and deterministic.
    let d = common::tmp("cli");
    let snap = write(&d, "fw3.snap", &snap_bytes());
    let a = heapsnap().arg("convert").arg(&snap).output().unwrap();
    let b = heapsnap().arg("convert").arg(&snap).output().unwrap();
    assert!(a.status.success() && a.stdout == b.stdout && a.stdout.starts_with(&[0x1f, 0x8b]));
    // Nothing on stderr but the snapshot's warnings (its tables overflowed).
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(err.lines().all(|l| l.contains(": warning: ")), "{err}");
    let p = heapsnap_profile::profile::decode(&a.stdout).unwrap();
    assert_eq!(p.sample.len(), 4);
}

#[test]
fn serial_capture_takes_the_last_good_frame() {
    use sampler_core::snapshot::encode_framed_to_vec;
    let d = common::tmp("cli");
    let mut first = common::firmware_snapshot();
    first.cycle = 1;
    let second = common::firmware_snapshot();
    let mut cap = b"boot banner v1.0\r\n".to_vec();
    cap.extend(encode_framed_to_vec(&first).unwrap());
    let mut broken = encode_framed_to_vec(&first).unwrap();
    let n = broken.len();
    broken[n / 2] ^= 0x5a;
    cap.extend(broken);
    cap.extend(encode_framed_to_vec(&second).unwrap());
    let torn = encode_framed_to_vec(&first).unwrap();
    cap.extend(&torn[..torn.len() / 3]);
    let p = write(&d, "serial.cap", &cap);
    let out = heapsnap().arg("inspect").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = ok(out);
    assert!(
        report.contains("cycle            7"),
        "not the last good snapshot:\n{report}"
    );
    assert!(
        err.contains("serial capture with") && err.contains("3 bad"),
        "{err}"
    );
    // A capture with no good frame: an error that says so.
    let mut bad = b"boot banner v1.0\r\n".to_vec();
    let mut broken = encode_framed_to_vec(&first).unwrap();
    broken[n / 3] ^= 0x11;
    bad.extend(broken);
    let p = write(&d, "bad.cap", &bad);
    let e = fails(heapsnap().arg("inspect").arg(&p).output().unwrap());
    assert!(e.contains("no valid snapshot in the serial capture"), "{e}");
}

#[test]
fn inspect_warns_in_plain_language() {
    let d = common::tmp("cli");
    let snap = write(&d, "fw4.snap", &snap_bytes());
    let r = ok(heapsnap().arg("inspect").arg(&snap).output().unwrap());
    assert!(
        r.contains("bucket table full: 312 samples dropped; raise BUCKETS"),
        "{r}"
    );
    assert!(r.contains("truncated_stacks  5"), "{r}");
}

#[test]
fn diff_of_snapshots_is_a_profile() {
    let d = common::tmp("cli");
    let mut base = common::firmware_snapshot();
    base.buckets[0].active.allocs = 2;
    base.buckets[0].active.alloc_bytes = 128;
    base.buckets[0].active.frees = 0;
    base.buckets[0].active.free_bytes = 0;
    let b = write(&d, "base.snap", &base.encode().unwrap());
    let n = write(&d, "new.snap", &snap_bytes());
    let out = d.join("diff.pb.gz");
    ok(heapsnap()
        .arg("diff")
        .arg(&b)
        .arg(&n)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap());
    let p = heapsnap_profile::profile::decode(&std::fs::read(&out).unwrap()).unwrap();
    // inuse_space per stack: new − base; only the first bucket changed.
    let idx = p.sample_index("inuse_space").unwrap();
    let net: i64 = p.sample.iter().map(|s| s.value[idx]).sum();
    assert!(
        net > 0,
        "the first bucket grew from 2 to 8 objects in use: {net}"
    );
    // The table, signed as pprof prints a diff: the growth positive.
    let table = ok(heapsnap().arg("diff").arg(&b).arg(&n).output().unwrap());
    let first = table
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        !first.trim_start().starts_with('-') && !first.trim_start().starts_with("0 "),
        "{table}"
    );
}

/// Wrong-ELF cases that used to give confident garbage with exit 0: a 64-bit ELF for
/// a 32-bit firmware snapshot, a snapshot where the ELF goes, an ELF where the input
/// goes. Each is a clear error; `--force-elf` overrides the fit check.
#[test]
fn a_wrong_elf_is_refused_with_what_does_not_fit() {
    let d = common::tmp("cli");
    let snap = write(&d, "fw.snap", &snap_bytes());
    // This test binary's own heapsnap: an x86-64 ELF with DWARF.
    let x86 = PathBuf::from(env!("CARGO_BIN_EXE_heapsnap"));
    let e = fails(
        heapsnap()
            .args(["top", "--elf"])
            .arg(&x86)
            .arg(&snap)
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("does not fit the snapshot")
            && e.contains("64-bit ELF and the snapshot holds 32-bit addresses")
            && e.contains("--force-elf"),
        "{e}"
    );
    let forced = heapsnap()
        .args(["top", "--force-elf", "--elf"])
        .arg(&x86)
        .arg(&snap)
        .output()
        .unwrap();
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );

    let e = fails(
        heapsnap()
            .args(["convert", "--elf"])
            .arg(&snap)
            .arg(&snap)
            .output()
            .unwrap(),
    );
    assert!(
        e.contains("fw.snap: not a readable ELF file: it is a heapsnap snapshot: give it as the input file"),
        "{e}"
    );

    for cmd in ["top", "convert", "inspect"] {
        let e = fails(heapsnap().arg(cmd).arg(&x86).output().unwrap());
        assert!(
            e.contains("this is an ELF file") && e.contains("give it with --elf"),
            "{cmd}: {e}"
        );
    }
}

/// The silent mistakes `inspect` knew about and `top`, `diff` and `convert` did not
/// say: samples taken but no record cycle ever closed, tables full, and no ELF for a
/// firmware snapshot. The same warning text in every command, from one place.
#[test]
fn top_diff_and_convert_repeat_the_snapshots_warnings() {
    let d = common::tmp("cli");
    let mut never_advanced = common::firmware_snapshot();
    never_advanced.cycle = 0;
    let quiet = write(&d, "never.snap", &never_advanced.encode().unwrap());
    let full = write(&d, "full.snap", &snap_bytes());
    let out = d.join("never.pb.gz");
    let runs: [(&str, Vec<&std::ffi::OsStr>); 3] = [
        ("top", vec![quiet.as_os_str()]),
        ("diff", vec![full.as_os_str(), quiet.as_os_str()]),
        (
            "convert",
            vec![quiet.as_os_str(), "-o".as_ref(), out.as_os_str()],
        ),
    ];
    for (cmd, args) in runs {
        let o = heapsnap().arg(cmd).args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        for w in [
            "warning: no record cycle was ever closed: 40 samples taken, none published",
            "warning: bucket table full: 312 samples dropped",
            "warning: no ELF given: the firmware's addresses stay unsymbolized",
        ] {
            assert!(err.contains(w), "{cmd} does not say `{w}`:\n{err}");
        }
    }
    // The converted profile carries them, for the viewer and `top` on the pprof file.
    let o = heapsnap().arg("top").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: no record cycle was ever closed"),
        "{err}"
    );
    // And `diff` says what its percentages are of.
    let o = heapsnap()
        .args(["diff"])
        .arg(&full)
        .arg(&quiet)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let text = String::from_utf8_lossy(&o.stderr);
    assert!(
        text.contains("percentages are of the base's total"),
        "{text}"
    );
}

/// The exact heap totals: `inspect` prints them, `top` prints them as the comment pprof
/// shows above its type line,
/// and a converted profile carries them so `top` of the pprof file shows the same line.
/// A snapshot without them says "not counted" and never prints a heap of zero bytes.
#[test]
fn heap_totals_in_inspect_top_and_the_converted_profile() {
    let d = common::tmp("cli");
    let mut counted = common::firmware_snapshot();
    counted.counters.set_heap(Some(sampler_core::HeapTotals {
        allocs: 57,
        frees: 50,
        in_use_bytes: 1200,
        peak_bytes: 3100,
    }));
    let with = write(&d, "totals.snap", &counted.encode().unwrap());
    let without = write(&d, "no-totals.snap", &snap_bytes());
    let line = "1200 bytes in use in 7 objects, peak 3100 bytes; 57 allocs, 50 frees";

    let r = ok(heapsnap().arg("inspect").arg(&with).output().unwrap());
    assert!(r.contains(&format!("heap (exact)     {line}\n")), "{r}");
    assert!(
        !r.contains("heap_"),
        "the totals are not listed as drop counters: {r}"
    );
    let t = ok(heapsnap().arg("top").arg(&with).output().unwrap());
    // Among the comments pprof prints above the type line.
    let (head, _) = t.split_once("Type: inuse_space\n").unwrap();
    assert!(head.contains(&format!("heap (exact): {line}\n")), "{t}");
    let pb = d.join("totals.pb.gz");
    ok(heapsnap()
        .arg("convert")
        .arg(&with)
        .arg("-o")
        .arg(&pb)
        .output()
        .unwrap());
    let t = ok(heapsnap().arg("top").arg(&pb).output().unwrap());
    assert!(t.contains(&format!("heap (exact): {line}\n")), "{t}");

    let r = ok(heapsnap().arg("inspect").arg(&without).output().unwrap());
    assert!(
        r.contains("heap (exact)     not counted (the profiler was built without TOTALS"),
        "{r}"
    );
    let t = ok(heapsnap().arg("top").arg(&without).output().unwrap());
    assert!(
        !t.contains("heap (exact)") && !t.contains("bytes in use"),
        "{t}"
    );
}

#[test]
fn timeline_without_exact_totals_shows_the_sampled_estimate_and_the_drops() {
    use sampler_core::snapshot::encode_framed_to_vec;
    let d = common::tmp("cli");
    let mut first = common::firmware_snapshot();
    first.cycle = 3;
    first.counters.bucket_table_full = 0;
    let last = common::firmware_snapshot();
    let mut cap = encode_framed_to_vec(&first).unwrap();
    let torn_at = cap.len() + encode_framed_to_vec(&last).unwrap().len();
    cap.extend(encode_framed_to_vec(&last).unwrap());
    cap.extend(&encode_framed_to_vec(&first).unwrap()[..20]);
    let p = write(&d, "timeline.cap", &cap);

    let table = ok(heapsnap().arg("timeline").arg(&p).output().unwrap());
    assert!(
        table.contains("in use: sampled estimate"),
        "the header says where in-use comes from:\n{table}"
    );
    assert!(
        table.contains(&format!(" offset {torn_at} (20 bytes): ")) && table.contains("torn"),
        "{table}"
    );
    let csv = ok(heapsnap()
        .args(["timeline", "--format", "csv"])
        .arg(&p)
        .output()
        .unwrap());
    // The points, then (after a blank line) the growth table.
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(csv.contains("\n\nrank,flat,cum,unit,function\n"), "{csv}");
    // In use per row: the inuse_space and inuse_objects totals of the frame converted,
    // i.e. what `heapsnap top` totals.
    for (i, row) in rows.iter().enumerate() {
        let pb = d.join(format!("timeline-{i}.pb.gz"));
        ok(heapsnap()
            .arg("convert")
            .arg(format!("{}@{i}", p.display()))
            .arg("-o")
            .arg(&pb)
            .output()
            .unwrap());
        let prof = heapsnap_profile::profile::decode(&std::fs::read(&pb).unwrap()).unwrap();
        let sum = |t: &str| {
            let k = prof.sample_index(t).unwrap();
            prof.sample
                .iter()
                .map(|s| s.value[k])
                .sum::<i64>()
                .to_string()
        };
        assert_eq!(row[4], sum("inuse_space"), "{csv}");
        assert_eq!(row[5], sum("inuse_objects"), "{csv}");
        assert_eq!(row[6], "sampled");
    }
    assert_eq!(rows[0][3], "3");
    // The drops that are not zero, by name (`samples` is not a drop).
    assert_eq!(
        rows[0][7],
        "stack_table_full=3;live_map_full=2;reentrant=1;unknown_frees=4;truncated_stacks=5"
    );
    assert!(rows[1][7].contains("bucket_table_full=312"), "{csv}");

    // No good frame: one line saying so; stdin twice: refused.
    let bad = write(&d, "timeline-bad.cap", &cap[torn_at..]);
    let e = fails(heapsnap().arg("timeline").arg(&bad).output().unwrap());
    assert!(e.contains("no valid snapshot in the serial capture"), "{e}");
    let e = fails(heapsnap().args(["timeline", "-", "-"]).output().unwrap());
    assert!(e.contains("stdin"), "{e}");
}
