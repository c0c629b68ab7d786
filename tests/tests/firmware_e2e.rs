//! The chain where it is meant to run: the Cortex-M3 firmware (`firmware/`) ran in QEMU
//! under `cargo xtask test` (or `cargo xtask firmware`) and wrote snapshots over
//! semihosting into `HEAPSNAP_FIRMWARE_OUT`, next to a copy of its ELF. These tests take
//! those real artifacts through `heapsnap convert --elf`, `go tool pprof`, `heapsnap diff`
//! and the viewer in headless Chromium, and check that every one of them points at the
//! firmware's leak, `router::remember_message`, by name and source line.
//!
//! They fail (never skip) when the artifacts are missing: run them through
//! `cargo xtask test`, or `cargo xtask firmware` first and set the variable yourself.

use e2e::{first_top_row, heapsnap, pprof, repo_root, run, target_dir};
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
    e2e::firmware_output(
        "HEAPSNAP_FIRMWARE_OUT",
        ELF_NAME,
        "cargo xtask firmware",
        "firmware_e2e",
    )
}

/// The firmware's snapshots, oldest first.
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    e2e::firmware_snapshots(dir)
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
    convert_with(&out.join(ELF_NAME), snap, test)
}

/// [`convert`] with the ELF `elf`.
fn convert_with(elf: &Path, snap: &Path, test: &str) -> PathBuf {
    let name = snap.with_extension("pb.gz");
    let name = name.file_name().unwrap().to_string_lossy();
    e2e::convert_snapshot(elf, snap, "firmware-e2e", &format!("{test}-{name}"))
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
    every_stack_ends_in(pb, "Reset")
}

/// Every in-use stack of `pb` ends in the function `root` (the runtime's entry).
fn every_stack_ends_in(pb: &Path, want: &str) -> Result<(), String> {
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
        if root != want && !root.ends_with(&format!(" {want}")) {
            return Err(format!("a stack ends in `{root}`, not {want}:{b}"));
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
    let (diff, first, last) = e2e::diff_first_and_last(&firmware_out(), ELF_NAME);
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

/// The firmware's snapshot dropped in the browser together with its ELF is symbolized
/// there (the importer module, the CLI's symbolizer compiled to wasm): the same top
/// table as `go tool pprof -top` of the CLI's conversion, the leak on top. Alone, the
/// snapshot shows its addresses and says the ELF is missing; the ELF alone is refused.
#[test]
fn the_viewer_symbolizes_a_snapshot_dropped_with_its_elf() {
    let out = firmware_out();
    let snaps = snapshots(&out);
    let snap = snaps.last().unwrap();
    let elf = out.join("heapsnap-firmware.elf");
    let pb = convert(&out, snap, "viewer-import");
    let dir = target_dir().join("firmware-e2e/viewer-import");
    let result = e2e::open_in_viewer(
        &dir,
        &[
            ("with_elf", vec![snap.as_path(), elf.as_path()]),
            ("alone", vec![snap.as_path()]),
            ("elf_alone", vec![elf.as_path()]),
        ],
    );

    let with = &result["with_elf"];
    assert!(with["error"].is_null(), "refused: {}", with["error"]);
    let st = with["sampleType"].as_str().expect("a sample type");
    let theirs = e2e::parse_pprof_top(&pprof(
        &[
            "-top",
            "-nodefraction=0",
            "-unit=bytes",
            &format!("-sample_index={st}"),
        ],
        &pb,
    ));
    assert!(
        theirs[0].name.ends_with(LEAK_FN),
        "pprof's top row is not the leak: {:?}",
        theirs[0]
    );
    e2e::assert_same_table("snapshot + ELF", &e2e::page_rows(&with["top"]), &theirs);

    let alone = &result["alone"];
    assert!(alone["error"].is_null(), "refused: {}", alone["error"]);
    let names: Vec<&str> = alone["top"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        !names.iter().any(|n| n.contains(LEAK_FN)),
        "symbolized without an ELF: {names:?}"
    );
    assert!(
        alone["comments"].as_array().is_some_and(|c| c
            .iter()
            .any(|c| c.as_str().is_some_and(|c| c.contains("no ELF given")))),
        "no warning that the ELF is missing: {}",
        alone["comments"]
    );
    let e = result["elf_alone"]["error"].as_str().unwrap_or_default();
    assert!(e.contains("ELF alone"), "the ELF alone: {e:?}");
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

/// The RISC-V firmware's run (`cargo xtask firmware --riscv`, run by `cargo xtask
/// test`): its folder under `HEAPSNAP_FIRMWARE_OUT` and the ELF copy there.
fn riscv_out() -> (PathBuf, PathBuf) {
    let out = firmware_out().join("riscv32");
    let elf = out.join("heapsnap-firmware-riscv.elf");
    assert!(
        elf.is_file(),
        "{} is missing: `cargo xtask firmware --riscv` did not run (or failed)",
        elf.display()
    );
    (out, elf)
}

/// sampler-core's `riscv-rt` feature on a real riscv32imac firmware in QEMU `virt`
/// (`firmware-riscv/`, cargo's default release opt-level): `riscv_rt::RtStack` walks
/// `s0` frame records inside riscv-rt's stack symbols, the snapshot went out through
/// `riscv_rt::SemihostingSink` with `riscv_rt::firmware_mapping`'s build id. The leak,
/// `decode_reading`, tops in-use space at a line of its body, its stack is the whole
/// known call chain down to riscv-rt's `_start_rust` (no garbage root frame from
/// `_start`), every stack ends there, and nothing was dropped.
#[test]
fn riscv_rt_firmware_names_its_leak_with_the_whole_stack() {
    let (out, elf) = riscv_out();
    let snaps = snapshots(&out);
    let last = snaps.last().unwrap();
    let snap = sampler_core::snapshot::decode(&std::fs::read(last).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", last.display()));
    assert_eq!(snap.word_size, 4, "riscv32 frames are 32-bit");
    let c = snap.counters;
    assert!(c.samples > 100, "few samples: {c:?}");
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
    let id = build_id(&elf);
    let inspect = run(Command::new(heapsnap()).arg("inspect").arg(last));
    assert!(
        inspect.contains(&id),
        "the snapshot does not carry the ELF's build id {id}:\n{inspect}"
    );

    let pb = convert_with(&elf, last, "riscv");
    let leak = Leak {
        func: "::decode_reading",
        file: "firmware-riscv/src/main.rs",
    };
    if let Err(e) = leak_tops_inuse_with_its_line(&pb, &leak) {
        panic!("{e}");
    }
    if let Err(e) = every_stack_ends_in(&pb, "_start_rust") {
        panic!("{e}");
    }
    let traces = pprof(&["-traces", "-sample_index=inuse_space"], &pb);
    let trace = traces
        .split("-----------+")
        .find(|t| t.contains("decode_reading"))
        .unwrap_or_else(|| panic!("no trace through decode_reading:\n{traces}"));
    let frames: Vec<&str> = trace
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|f| f.contains("::") || *f == "main" || f.starts_with(['_', '<', '[']))
        .collect();
    assert_eq!(
        frames,
        [
            "heapsnap_firmware_riscv::decode_reading",
            "heapsnap_firmware_riscv::read_sample",
            "heapsnap_firmware_riscv::SensorLog::poll",
            "main",
            "_start_rust",
        ],
        "the leak's stack, leaf to root:\n{trace}"
    );
}

/// The RISC-V firmware's ELF with every loaded address moved down by 0x8000_0000 (its
/// program headers, allocated sections and entry point rewritten): real riscv32 code
/// whose segments start at 0 and so cover the Cortex-M demo's flash addresses. What a
/// 32-bit ELF of another architecture that happens to overlap looks like to `verify`.
fn riscv_elf_at_zero() -> PathBuf {
    let (_, elf) = riscv_out();
    let mut d = std::fs::read(&elf).unwrap();
    const DELTA: u32 = 0x8000_0000;
    let u16_at = |d: &[u8], at: usize| u16::from_le_bytes([d[at], d[at + 1]]) as usize;
    let u32_at = |d: &[u8], at: usize| u32::from_le_bytes(d[at..at + 4].try_into().unwrap());
    let put = |d: &mut Vec<u8>, at: usize, v: u32| d[at..at + 4].copy_from_slice(&v.to_le_bytes());
    assert_eq!(&d[..6], b"\x7fELF\x01\x01", "an ELF32 little-endian");
    assert_eq!(u16_at(&d, 18), 243, "a RISC-V ELF");
    let entry = u32_at(&d, 0x18);
    put(&mut d, 0x18, entry.wrapping_sub(DELTA));
    let (phoff, shoff) = (u32_at(&d, 0x1c) as usize, u32_at(&d, 0x20) as usize);
    let (phsize, phnum) = (u16_at(&d, 0x2a), u16_at(&d, 0x2c));
    let (shsize, shnum) = (u16_at(&d, 0x2e), u16_at(&d, 0x30));
    for i in 0..phnum {
        let at = phoff + i * phsize;
        for field in [8, 12] {
            let v = u32_at(&d, at + field);
            if v >= DELTA {
                put(&mut d, at + field, v - DELTA);
            }
        }
    }
    for i in 0..shnum {
        let at = shoff + i * shsize;
        let (flags, addr) = (u32_at(&d, at + 8), u32_at(&d, at + 12));
        if flags & 2 != 0 && addr >= DELTA {
            put(&mut d, at + 12, addr - DELTA);
        }
    }
    let dir = target_dir().join("firmware-e2e");
    std::fs::create_dir_all(&dir).unwrap();
    let moved = dir.join("riscv-at-zero.elf");
    std::fs::write(&moved, d).unwrap();
    moved
}

/// The demo's last snapshot as a firmware that publishes no mapping writes it (no build
/// id to check an ELF by), with `elf_machine` as given (0: an encoder before it).
fn demo_snapshot_without_mapping(elf_machine: u64, test: &str) -> PathBuf {
    let last = snapshots(&firmware_out()).pop().unwrap();
    let mut snap = sampler_core::snapshot::decode(&std::fs::read(&last).unwrap()).unwrap();
    assert_eq!(
        snap.counters.elf_machine, 40,
        "the Cortex-M demo says it is Arm code"
    );
    snap.mappings.clear();
    snap.counters.elf_machine = elf_machine;
    let dir = target_dir().join("firmware-e2e");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{test}-no-mapping.bin"));
    std::fs::write(&path, sampler_core::snapshot::encode_to_vec(&snap).unwrap()).unwrap();
    path
}

/// `heapsnap top` with `args`: (exit code, stderr).
fn top_with(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    let out = Command::new(heapsnap())
        .arg("top")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Wrong architecture, same word size: a 32-bit RISC-V ELF whose segments cover a
/// Cortex-M snapshot's addresses, for a snapshot without a build id. It used to pass
/// (only Thumb code is checked instruction by instruction); now the snapshot's
/// `elf_machine` (Arm) refuses it, naming both architectures, with exit status 1, and
/// `--force-elf` overrides. A snapshot of an encoder before `elf_machine` cannot be
/// refused on that ground: it gets a warning that nothing checked the ELF (and is not
/// refused for its addresses: the moved ELF does cover them). The right ELF passes
/// both without a warning.
#[test]
fn an_elf_of_another_architecture_is_refused_for_a_firmware_snapshot() {
    let wrong = riscv_elf_at_zero();
    let right = firmware_out().join(ELF_NAME);
    let snap = demo_snapshot_without_mapping(40, "arch");
    let (code, err) = top_with(&["--elf".as_ref(), wrong.as_os_str(), snap.as_os_str()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("riscv-at-zero.elf does not fit the snapshot")
            && err.contains("it is code for RISC-V (e_machine 243)")
            && err.contains("written by code for Arm (e_machine 40)")
            && err.contains("--force-elf"),
        "{err}"
    );
    let (code, err) = top_with(&[
        "--force-elf".as_ref(),
        "--elf".as_ref(),
        wrong.as_os_str(),
        snap.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "--force-elf: {err}");

    let old = demo_snapshot_without_mapping(0, "arch-unknown");
    let (code, err) = top_with(&["--elf".as_ref(), wrong.as_os_str(), old.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("does not say which architecture wrote it")
            && err.contains("RISC-V (e_machine 243) code")
            && err.contains("make sure it is the ELF of the firmware that ran"),
        "{err}"
    );
    for s in [&snap, &old] {
        let (code, err) = top_with(&["--elf".as_ref(), right.as_os_str(), s.as_os_str()]);
        assert!(code == Some(0) && !err.contains("warning"), "{err}");
    }
}

/// The silent mistakes of issue 18 in the viewer: each profile is made by the real CLI
/// (`heapsnap convert`) from a snapshot with that mistake, and opened in headless
/// Chromium the way the demo page opens a profile. The page must show every warning
/// `convert` printed, in the same words (one warning set, from one place):
/// * sampling off: a real host workload run at `--rate 0`;
/// * tables full: the demo firmware's last snapshot with the counters a full bucket
///   table, stack table and live-object map leave (as the CLI warning tests do);
/// * no cycle closed: that snapshot as a firmware that never calls `advance_cycle()`
///   writes it (cycle 0, nothing published);
/// * no ELF: the firmware snapshot converted without `--elf`, both without a mapping
///   (an older firmware) and with its build-id mapping (the guide's setup).
#[test]
fn the_viewer_shows_each_silent_mistakes_warning() {
    let out = firmware_out();
    let elf = out.join(ELF_NAME);
    let dir = target_dir().join("firmware-e2e/viewer-warnings");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let last = snapshots(&out).pop().unwrap();
    let real = sampler_core::snapshot::decode(&std::fs::read(&last).unwrap()).unwrap();
    let write = |name: &str, s: &sampler_core::decoded::Snapshot| {
        let p = dir.join(format!("{name}.bin"));
        std::fs::write(&p, sampler_core::snapshot::encode_to_vec(s).unwrap()).unwrap();
        p
    };
    let mut full = real.clone();
    full.counters.stack_table_full = 7;
    full.counters.bucket_table_full = 312;
    full.counters.live_map_full = 2;
    let mut never = real.clone();
    never.cycle = 0;
    for b in &mut never.buckets {
        b.active = Default::default();
    }
    let mut no_mapping = real.clone();
    no_mapping.mappings.clear();
    let off = e2e::host_workload_snapshot(&dir.join("off.snap"), &["--rate", "0"]);

    // (name, snapshot, with the firmware's ELF, the warning the page must show)
    let cases: [(&str, PathBuf, bool, &str); 5] = [
        (
            "off",
            off,
            false,
            "warning: sampling was off (rate 0): the snapshot records nothing",
        ),
        (
            "full",
            write("full", &full),
            true,
            "warning: bucket table full: 312 samples dropped; raise BUCKETS",
        ),
        (
            "never",
            write("never", &never),
            true,
            "warning: no record cycle was ever closed:",
        ),
        (
            "noelf",
            write("noelf", &no_mapping),
            false,
            "warning: no ELF given: the firmware's addresses stay unsymbolized",
        ),
        (
            "noelf-mapped",
            last.clone(),
            false,
            "warning: no ELF given, and no file of the snapshot's mappings (heapsnap-firmware) was found",
        ),
    ];
    let mut args: Vec<std::ffi::OsString> = vec![e2e::www().into(), dir.clone().into()];
    let mut printed = Vec::new();
    for (name, snap, with_elf, _) in &cases {
        let pb = dir.join(format!("{name}.pb.gz"));
        let mut c = Command::new(heapsnap());
        c.arg("convert");
        if *with_elf {
            c.arg("--elf").arg(&elf);
        }
        let o = c.arg(snap).arg("-o").arg(&pb).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "convert {name}: {err}");
        // What the CLI printed: `heapsnap: FILE: warning: …`, one per line.
        let warnings: Vec<String> = err
            .lines()
            .filter_map(|l| {
                l.split_once(": warning: ")
                    .map(|(_, w)| format!("warning: {w}"))
            })
            .collect();
        printed.push(warnings);
        let mut arg = std::ffi::OsString::from(format!("{name}="));
        arg.push(&pb);
        args.push(arg);
    }
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let result = e2e::browser_script("viewer_warnings.mjs", &refs, &dir);
    eprintln!("screenshots: {}/*.png", dir.display());
    assert_eq!(result["errors"], Value::Array(vec![]), "errors in the page");
    for ((name, _, _, want), cli) in cases.iter().zip(&printed) {
        let page = &result["profiles"][name];
        assert_eq!(
            page["error"],
            Value::Null,
            "{name}: the page refused it: {page}"
        );
        let shown: Vec<&str> = page["comments"]
            .as_array()
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            shown.iter().any(|c| c.starts_with(want)),
            "{name}: the page does not show `{want}`; it shows {shown:#?}"
        );
        assert!(
            cli.iter().any(|w| w.starts_with(want)),
            "{name}: convert did not print `{want}`: {cli:#?}"
        );
        for w in cli {
            assert!(
                shown.contains(&w.as_str()),
                "{name}: convert printed `{w}`, the page does not show it: {shown:#?}"
            );
        }
    }
}
