//! Hostile inputs against the real `heapsnap` binary (issue 12, the CLI's part): names
//! that carry terminal escapes, values whose sums overflow 64 bits, `-o` naming an
//! input, mappings that name /proc files, FIFOs, devices and huge files, `--elf` with
//! a pprof input, and error chains. Every input is generated here.

#[path = "../../profile/tests/common/mod.rs"]
mod common;
#[path = "hostile/gen.rs"]
#[allow(dead_code)]
mod gen;

use heapsnap_profile::profile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn heapsnap() -> Command {
    Command::new(env!("CARGO_BIN_EXE_heapsnap"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn ok(out: &Output) -> (String, String) {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (text(&out.stdout), text(&out.stderr))
}

/// A clean failure: exit 1, nothing on stdout, one line on stderr (returned).
fn fails(out: &Output) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "should have failed: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(out.stdout.is_empty(), "data on stdout on error");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

/// [`fails`] for an input that also warns: the warning lines, then the one error line.
fn fails_after_warnings(out: &Output) -> String {
    let err = text(&out.stderr);
    let errors: String = err
        .lines()
        .filter(|l| !l.contains(": warning: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(errors.len() < err.len(), "no warning: {err}");
    fails(&Output {
        status: out.status,
        stdout: out.stdout.clone(),
        stderr: errors.into_bytes(),
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A fresh directory per test.
fn dir(name: &str) -> PathBuf {
    let d = common::tmp("hostile").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// No control character a terminal would act on: only `\n` below 0x20, no DEL, no C1.
fn assert_terminal_safe(s: &str) {
    for c in s.chars() {
        assert!(
            c == '\n' || !c.is_control(),
            "control character {c:?} reaches the terminal in {s:?}"
        );
    }
}

// Item 3: terminal escapes in names.

use gen::{profile_with, EVIL, SHOWN};

#[test]
fn names_types_and_comments_are_escaped_in_top() {
    let d = dir("escape-top");
    let mut names = EVIL.to_vec();
    names.push("ünïcode→kept");
    let p = profile_with(
        "inuse\x1b[2Jspace",
        &names,
        &[600, 500, 400, 300, 200, 100],
        &["warning: clipboard \x1b]52;c;aGk=\x07 set"],
    );
    let f = write(&d, "evil.pb.gz", &profile::encode(&p));
    let (out, err) = ok(&heapsnap().arg("top").arg(&f).output().unwrap());
    assert_terminal_safe(&out);
    assert_terminal_safe(&err);
    let lines: Vec<&str> = out.lines().collect();
    // The comment (pprof prints comments above the type), escaped like the rest.
    assert_eq!(lines[0], "warning: clipboard \\x1b]52;c;aGk=\\x07 set");
    assert_eq!(lines[1], "Type: inuse\\x1b[2Jspace");
    // One table row per function: no name split a row.
    assert_eq!(lines.len(), 4 + 6, "{out}");
    for (row, name) in lines[4..]
        .iter()
        .zip(SHOWN.iter().chain(["ünïcode→kept"].iter()))
    {
        assert!(row.ends_with(&format!("  {name}")), "{row:?} for {name:?}");
    }
    assert_eq!(
        err,
        format!(
            "heapsnap: {}: warning: clipboard \\x1b]52;c;aGk=\\x07 set\n",
            f.display()
        )
    );
}

#[test]
fn diff_and_inspect_escape_names_and_mappings() {
    let d = dir("escape-diff");
    let base = write(
        &d,
        "base.pb.gz",
        &profile::encode(&profile_with("inuse_space", &EVIL[..1], &[100], &[])),
    );
    let new = write(
        &d,
        "new.pb.gz",
        &profile::encode(&profile_with("inuse_space", &EVIL[..1], &[300], &[])),
    );
    let (out, _) = ok(&heapsnap()
        .arg("diff")
        .arg(&base)
        .arg(&new)
        .output()
        .unwrap());
    assert_terminal_safe(&out);
    assert!(
        out.lines()
            .last()
            .unwrap()
            .ends_with("  title\\x1b]0;pwned\\x07"),
        "{out}"
    );

    // Sample types that differ: the error names base and new, escaped.
    let other = write(
        &d,
        "other.pb.gz",
        &profile::encode(&profile_with("alloc\x1b[2J", &["f"], &[1], &[])),
    );
    let e = fails(
        &heapsnap()
            .arg("diff")
            .arg(&base)
            .arg(&other)
            .output()
            .unwrap(),
    );
    assert_terminal_safe(&e);
    assert!(
        e.contains(
            "sample types differ: base has [inuse_space/bytes], new has [alloc\\x1b[2J/bytes]"
        ),
        "{e}"
    );

    // A snapshot's mapping name in inspect, and as the name of its unsymbolized frames.
    let mut s = common::host_snapshot();
    s.mappings[0].name = "/nonexistent/\x1b]0;x\x07app\nfake line".into();
    let snap = write(&d, "evil.snap", &s.encode().unwrap());
    let (out, _) = ok(&heapsnap().arg("inspect").arg(&snap).output().unwrap());
    assert_terminal_safe(&out);
    assert!(
        out.contains(
            "  0x555555554000-0x555555560000 @0x1000 /nonexistent/\\x1b]0;x\\x07app\\nfake line (build id abcdef01)\n"
        ),
        "{out}"
    );
    let (out, _) = ok(&heapsnap().arg("top").arg(&snap).output().unwrap());
    assert_terminal_safe(&out);
    assert!(out.contains("  [\\x1b]0;x\\x07app\\nfake line]\n"), "{out}");
}

/// Data formats are data: piped, legacy heap text keeps its bytes (a mapping name is
/// what the file says); on a terminal (a pty from `script`) the same output is escaped.
#[test]
fn data_output_is_escaped_on_a_terminal_only() {
    let d = dir("escape-data");
    let mut s = common::host_snapshot();
    s.mappings[0].name = "/nonexistent/bell\x07app".into();
    let snap = write(&d, "bell.snap", &s.encode().unwrap());
    let piped = heapsnap()
        .args(["convert", "--format", "text"])
        .arg(&snap)
        .output()
        .unwrap();
    let (out, _) = ok(&piped);
    assert!(out.contains("/nonexistent/bell\x07app\n"), "{out:?}");
    let cmd = format!(
        "{} convert --format text {}",
        env!("CARGO_BIN_EXE_heapsnap"),
        snap.display()
    );
    let tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (out, _) = ok(&tty);
    assert!(out.contains("/nonexistent/bell\\x07app"), "{out:?}");
    assert!(!out.contains('\x07'), "{out:?}");
}

// Item 4: sums past 64 bits.

fn overflow_error(e: &str, sum: &str) {
    assert!(
        e.contains(&format!(
            "the samples' inuse_space values (bytes) add up to {sum}, past the largest 64-bit total (9223372036854775807)"
        )),
        "{e}"
    );
    assert!(!e.contains("-2B") && !e.contains('%'), "{e}");
}

#[test]
fn values_past_64_bits_are_an_error_not_a_wrapped_total() {
    let d = dir("overflow");
    // Two samples of i64::MAX on one stack (kept apart by the builder: their sum
    // does not fit), which printed `-2B 100% of -2B total`.
    let p = profile_with("inuse_space", &["a", "a"], &[i64::MAX, i64::MAX], &[]);
    assert_eq!(p.sample.len(), 2);
    let f = write(&d, "max.pb.gz", &profile::encode(&p));
    let e = fails(&heapsnap().arg("top").arg(&f).output().unwrap());
    overflow_error(&e, "18446744073709551614");
    assert!(
        e.starts_with(&format!("heapsnap: {}: ", f.display())),
        "{e}"
    );

    // Four values of 2^62 + 1 wrap to a total of 4: percentages in the 10^20s.
    let v = (1i64 << 62) + 1;
    let p = profile_with("inuse_space", &["a", "b", "c", "d"], &[v, v, v, v], &[]);
    let f = write(&d, "wrap.pb.gz", &profile::encode(&p));
    let e = fails(&heapsnap().arg("top").arg(&f).output().unwrap());
    overflow_error(&e, "18446744073709551620");

    // Base and new each fit; their difference's total does not.
    let big = (1i64 << 62) + (1i64 << 61);
    let base = write(
        &d,
        "base.pb.gz",
        &profile::encode(&profile_with("inuse_space", &["a"], &[big], &[])),
    );
    let new = write(
        &d,
        "new.pb.gz",
        &profile::encode(&profile_with("inuse_space", &["b"], &[big], &[])),
    );
    ok(&heapsnap().arg("top").arg(&base).output().unwrap());
    let e = fails(
        &heapsnap()
            .arg("diff")
            .arg(&base)
            .arg(&new)
            .output()
            .unwrap(),
    );
    overflow_error(&e, "13835058055282163712");
    assert!(e.contains("the difference of base"), "{e}");

    // A base value of i64::MIN has no negation.
    let min = write(
        &d,
        "min.pb.gz",
        &profile::encode(&profile_with("inuse_space", &["a"], &[i64::MIN], &[])),
    );
    let e = fails(&heapsnap().arg("diff").arg(&min).arg(&new).output().unwrap());
    assert!(
        e.contains("base sample 0 has the value -9223372036854775808, whose negation does not fit in 64 bits"),
        "{e}"
    );
}

#[test]
fn inspect_sums_counters_past_64_bits_exactly() {
    let d = dir("overflow-inspect");
    let mut s = common::firmware_snapshot();
    for b in &mut s.buckets[..2] {
        b.active.allocs = 4;
        b.active.alloc_bytes = u64::MAX - 1;
    }
    let snap = write(&d, "big.snap", &s.encode().unwrap());
    let (out, _) = ok(&heapsnap().arg("inspect").arg(&snap).output().unwrap());
    let others: u128 = s.buckets[2..]
        .iter()
        .map(|b| u128::from(b.active.alloc_bytes))
        .sum();
    let want = 2 * u128::from(u64::MAX - 1) + others;
    assert!(
        out.contains(&format!(
            "sampled allocs   {} ({want} bytes)\n",
            8 + s.buckets[2..].iter().map(|b| b.active.allocs).sum::<u64>()
        )),
        "{out}"
    );
}

// Item 5: -o never destroys an input.

fn refused(e: &str, out: &Path) {
    assert!(
        e.contains(&format!(
            "refusing to write the output to {}",
            out.display()
        )) && e.contains("an input, which would be lost"),
        "{e}"
    );
}

#[test]
fn output_onto_an_input_is_refused_and_the_input_kept() {
    let d = dir("output");
    let bytes = common::firmware_snapshot().encode().unwrap();
    let snap = write(&d, "x.snap", &bytes);
    std::os::unix::fs::symlink(&snap, d.join("link.snap")).unwrap();
    std::fs::hard_link(&snap, d.join("hard.snap")).unwrap();
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let spellings = [
        snap.clone(),
        d.join("link.snap"),
        d.join("hard.snap"),
        d.join("sub/../x.snap"),
        d.join("./x.snap"),
    ];
    for out in &spellings {
        let e = fails(
            &heapsnap()
                .arg("convert")
                .arg(&snap)
                .arg("-o")
                .arg(out)
                .output()
                .unwrap(),
        );
        refused(&e, out);
        assert_eq!(std::fs::read(&snap).unwrap(), bytes, "input changed");
    }
    // Relative to the working directory.
    let e = fails(
        &heapsnap()
            .current_dir(&d)
            .args(["convert", "x.snap", "-o", "x.snap"])
            .output()
            .unwrap(),
    );
    refused(&e, Path::new("x.snap"));

    // diff: onto the base or the new file.
    let new = write(&d, "new.snap", &bytes);
    for out in [&snap, &new] {
        let e = fails(
            &heapsnap()
                .arg("diff")
                .arg(&snap)
                .arg(&new)
                .arg("-o")
                .arg(out)
                .output()
                .unwrap(),
        );
        refused(&e, out);
    }
    // An --elf file is an input too.
    let elf = write(&d, "fw.elf", b"\x7fELF not really");
    let e = fails(
        &heapsnap()
            .args(["convert", "--elf"])
            .arg(&elf)
            .arg(&snap)
            .arg("-o")
            .arg(&elf)
            .output()
            .unwrap(),
    );
    refused(&e, &elf);
    assert_eq!(std::fs::read(&elf).unwrap(), b"\x7fELF not really");
    // Standard input redirected from the output file.
    let e = fails(
        &heapsnap()
            .args(["convert", "-", "-o"])
            .arg(&snap)
            .stdin(std::fs::File::open(&snap).unwrap())
            .output()
            .unwrap(),
    );
    assert!(e.contains("it is what standard input reads"), "{e}");
    assert_eq!(std::fs::read(&snap).unwrap(), bytes, "input changed");
    assert_eq!(std::fs::read(&new).unwrap(), bytes, "input changed");
}

/// Outputs are renamed into place: a new file gets the usual permissions, an old one
/// is replaced whole, a failed run leaves it as it was, no temporary is left behind.
#[test]
fn output_is_written_whole_through_a_temporary() {
    let d = dir("atomic");
    // The host snapshot: its mappings name files that do not exist, so every run
    // warns that nothing was symbolized; an error is the one other line on stderr.
    let snap = write(&d, "x.snap", &common::host_snapshot().encode().unwrap());
    let out = d.join("x.pb.gz");
    let run = |input: &Path| {
        Command::new("sh")
            .arg("-c")
            .arg(r#"umask 022; exec "$0" convert "$1" -o "$2""#)
            .arg(env!("CARGO_BIN_EXE_heapsnap"))
            .arg(input)
            .arg(&out)
            .output()
            .unwrap()
    };
    ok(&run(&snap));
    let first = std::fs::read(&out).unwrap();
    assert!(profile::decode(&first).is_ok());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    // A bad input: the old output stays.
    let bad = write(&d, "bad.snap", &std::fs::read(&snap).unwrap()[..40]);
    fails(&run(&bad));
    assert_eq!(std::fs::read(&out).unwrap(), first);
    // Through a symlink: the file it points to is written, the link stays.
    let link = d.join("link.pb.gz");
    std::os::unix::fs::symlink(&out, &link).unwrap();
    std::fs::write(&out, b"old").unwrap();
    ok(&heapsnap()
        .arg("convert")
        .arg(&snap)
        .arg("-o")
        .arg(&link)
        .output()
        .unwrap());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&out).unwrap(), first);
    // Into a directory that does not exist: an error, no file.
    let e = fails_after_warnings(
        &heapsnap()
            .arg("convert")
            .arg(&snap)
            .arg("-o")
            .arg(d.join("missing/x.pb.gz"))
            .output()
            .unwrap(),
    );
    assert!(
        e.ends_with(&format!(
            "cannot write {}: No such file or directory (os error 2)\n",
            d.join("missing/x.pb.gz").display()
        )),
        "{e}"
    );
    let left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".heapsnap-"))
        .collect();
    assert!(left.is_empty(), "temporaries left: {left:?}");
}

// Item 2: files a snapshot's mappings name.

/// Runs `top` on the host snapshot with its first mapping naming `path`, under a
/// deadline (a FIFO or an endless file must not hang it) and a 1 GiB address-space
/// limit (reading a huge file whole would fail), and returns stderr.
fn top_with_mapping(d: &Path, path: &str) -> String {
    let mut s = common::host_snapshot();
    s.mappings[0].name = path.into();
    s.mappings[0].build_id.clear();
    let snap = write(d, "m.snap", &s.encode().unwrap());
    let mut child = Command::new("prlimit")
        .arg("--as=1073741824")
        .arg(env!("CARGO_BIN_EXE_heapsnap"))
        .arg("top")
        .arg(&snap)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("top hangs on a mapping naming {path}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let (table, err) = ok(&out);
    // The table is still printed: the mapping is left unsymbolized.
    assert!(table.contains("100% of 4.47MB total"), "{table}");
    err
}

fn not_read(err: &str, path: &str, why: &str) {
    assert!(
        err.contains(&format!("warning: mapping 1 names {path}: not read: {why}")),
        "{err}"
    );
}

#[test]
fn mapped_proc_dev_and_sys_files_are_refused() {
    let d = dir("mapped-proc");
    let e = top_with_mapping(&d, "/proc/self/pagemap");
    assert!(
        e.contains("warning: mapping 1 names /proc/self/pagemap: not read: /proc/")
            && e.contains(
                "/pagemap is under /proc, a kernel pseudo-file or device, not a program file"
            ),
        "{e}"
    );
    not_read(
        &top_with_mapping(&d, "/dev/zero"),
        "/dev/zero",
        "/dev/zero is under /dev",
    );
    not_read(
        &top_with_mapping(&d, "/sys/kernel/notes"),
        "/sys/kernel/notes",
        "/sys/kernel/notes is under /sys",
    );
    // Through a symlink elsewhere.
    let link = d.join("pagemap-link");
    std::os::unix::fs::symlink("/proc/self/pagemap", &link).unwrap();
    let e = top_with_mapping(&d, link.to_str().unwrap());
    assert!(
        e.contains("not read: /proc/") && e.contains("is under /proc"),
        "{e}"
    );
}

#[test]
fn mapped_fifo_directory_empty_huge_and_non_elf_files_are_refused() {
    let d = dir("mapped-files");
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let f = fifo.to_str().unwrap();
    not_read(&top_with_mapping(&d, f), f, "not a regular file but a FIFO");

    let dd = d.to_str().unwrap();
    not_read(
        &top_with_mapping(&d, dd),
        dd,
        "not a regular file but a directory",
    );

    let empty = write(&d, "empty.so", b"");
    let p = empty.to_str().unwrap();
    not_read(&top_with_mapping(&d, p), p, "the file is empty (size 0)");

    // 4 GiB, sparse: no disk, but read whole it would be 4 GiB of memory.
    let huge = d.join("huge.so");
    let h = std::fs::File::create(&huge).unwrap();
    h.set_len(4 << 30).unwrap();
    drop(h);
    let p = huge.to_str().unwrap();
    not_read(
        &top_with_mapping(&d, p),
        p,
        "4294967296 bytes, over the 1073741824-byte limit for a mapped file (give it with --elf to use it anyway)",
    );

    let text = write(&d, "text.so", b"#!/bin/sh\necho not an ELF\n");
    let p = text.to_str().unwrap();
    not_read(
        &top_with_mapping(&d, p),
        p,
        "not an ELF file (starts with [23, 21, 2f, 62], an ELF with 7f 45 4c 46)",
    );
}

// Item 10: --elf that cannot apply.

#[test]
fn elf_with_a_pprof_input_is_a_warning() {
    let d = dir("elf-pprof");
    let p = write(
        &d,
        "p.pb.gz",
        &profile::encode(&profile_with("inuse_space", &["f"], &[64], &[])),
    );
    let plain = ok(&heapsnap().arg("top").arg(&p).output().unwrap());
    let with = heapsnap()
        .args(["top", "--elf", env!("CARGO_BIN_EXE_heapsnap")])
        .arg(&p)
        .output()
        .unwrap();
    let (out, err) = ok(&with);
    assert_eq!(out, plain.0);
    assert_eq!(
        err,
        format!(
            "heapsnap: {}: warning: --elf not used: this is a pprof profile, which carries the symbols it was written with; --elf symbolizes snapshots\n",
            p.display()
        )
    );
}

// Item 9: each cause once.

#[test]
fn an_error_chain_says_each_thing_once() {
    let d = dir("chain");
    let b = common::firmware_snapshot().encode().unwrap();
    let p = write(&d, "truncated.snap", &b[..b.len() / 2]);
    let e = fails(&heapsnap().arg("top").arg(&p).output().unwrap());
    assert_eq!(e.matches("snapshot is truncated").count(), 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "heapsnap: {}: snapshot is truncated: the field at byte ",
            p.display()
        )),
        "{e}"
    );

    // A gzipped pprof whose protobuf is cut: the decoder's words once.
    let prof = profile::encode(&profile_with("inuse_space", &["f"], &[64], &[]));
    let gz = gzip_of_cut(&prof);
    let p = write(&d, "cut.pb.gz", &gz);
    let e = fails(&heapsnap().arg("top").arg(&p).output().unwrap());
    let parts: Vec<&str> = e.trim_end().split(": ").collect();
    for (i, a) in parts.iter().enumerate() {
        assert!(!parts[i + 1..].contains(a), "{a:?} repeated in {e}");
    }
}

/// A gzip stream of the first half of `pprof`'s protobuf (stored blocks: no inflater
/// needed here).
fn gzip_of_cut(pprof: &[u8]) -> Vec<u8> {
    let raw = profile::inflate(pprof, 1 << 20).unwrap();
    let cut = &raw[..raw.len() / 2];
    let mut g = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    // One stored deflate block (final).
    let n = cut.len() as u16;
    g.push(1);
    g.extend_from_slice(&n.to_le_bytes());
    g.extend_from_slice(&(!n).to_le_bytes());
    g.extend_from_slice(cut);
    g.extend_from_slice(&crc32(cut).to_le_bytes());
    g.extend_from_slice(&(cut.len() as u32).to_le_bytes());
    g
}

fn crc32(b: &[u8]) -> u32 {
    let mut c = !0u32;
    for &x in b {
        c ^= u32::from(x);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}
