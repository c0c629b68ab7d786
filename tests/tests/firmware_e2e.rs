//! The chain where it is meant to run: the Cortex-M3 firmware (`firmware/`) ran in QEMU
//! under `cargo xtask test` (or `cargo xtask firmware`) and wrote snapshots over
//! semihosting into `HEAPSNAP_FIRMWARE_OUT`, next to a copy of its ELF. These tests take
//! those real artifacts through `heapsnap convert --elf`, `go tool pprof`, `heapsnap diff`
//! and the viewer in headless Chromium, and check that every one of them points at the
//! firmware's leak, `router::remember_message`, by name and source line.
//!
//! They fail (never skip) when the artifacts are missing: run them through
//! `cargo xtask test`, or `cargo xtask firmware` first and set the variable yourself.

use e2e::{heapsnap, pprof, repo_root, run, target_dir};
use serde_json::Value;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The leaking function, as the firmware's source names it.
const LEAK_FN: &str = "remember_message";
/// Its file in the firmware crate.
const LEAK_FILE: &str = "firmware/src/router.rs";
/// The demo firmware's leak: the function (its path's tail) and its source file.
const DEMO_LEAK: Leak = Leak {
    func: "::router::remember_message",
    file: LEAK_FILE,
};

/// A leaking function the tests expect at the top of in-use space.
struct Leak {
    /// The symbol's tail as pprof prints it (`…::router::remember_message`).
    func: &'static str,
    /// Its source file, relative to the repository.
    file: &'static str,
}
/// Name of the ELF copy `cargo xtask firmware` puts next to the snapshots.
const ELF_NAME: &str = "heapsnap-firmware.elf";

/// `HEAPSNAP_FIRMWARE_OUT`, checked to hold what the firmware run leaves behind.
fn firmware_out() -> PathBuf {
    let Some(dir) = std::env::var_os("HEAPSNAP_FIRMWARE_OUT") else {
        panic!(
            "HEAPSNAP_FIRMWARE_OUT is not set: these tests need the snapshots of a QEMU run; \
             run `cargo xtask test`, or `cargo xtask firmware` and then \
             HEAPSNAP_FIRMWARE_OUT=target/firmware-out cargo test -p e2e --test firmware_e2e"
        )
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join(ELF_NAME).is_file(),
        "{} is missing: `cargo xtask firmware` did not run (or failed) before these tests",
        dir.join(ELF_NAME).display()
    );
    dir
}

/// The firmware's snapshots, oldest first (`snap-000.bin`, `snap-001.bin`, …).
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let mut snaps: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with("snap-") && n.ends_with(".bin")
        })
        .collect();
    snaps.sort();
    assert!(
        snaps.len() >= 2,
        "{} holds {} snapshot(s); the firmware writes several (see qemu.log there)",
        dir.display(),
        snaps.len()
    );
    snaps
}

/// Lines of `fn remember_message` in the firmware source (signature to closing brace),
/// read from the file so the test follows edits to it.
fn leak_lines(leak: &Leak) -> RangeInclusive<u32> {
    let src = std::fs::read_to_string(repo_root().join(leak.file)).expect("firmware source");
    let lines: Vec<&str> = src.lines().collect();
    let name = leak.func.rsplit("::").next().unwrap_or(leak.func);
    let start = lines
        .iter()
        .position(|l| l.contains(&format!("fn {name}(")))
        .unwrap_or_else(|| panic!("{} has no fn {name}", leak.file));
    // The closing brace at the signature's indentation.
    let indent = &lines[start][..lines[start].len() - lines[start].trim_start().len()];
    let end = (start..lines.len())
        .find(|&i| lines[i] == format!("{indent}}}"))
        .expect("closing brace of the function");
    (start as u32 + 1)..=(end as u32 + 1)
}

/// `heapsnap convert --elf` of one snapshot into a gzipped pprof under `target/firmware-e2e/`.
/// `test` names the file, so tests running in parallel never share one.
fn convert(out: &Path, snap: &Path, test: &str) -> PathBuf {
    let tmp = target_dir().join("firmware-e2e");
    std::fs::create_dir_all(&tmp).unwrap();
    let pb = tmp.join(format!(
        "{test}-{}",
        snap.with_extension("pb.gz")
            .file_name()
            .unwrap()
            .to_string_lossy()
    ));
    run(Command::new(heapsnap())
        .arg("convert")
        .arg("--elf")
        .arg(out.join(ELF_NAME))
        .arg(snap)
        .arg("-o")
        .arg(&pb));
    assert!(
        pb.is_file(),
        "heapsnap convert wrote nothing to {}",
        pb.display()
    );
    pb
}

/// First data row of `go tool pprof -top` (after the `flat  flat% …` header).
fn first_top_row(top: &str) -> &str {
    let mut rows = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1);
    rows.next()
        .unwrap_or_else(|| panic!("no rows in pprof -top output:\n{top}"))
}

#[test]
fn pprof_top_names_the_leak_with_file_and_line_from_dwarf() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let pb = convert(&out, snaps.last().unwrap(), "top");
    if let Err(e) = leak_tops_inuse_with_its_line(&pb, &DEMO_LEAK) {
        panic!("{e}");
    }
}

/// `go tool pprof -top -lines` of `pb`'s in-use space starts with the leak, at a line of
/// its body in the router's source.
fn leak_tops_inuse_with_its_line(pb: &Path, leak: &Leak) -> Result<(), String> {
    let top = pprof(&["-top", "-sample_index=inuse_space", "-lines"], pb);
    let row = first_top_row(&top);
    if !row.contains(&format!("{} ", leak.func)) {
        return Err(format!("the leak is not at the top of inuse_space:\n{top}"));
    }
    // `… router::remember_message /path/firmware/src/router.rs:171`
    // An inlined function's row ends in ` (inline)`.
    let loc = row
        .trim_end_matches(" (inline)")
        .rsplit(' ')
        .next()
        .unwrap_or_default();
    let (file, line) = loc
        .rsplit_once(':')
        .ok_or_else(|| format!("no file:line in `{row}`"))?;
    let want = leak.file.rsplit_once("/src/").map_or(leak.file, |(_, f)| f);
    if !file.ends_with(&format!("src/{want}")) {
        return Err(format!(
            "top row's file is {file}, not {}: `{row}`",
            leak.file
        ));
    }
    let line: u32 = line
        .parse()
        .map_err(|_| format!("line in `{row}` is not a number"))?;
    let body = leak_lines(leak);
    if !body.contains(&line) {
        return Err(format!(
            "line {line} of the top row is outside {} ({body:?} in {}):\n{top}",
            leak.func, leak.file
        ));
    }
    Ok(())
}

/// Every in-use stack of `pb` ends in the reset handler (`go tool pprof -traces`): the
/// walk reached the bottom of the stack and the root frame is named right.
fn every_stack_ends_in_reset(pb: &Path) -> Result<(), String> {
    let traces = pprof(&["-traces", "-sample_index=inuse_space"], pb);
    let blocks: Vec<&str> = traces
        .split("-----------+")
        .skip(1)
        .filter(|b| b.lines().filter(|l| !l.trim().is_empty()).count() > 1)
        .collect();
    if blocks.is_empty() {
        return Err(format!("no stacks in pprof -traces:\n{traces}"));
    }
    for b in blocks {
        let root = b
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .trim();
        if root != "Reset" && !root.ends_with(" Reset") {
            return Err(format!("a stack ends in `{root}`, not Reset:{b}"));
        }
    }
    Ok(())
}

/// The opt-level matrix (`cargo xtask firmware --matrix`, run by `cargo xtask test`):
/// the same firmware built at every opt-level, with and without LTO. At each, the
/// allocating function (not its caller, as when the allocator shim inlined into it hid
/// it) is the top in-use row with a line of its body, and every stack ends in `Reset`.
#[test]
fn the_leak_tops_inuse_and_stacks_end_in_reset_at_every_opt_level_and_lto() {
    let matrix = firmware_out().join("matrix");
    let mut failures = Vec::new();
    let mut checked = 0;
    for level in ["0", "1", "2", "3", "s", "z"] {
        for lto in ["nolto", "lto"] {
            let name = format!("o{level}-{lto}");
            let out = matrix.join(&name);
            assert!(
                out.join(ELF_NAME).is_file(),
                "{} is missing: `cargo xtask firmware --matrix` did not build opt-level {level} ({lto})",
                out.display()
            );
            let snaps = snapshots(&out);
            let pb = convert(&out, snaps.last().unwrap(), &format!("matrix-{name}"));
            for r in [
                leak_tops_inuse_with_its_line(&pb, &DEMO_LEAK),
                every_stack_ends_in_reset(&pb),
            ] {
                if let Err(e) = r {
                    failures.push(format!("opt-level {level}, {lto}: {e}"));
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 12);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The newcomer test: `cargo xtask guide` assembled a firmware from the code blocks of
/// `docs/integrating.md` section 1 alone (into `target/guide-firmware`), built it at
/// cargo's default release profile (opt-level 3) and ran it in QEMU. Its leak is the top
/// in-use row in `heapsnap top` and in `go tool pprof`, at a line of its body, every
/// stack ends in `Reset`, and the guide names that function where it says so.
#[test]
fn the_guides_firmware_at_default_release_names_its_leak() {
    const GUIDE_LEAK: Leak = Leak {
        func: "my_firmware::app::App::record_event",
        file: "target/guide-firmware/src/main.rs",
    };
    let guide = std::fs::read_to_string(repo_root().join("docs/integrating.md")).unwrap();
    assert!(
        guide.contains(&format!("`{}` first", GUIDE_LEAK.func)),
        "docs/integrating.md no longer says that `heapsnap top` puts {} first",
        GUIDE_LEAK.func
    );
    let out = firmware_out().join("guide");
    assert!(
        out.join(ELF_NAME).is_file(),
        "{} is missing: `cargo xtask guide` did not run (or failed) before this test",
        out.display()
    );
    let snaps = snapshots(&out);
    let last = snaps.last().unwrap();
    let top = run(Command::new(heapsnap())
        .arg("top")
        .arg("--elf")
        .arg(out.join(ELF_NAME))
        .arg(last));
    // `Showing nodes …`, the column header, then the rows.
    let rows = e2e::top_body(&top);
    assert!(
        rows.get(2).is_some_and(|r| r.contains(GUIDE_LEAK.func)),
        "heapsnap top does not put {} first:\n{top}",
        GUIDE_LEAK.func
    );
    let pb = convert(&out, last, "guide");
    for r in [
        leak_tops_inuse_with_its_line(&pb, &GUIDE_LEAK),
        every_stack_ends_in_reset(&pb),
    ] {
        if let Err(e) = r {
            panic!("{e}");
        }
    }
}

#[test]
fn diff_of_first_and_last_snapshot_shows_the_leak_grew() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let (first, last) = (snaps.first().unwrap(), snaps.last().unwrap());
    let diff = run(Command::new(heapsnap())
        .args(["diff", "--sample-index", "inuse_space", "--elf"])
        .arg(out.join(ELF_NAME))
        .arg(first)
        .arg(last));
    // `    2.56kB 85.28% 85.28%     2.56kB 85.28%  heapsnap_firmware::router::remember_message`
    // (signed as pprof prints a diff: growth positive, no `+`)
    let row = first_top_row(&diff);
    assert!(
        row.ends_with(LEAK_FN),
        "the leak is not what grew most from {first:?} to {last:?}:\n{diff}"
    );
    let growth = row.split_whitespace().next().unwrap();
    assert!(
        !growth.starts_with('-')
            && growth
                .trim_start_matches(['0', '.'])
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit()),
        "{LEAK_FN} did not grow (flat {growth}):\n{diff}"
    );
}

/// The viewer's top table, read off the page in headless Chromium.
#[derive(Debug, PartialEq)]
struct Row {
    name: String,
    flat: i64,
    cum: i64,
}

/// The demo page (`www/` with the profile preloaded through `?profile=`, as `cargo
/// xtask demo` serves it) in headless Chromium: it opens on the flame graph without a
/// file being picked, and its top table starts with the same rows, in the same order
/// and with the same values, as `go tool pprof -top` on the same file.
#[test]
fn viewer_preloads_the_firmware_profile_and_shows_pprofs_top_rows() {
    let out = firmware_out();
    let www = e2e::www();
    let snaps = snapshots(&out);
    let pb = convert(&out, snaps.last().unwrap(), "viewer");
    let dir = target_dir().join("firmware-e2e/viewer");
    let result = e2e::browser_script(
        "firmware_view.mjs",
        &[www.as_os_str(), pb.as_os_str(), dir.as_os_str()],
        &dir,
    );
    eprintln!("screenshot: {}", dir.join("flame.png").display());
    assert_eq!(
        result["errors"],
        Value::Array(vec![]),
        "uncaught errors in the page"
    );
    assert_eq!(result["sampleType"], "inuse_space");
    assert!(
        result["flamePainted"].as_u64().unwrap_or(0) > 2000,
        "the flame graph is (nearly) blank: {}",
        result["flamePainted"]
    );

    let tip = result["tooltip"].as_str().unwrap_or_default();
    assert!(
        tip.contains(LEAK_FN),
        "hovering the deepest flame frame does not show the leak: {tip:?}"
    );
    // Regression: hovering once re-created the canvas and left the flame graph blank.
    assert!(
        result["flamePaintedWhileHovering"].as_u64().unwrap_or(0) > 2000,
        "the flame graph went blank while hovering: {}",
        result["flamePaintedWhileHovering"]
    );

    // The exact heap totals, counted on the device, shown among the profile's notes.
    let snap = sampler_core::snapshot::decode(&std::fs::read(snaps.last().unwrap()).unwrap())
        .expect("the last snapshot decodes");
    let h = snap
        .counters
        .heap()
        .expect("the firmware counts heap totals");
    let shown = format!(
        "heap (exact): {} bytes in use in {} objects, peak {} bytes;",
        h.in_use_bytes,
        h.in_use_objects(),
        h.peak_bytes
    );
    assert!(
        result["comments"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c.as_str().is_some_and(|c| c.starts_with(&shown)))),
        "the viewer does not show `{shown}`: {}",
        result["comments"]
    );

    let page: Vec<Row> = result["top"]
        .as_array()
        .expect("top rows")
        .iter()
        .map(|r| Row {
            name: r["name"].as_str().unwrap_or_default().to_owned(),
            flat: r["flat"].as_f64().unwrap_or(-1.0) as i64,
            cum: r["cum"].as_f64().unwrap_or(-1.0) as i64,
        })
        .collect();
    let text = pprof(
        &[
            "-top",
            "-nodefraction=0",
            "-unit=bytes",
            "-sample_index=inuse_space",
        ],
        &pb,
    );
    let theirs: Vec<Row> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let num = |s: &str| {
                s.trim_end_matches(char::is_alphabetic)
                    .parse::<i64>()
                    .unwrap_or(-1)
            };
            let name = f[5..].join(" ");
            Row {
                name: name.trim_end_matches(" (inline)").to_owned(),
                flat: num(f[0]),
                cum: num(f[3]),
            }
        })
        .collect();
    // The rows that carry flat values (the allocation sites), in order.
    let sites = theirs.iter().take_while(|r| r.flat > 0).count();
    assert!(
        sites >= 3,
        "pprof shows fewer allocation sites than the firmware has:\n{text}"
    );
    assert!(
        theirs[0].name.ends_with(LEAK_FN),
        "pprof's top row is not the leak:\n{text}"
    );
    assert_eq!(
        page.get(..sites),
        theirs.get(..sites),
        "the viewer's top rows differ from go tool pprof -top:\n{text}"
    );
}

/// The Thumb frame-pointer walker yields whole stacks on the device: the leak's trace
/// runs from `remember_message` through every caller down to the reset handler, and
/// the firmware's capacities dropped nothing (every drop counter is zero).
#[test]
fn thumb_stacks_are_whole_and_nothing_was_dropped() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let last = snaps.last().unwrap();
    let snap = sampler_core::snapshot::decode(&std::fs::read(last).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", last.display()));
    assert_eq!(snap.word_size, 4, "a Cortex-M3 snapshot has 32-bit frames");
    let deepest = snap
        .stacks
        .iter()
        .map(|s| s.frames.len())
        .max()
        .unwrap_or(0);
    assert!(
        deepest >= 6,
        "the deepest stack has {deepest} frames: the walker stops early on Thumb"
    );
    let c = snap.counters;
    assert_eq!(
        (
            c.stack_table_full,
            c.bucket_table_full,
            c.live_map_full,
            c.truncated_stacks,
            c.reentrant
        ),
        (0, 0, 0, 0, 0),
        "the firmware's tables overflowed or stacks were cut: {c:?}"
    );

    let pb = convert(&out, last, "traces");
    let traces = pprof(&["-traces", "-sample_index=inuse_space"], &pb);
    let leak = traces
        .split("-----------+")
        .find(|t| t.contains(LEAK_FN))
        .unwrap_or_else(|| panic!("no trace through {LEAK_FN}:\n{traces}"));
    let frames: Vec<&str> = leak
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|f| f.contains("::") || *f == "main" || *f == "Reset")
        .collect();
    let expected = [
        "heapsnap_firmware::router::remember_message",
        "heapsnap_firmware::router::route_message",
        "heapsnap_firmware::router::Router::handle_message",
        "heapsnap_firmware::__cortex_m_rt_main",
        "main",
        "Reset",
    ];
    assert_eq!(frames, expected, "the leak's stack, leaf to root:\n{leak}");
}

/// Another build's ELF for a firmware snapshot (which carries no build id): the same
/// source at opt-level `s` against a snapshot of the opt-level 3 build. It used to
/// give confident garbage with exit 0; now the return addresses that follow no call
/// instruction in it are counted and the ELF is refused, unless `--force-elf`. The
/// right ELF passes without a warning.
/// The GNU build id of `elf` as `readelf -n` prints it (hex).
fn build_id(elf: &Path) -> String {
    let notes = run(Command::new("readelf").arg("-n").arg(elf));
    notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_owned))
        .unwrap_or_else(|| panic!("{} has no build id:\n{notes}", elf.display()))
}

/// Every firmware snapshot names its build: `inspect` shows the mapping with the ELF's
/// build id, and the converted profile's mapping has the ELF's build id and the file
/// offset of `.text` taken from the ELF (the firmware sends 0: it cannot know it).
#[test]
fn firmware_snapshots_carry_the_elfs_build_id_and_pprof_gets_the_file_offset() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let snap = snapshots(&out).pop().unwrap();
    let id = build_id(&elf);
    let inspect = run(Command::new(heapsnap()).arg("inspect").arg(&snap));
    assert!(
        inspect.contains(&id),
        "inspect does not show build id {id}:\n{inspect}"
    );
    // `.text`'s file offset and address, from the ELF's section headers.
    let sections = run(Command::new("readelf").args(["-W", "-S"]).arg(&elf));
    let text = sections
        .lines()
        .find(|l| l.contains(" .text "))
        .unwrap_or_else(|| panic!("no .text in:\n{sections}"));
    let cols: Vec<&str> = text.split_whitespace().collect();
    let at = cols.iter().position(|c| *c == ".text").unwrap();
    let (addr, off) = (
        u64::from_str_radix(cols[at + 2], 16).unwrap(),
        u64::from_str_radix(cols[at + 3], 16).unwrap(),
    );
    let pb = convert(&out, &snap, "build-id");
    let raw = pprof(&["-raw"], &pb);
    let mapping = raw
        .lines()
        .skip_while(|l| !l.starts_with("Mappings"))
        .nth(1)
        .unwrap_or_else(|| panic!("no mapping in pprof -raw:\n{raw}"));
    // `1: 0x400/0x8250/0x10400 heapsnap-firmware.elf <build id> [FN][FL]…`
    let want = format!("{addr:#x}/");
    assert!(
        mapping.contains(&want),
        "mapping does not start at .text {addr:#x}: {mapping}"
    );
    let offset = mapping
        .split_whitespace()
        .nth(1)
        .and_then(|r| r.rsplit('/').next())
        .unwrap_or_default();
    assert_eq!(
        offset,
        format!("{off:#x}"),
        "file offset of .text: {mapping}"
    );
    assert!(
        mapping.contains(&id),
        "pprof mapping without build id {id}: {mapping}"
    );
}

#[test]
fn another_builds_elf_is_refused_for_a_firmware_snapshot() {
    let matrix = firmware_out().join("matrix");
    let snap = snapshots(&matrix.join("o3-nolto")).pop().unwrap();
    let wrong = matrix.join("os-nolto").join(ELF_NAME);
    let right = matrix.join("o3-nolto").join(ELF_NAME);
    let out = Command::new(heapsnap())
        .args(["top", "--elf"])
        .arg(&wrong)
        .arg(&snap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The snapshot carries the firmware's build id (cortex_m::firmware_mapping): the
    // other build's ELF is refused by its id, both ids named.
    let (wrong_id, right_id) = (build_id(&wrong), build_id(&right));
    assert_ne!(wrong_id, right_id);
    assert!(
        err.contains(&format!("build id {wrong_id}"))
            && err.contains(&format!("build id {right_id}"))
            && err.contains("different build")
            && err.contains("--force-elf"),
        "{err}"
    );
    let forced = Command::new(heapsnap())
        .args(["top", "--force-elf", "--elf"])
        .arg(&wrong)
        .arg(&snap)
        .output()
        .unwrap();
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    let good = Command::new(heapsnap())
        .args(["top", "--elf"])
        .arg(&right)
        .arg(&snap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&good.stderr);
    assert!(good.status.success() && !err.contains("warning"), "{err}");
}

/// The exact heap totals agree with the allocator itself: after each snapshot the
/// firmware prints embedded-alloc's `used()` next to the totals it counted, and the
/// snapshot file carries the same totals (`heapsnap inspect` prints them). `used()`
/// counts the linked-list allocator's blocks, each request rounded up to 4 bytes and at
/// least 8, so requested ≤ used ≤ requested + 7 per object; and the heap is not empty.
#[test]
fn heap_totals_agree_with_the_allocators_used_bytes() {
    let out = firmware_out();
    let log = std::fs::read_to_string(out.join("qemu.log")).expect("qemu.log");
    let snaps = snapshots(&out);
    for snap in &snaps {
        let name = snap.file_name().unwrap().to_string_lossy().into_owned();
        let line = log
            .lines()
            .find(|l| l.starts_with(&format!("{name} after ")))
            .unwrap_or_else(|| panic!("qemu.log has no line for {name}:\n{log}"));
        // "…; heap used U B, requested R B in N objects, peak P B; …"
        let num = |after: &str| -> u64 {
            let rest = &line[line
                .find(after)
                .unwrap_or_else(|| panic!("no `{after}` in {line}"))
                + after.len()..];
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let (used, requested, objects, peak) = (
            num("heap used "),
            num("requested "),
            num(" B in "),
            num("peak "),
        );
        let decoded = sampler_core::snapshot::decode(&std::fs::read(snap).unwrap()).unwrap();
        let h = decoded
            .counters
            .heap()
            .unwrap_or_else(|| panic!("{name}: no heap totals"));
        assert_eq!(
            (h.in_use_bytes, h.in_use_objects(), h.peak_bytes),
            (requested, objects, peak),
            "{name}: the snapshot's totals differ from the firmware's print: {line}"
        );
        assert!(
            objects > 0 && h.allocs > h.frees,
            "{name}: an empty heap? {h:?}"
        );
        assert!(
            requested <= used && used <= requested + 7 * objects,
            "{name}: requested {requested} B in {objects} objects vs the allocator's used {used} B: {line}"
        );
        assert!(
            peak >= requested && peak <= 16 * 1024,
            "{name}: peak {peak}: {line}"
        );
        let inspect = e2e::run(Command::new(heapsnap()).arg("inspect").arg(snap));
        assert!(
            inspect.contains(&format!(
                "heap (exact)     {requested} bytes in use in {objects} objects, peak {peak} bytes; {} allocs, {} frees",
                h.allocs, h.frees
            )),
            "{name}: {inspect}"
        );
    }
}
