//! The leak check where it is meant to run: the demo firmware's leak-check run in QEMU
//! (`cargo xtask firmware`: sample rate 1, `leaks-snap.bin` with the object table and
//! `leaks-ram.bin` of its static data, under `HEAPSNAP_FIRMWARE_OUT/leaks`) through
//! `heapsnap leaks` and `heapsnap retain` and `go tool pprof`. The firmware counts what
//! it loses itself (`lost: N blocks, B bytes` in its console log): the check must find
//! exactly that, at the right line, and the retention profile must put the unpruned
//! cache under the static that holds it, which the viewer labels as a retention profile
//! (in headless Chromium: that test also needs the bundle, `cargo xtask viewer`). A
//! core file of the run (`--core`) must give the answer its RAM image and registers give.
//!
//! Fails (never skips) when the artifacts are missing, like `firmware_e2e`.

use e2e::{heapsnap, parse_pprof_top, pprof, repo_root, run, target_dir, TopRow};
use std::path::{Path, PathBuf};
use std::process::Command;

const ELF_NAME: &str = "heapsnap-firmware.elf";
/// The static that owns the router, and so the cache (`firmware/src/main.rs`).
const HOLDER: &str = "heapsnap_firmware::ROUTER";
/// The router's field that holds the cache (`firmware/src/router.rs`).
const FIELD: &str = "seen";
/// The unpruned cache's allocation site and the lost acks' one.
const CACHE_FN: &str = "heapsnap_firmware::router::remember_message";
const LOST_FN: &str = "heapsnap_firmware::router::queue_ping_ack";

/// The leak-check run's folder and the ELF, checked to be there.
fn artifacts() -> (PathBuf, PathBuf) {
    let dir = std::env::var_os("HEAPSNAP_FIRMWARE_OUT").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "HEAPSNAP_FIRMWARE_OUT is not set: run `cargo xtask test`, or `cargo xtask firmware` and then \
             HEAPSNAP_FIRMWARE_OUT=$PWD/target/firmware-out cargo test -p e2e --test firmware_leaks"
        )
    });
    let leaks = dir.join("leaks");
    for f in [
        "leaks-snap.bin",
        "leaks-ram.bin",
        "leaks-regs.txt",
        "qemu.log",
    ] {
        assert!(
            leaks.join(f).is_file(),
            "{} is missing: `cargo xtask firmware` did not run the leak-check run",
            leaks.join(f).display()
        );
    }
    (leaks, dir.join(ELF_NAME))
}

/// The firmware's console: its own count of lost blocks and bytes, and where its RAM
/// image starts.
fn ground_truth(leaks: &Path) -> (u64, u64, String) {
    let log = std::fs::read_to_string(leaks.join("qemu.log")).unwrap();
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("lost: "))
        .unwrap_or_else(|| panic!("no `lost:` line in the firmware's log:\n{log}"));
    // "N blocks, B bytes"
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let addr = log
        .lines()
        .find_map(|l| {
            l.split(" bytes at ")
                .nth(1)
                .filter(|_| l.contains("leaks-ram.bin"))
        })
        .unwrap_or_else(|| panic!("no RAM image address in the firmware's log:\n{log}"))
        .trim()
        .to_owned();
    assert!(nums[0] > 0, "the firmware lost nothing: {line}");
    (nums[0], nums[1], addr)
}

/// The firmware's own count of what `main` holds in its local `held` (blocks, bytes).
fn held_by_main(leaks: &Path) -> (u64, u64) {
    let log = std::fs::read_to_string(leaks.join("qemu.log")).unwrap();
    let line = log
        .lines()
        .find_map(|l| l.strip_prefix("held by main: "))
        .unwrap_or_else(|| panic!("no `held by main:` line in the firmware's log:\n{log}"));
    let nums: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1])
}

/// The arguments of a leak check of the leak-check run: the ELF, the RAM image, the
/// registers it captured (so the stack from their sp is a root) and the snapshot.
fn leak_args(cmd: &mut Command, leaks: &Path, elf: &Path, addr: &str) {
    cmd.arg("--elf")
        .arg(elf)
        .arg("--ram")
        .arg(format!("{}@{addr}", leaks.join("leaks-ram.bin").display()))
        .arg("--regs")
        .arg(leaks.join("leaks-regs.txt"))
        .arg(leaks.join("leaks-snap.bin"));
}

/// `heapsnap retain` of the leak-check run with the ELF `elf`, into
/// `target/firmware-leaks/NAME`.
fn retained(leaks: &Path, elf: &Path, addr: &str, name: &str) -> PathBuf {
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let pb = tmp.join(name);
    let mut c = Command::new(heapsnap());
    c.arg("retain").arg("-o").arg(&pb);
    leak_args(&mut c, leaks, elf, addr);
    run(&mut c);
    pb
}

/// `go tool pprof -top` of `pb` in bytes, every node, with these extra flags.
fn top_bytes(pb: &Path, extra: &[&str]) -> Vec<TopRow> {
    let mut args = vec!["-top", "-unit=bytes", "-nodefraction=0"];
    args.extend_from_slice(extra);
    parse_pprof_top(&pprof(&args, pb))
}

/// The row of `name` in `top`.
fn row(top: &[TopRow], name: &str) -> TopRow {
    top.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no {name} in pprof -top: {top:#?}"))
        .clone()
}

/// Lines of `fn NAME` in the router's source, read from the file so edits follow.
fn fn_lines(name: &str) -> std::ops::RangeInclusive<u32> {
    let src = std::fs::read_to_string(repo_root().join("firmware/src/router.rs")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&format!("fn {name}(")))
        .unwrap();
    let end = (start..lines.len()).find(|&i| lines[i] == "}").unwrap();
    (start as u32 + 1)..=(end as u32 + 1)
}

#[test]
fn leaks_reports_exactly_what_the_firmware_lost_at_its_line() {
    let (leaks, elf) = artifacts();
    let (blocks, bytes, addr) = ground_truth(&leaks);
    let mut c = Command::new(heapsnap());
    c.arg("leaks");
    leak_args(&mut c, &leaks, &elf, &addr);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a definite leak must exit 1:\n{text}\n{err}"
    );
    assert!(
        text.contains(&format!(
            "definitely lost: {bytes} bytes in {blocks} blocks"
        )),
        "the firmware lost {blocks} blocks, {bytes} bytes:\n{text}"
    );
    assert!(
        text.contains("indirectly lost: 0 bytes in 0 blocks"),
        "{text}"
    );
    assert!(
        text.contains("possibly lost: 0 bytes in 0 blocks"),
        "{text}"
    );
    assert!(
        !text.contains("PARTIAL ANSWER"),
        "rate 1 is a whole answer:\n{text}"
    );
    // The one loss record is the acks', at a line of queue_ping_ack.
    let record = text
        .split("\n\n")
        .find(|r| r.contains("are definitely lost in loss record"))
        .unwrap_or_else(|| panic!("no loss record:\n{text}"));
    assert!(record.contains("in loss record 1 of 1"), "{record}");
    let at = record
        .lines()
        .find_map(|l| l.trim().strip_prefix("at "))
        .unwrap();
    assert!(at.starts_with(LOST_FN), "allocation site {at}");
    let line: u32 = at
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches(')')
        .parse()
        .unwrap();
    assert!(
        at.contains("firmware/src/router.rs:") && fn_lines("queue_ping_ack").contains(&line),
        "{at} is not in queue_ping_ack {:?}",
        fn_lines("queue_ping_ack")
    );
    // The cache is there, still reachable.
    let reachable = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("still reachable: "))
        .unwrap();
    assert!(!reachable.starts_with("0 bytes"), "{text}");
}

#[test]
fn retention_profile_puts_the_cache_under_the_static_that_holds_it() {
    let (leaks, elf) = artifacts();
    let (_, bytes, addr) = ground_truth(&leaks);
    let pb = retained(&leaks, &elf, &addr, "retained.pb.gz");
    let top = top_bytes(&pb, &[]);
    let row = |name: &str| row(&top, name);
    let cache = row(CACHE_FN);
    let holder = row(HOLDER);
    assert!(cache.flat > 0);
    assert!(
        holder.cum >= cache.flat,
        "{HOLDER} holds {} B, less than the cache's {} B",
        holder.cum,
        cache.flat
    );
    // Every byte of the cache is under the holder: focused on it, the cache is whole.
    let focused = top_bytes(&pb, &[&format!("-focus=^{HOLDER}$")]);
    let under = focused.iter().find(|r| r.name == CACHE_FN).unwrap();
    assert_eq!(
        under.flat, cache.flat,
        "part of the cache is held elsewhere"
    );
    // The lost acks sit under their category, with the firmware's byte count.
    assert_eq!(row("[definitely lost]").cum, bytes as i64);
    let comments = pprof(&["-comments"], &pb);
    assert!(
        comments.contains(heapsnap_profile::leaks::RETENTION_COMMENT),
        "{comments}"
    );
}

/// The viewer, in headless Chromium, labels the retention profile as one (its frames are
/// references, not calls), and not the heap profile of the same snapshot.
#[test]
fn the_viewer_labels_the_retention_profile_and_not_the_heap_profile() {
    let (leaks, elf) = artifacts();
    let (_, _, addr) = ground_truth(&leaks);
    let retention = retained(&leaks, &elf, &addr, "retained-viewer.pb.gz");
    let heap = e2e::convert_snapshot(
        &elf,
        &leaks.join("leaks-snap.bin"),
        "firmware-leaks",
        "heap-viewer.pb.gz",
    );
    let dir = target_dir().join("firmware-leaks").join("viewer");
    let result = e2e::open_in_viewer(
        &dir,
        &[
            ("retention", vec![retention.as_path()]),
            ("heap", vec![heap.as_path()]),
        ],
    );
    let case = |name: &str| {
        let c = &result[name];
        assert!(c["error"].is_null(), "{name}: the page refused it: {c}");
        assert!(c["status"].is_string(), "{name}: not loaded: {c}");
        c
    };
    let label = case("retention")["retention"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no retention label on the retention profile: {}",
                result["retention"]
            )
        })
        .to_owned();
    assert_eq!(label, heapsnap_profile::leaks::RETENTION_COMMENT);
    // On top of the profile's notes, where it is read first.
    assert_eq!(
        case("retention")["comments"][0].as_str(),
        Some(label.as_str())
    );
    assert!(
        label.starts_with("Retention profile") && label.contains("not a call stack"),
        "{label}"
    );
    // The same profile: its frames are the holders.
    let names: Vec<&str> = case("retention")["top"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        names.contains(&HOLDER),
        "{HOLDER} not in the page's top table: {names:?}"
    );
    assert!(
        case("heap")["retention"].is_null(),
        "the heap profile is labelled a retention profile: {}",
        result["heap"]
    );
}

/// `go tool pprof -traces` of `pb` as stacks, leaf first.
fn traces(pb: &Path) -> Vec<Vec<String>> {
    pprof(&["-traces"], pb)
        .split("-----------+")
        .skip(1)
        .map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| {
                    // The first line carries the value before the leaf frame.
                    let l = l.trim();
                    let name = l.split_once("   ").map_or(l, |(_, f)| f.trim());
                    (!name.is_empty()).then(|| name.to_owned())
                })
                .collect::<Vec<_>>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// Typed scanning from the firmware's DWARF: the cache is held by ROUTER's field
/// `seen` (through the `Option` and the `Vec`, elided), each entry by its element
/// (`[0]`…`[9]`, then `[10+]`), not by an address.
#[test]
fn retention_profile_names_the_field_and_elements_that_hold_the_cache() {
    let (leaks, elf) = artifacts();
    let (_, _, addr) = ground_truth(&leaks);
    let pb = retained(&leaks, &elf, &addr, "retained-typed.pb.gz");
    let top = top_bytes(&pb, &[]);
    let row = |name: &str| row(&top, name);
    let cache = row(CACHE_FN);
    assert_eq!(
        row(FIELD).cum,
        cache.flat,
        "the field {FIELD} holds exactly the cache"
    );
    // Focused on the field, the whole cache is there.
    let focused = top_bytes(&pb, &[&format!("-focus=^{FIELD}$")]);
    let under = focused.iter().find(|r| r.name == CACHE_FN).unwrap();
    assert_eq!(under.flat, cache.flat);
    // The stacks: the cache's entries end (root last) in `[i]`, `seen`, ROUTER; the
    // firmware remembered more than ten, so `[10+]` holds some.
    let t = traces(&pb);
    let tail = |s: &Vec<String>| s[s.len().saturating_sub(3)..].to_vec();
    let entries: Vec<&Vec<String>> = t
        .iter()
        .filter(|s| s.first().map(String::as_str) == Some(CACHE_FN) && s.len() >= 3)
        .filter(|s| s[s.len() - 3].starts_with('['))
        .collect();
    assert!(
        !entries.is_empty(),
        "no cache entry under an element: {t:#?}"
    );
    for e in &entries {
        let tail = tail(e);
        assert_eq!(tail[1..], [FIELD.to_owned(), HOLDER.to_owned()], "{e:#?}");
    }
    assert!(
        entries.iter().any(|e| tail(e)[0] == "[10+]")
            && entries.iter().any(|e| tail(e)[0] == "[0]"),
        "{entries:#?}"
    );
    // The ack still on the "DMA" is held by the raw pointer field.
    let ack = t
        .iter()
        .find(|s| s.first().map(String::as_str) == Some(LOST_FN) && s.contains(&HOLDER.to_owned()))
        .unwrap_or_else(|| panic!("no reachable ack: {t:#?}"));
    assert_eq!(
        tail(ack)[1..],
        ["pending_ack".to_owned(), HOLDER.to_owned()]
    );
}

/// An ELF without DWARF (`strip --strip-debug`): the roots still come from its symbol
/// table and the check is still exact, but the scan is conservative only and says so;
/// the retention profile names holders by allocation site, not by field.
#[test]
fn an_elf_without_dwarf_falls_back_to_symbols_and_a_conservative_scan() {
    let (leaks, elf) = artifacts();
    let (blocks, bytes, addr) = ground_truth(&leaks);
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let stripped = tmp.join("heapsnap-firmware-stripped.elf");
    run(Command::new("arm-none-eabi-strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(&elf));
    let mut c = Command::new(heapsnap());
    c.arg("leaks");
    leak_args(&mut c, &leaks, &stripped, &addr);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("has no DWARF") && text.contains("conservative scan only"),
        "the fallback must be said:\n{text}"
    );
    assert!(
        text.contains(&format!(
            "definitely lost: {bytes} bytes in {blocks} blocks"
        )),
        "{text}"
    );
    // The site from the symbol table: the function, no file and line.
    assert!(text.contains(&format!("at {LOST_FN}\n")), "{text}");
    // No CFI either (.debug_frame is debug info): the stack's frames come from the
    // return addresses on it, and it says so.
    assert!(
        text.contains("by the return addresses on the stack"),
        "{text}"
    );

    let pb = retained(&leaks, &stripped, &addr, "retained-stripped.pb.gz");
    let top = top_bytes(&pb, &[]);
    assert!(top.iter().any(|r| r.name == HOLDER), "{top:#?}");
    assert!(
        !top.iter()
            .any(|r| r.name == FIELD || r.name.starts_with("[10")),
        "no field names without DWARF: {top:#?}"
    );
    assert!(
        top.iter().any(|r| r.name.starts_with("[alloc: ")),
        "untyped holders are named by allocation: {top:#?}"
    );
    assert!(pprof(&["-comments"], &pb).contains("conservative scan only"));
}

/// `heapsnap leaks` with these extra arguments and the snapshot `snap`: (exit code,
/// stdout, stderr).
fn leaks_with(ram: &[String], snap: &Path, elf: &Path) -> (Option<i32>, String, String) {
    let mut c = Command::new(heapsnap());
    c.arg("leaks").arg("--elf").arg(elf);
    for r in ram {
        c.arg("--ram").arg(r);
    }
    let out = c.arg(snap).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Bad inputs get one clear line and exit 1, never a panic: a RAM image at the wrong
/// address, a truncated one, two that overlap, a snapshot without the object table.
#[test]
fn bad_inputs_are_refused_with_what_and_where() {
    let (leaks, elf) = artifacts();
    let (_, _, addr) = ground_truth(&leaks);
    let ram = leaks.join("leaks-ram.bin");
    let snap = leaks.join("leaks-snap.bin");
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let base = u64::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
    let no_panic = |err: &str| assert!(!err.contains("panicked"), "{err}");

    // Wrong address: the static data is not where the image claims.
    let (code, _, err) = leaks_with(
        &[format!("{}@{:#x}", ram.display(), base + 0x1000)],
        &snap,
        &elf,
    );
    assert_eq!(code, Some(1));
    no_panic(&err);
    assert!(err.contains("is not in the RAM images"), "{err}");

    // A truncated image: the heap's last objects are past its end.
    let bytes = std::fs::read(&ram).unwrap();
    let short = tmp.join("short-ram.bin");
    std::fs::write(&short, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, err) = leaks_with(&[format!("{}@{addr}", short.display())], &snap, &elf);
    assert_eq!(code, Some(1));
    no_panic(&err);
    assert!(err.contains("short-ram.bin"), "{err}");

    // Overlapping images.
    let (code, _, err) = leaks_with(
        &[
            format!("{}@{addr}", ram.display()),
            format!("{}@{:#x}", short.display(), base + 16),
        ],
        &snap,
        &elf,
    );
    assert_eq!(code, Some(1));
    assert!(err.contains("overlap"), "{err}");

    // A snapshot written without the object table (the periodic ones).
    let v1 = leaks.parent().unwrap().join("snap-000.bin");
    let (code, _, err) = leaks_with(&[format!("{}@{addr}", ram.display())], &v1, &elf);
    assert_eq!(code, Some(1));
    assert!(err.contains("no object table"), "{err}");

    // Not FILE@ADDR.
    let (code, _, err) = leaks_with(&[ram.display().to_string()], &snap, &elf);
    assert_eq!(code, Some(1));
    assert!(err.contains("expected FILE@ADDR"), "{err}");
}

/// At a sample rate above 1 only sampled objects are known: the answer says it is
/// partial, how much of the heap the known objects cover, and still checks them.
#[test]
fn a_sampled_snapshot_is_an_explicitly_partial_answer() {
    let (leaks, elf) = artifacts();
    let (_, _, addr) = ground_truth(&leaks);
    let mut s =
        sampler_core::snapshot::decode(&std::fs::read(leaks.join("leaks-snap.bin")).unwrap())
            .unwrap();
    // As if sampled at 512 B: keep every fourth object.
    s.sample_rate = 512;
    let objs = s.objects.take().unwrap();
    s.objects = Some(objs.into_iter().step_by(4).collect());
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let snap = tmp.join("sampled-snap.bin");
    std::fs::write(&snap, s.encode().unwrap()).unwrap();
    let (_, out, err) = leaks_with(
        &[format!("{}@{addr}", leaks.join("leaks-ram.bin").display())],
        &snap,
        &elf,
    );
    assert!(!err.contains("panicked"), "{err}");
    let first = out.lines().next().unwrap_or("");
    assert!(
        first.starts_with("warning: PARTIAL ANSWER")
            && first.contains("sample rate 512")
            && first.contains("% of the"),
        "{out}"
    );
}

/// The retention profile of the leak-check run with the registers: `main`'s local
/// `held` (a Vec of boxes no static points at) is the root of exactly what the
/// firmware says it holds, named by function and variable from DWARF at main's pc in
/// the stack walk; without the stack the same objects are definitely lost.
#[test]
fn a_local_holding_heap_objects_is_named_by_function_and_variable() {
    const LOCAL: &str = "heapsnap_firmware::__cortex_m_rt_main::held";
    const HOLD_FN: &str = "heapsnap_firmware::router::hold_batch";
    let (leaks, elf) = artifacts();
    let (lost_blocks, lost_bytes, addr) = ground_truth(&leaks);
    let (held_blocks, held_bytes) = held_by_main(&leaks);
    let pb = retained(&leaks, &elf, &addr, "retained-stack.pb.gz");
    let top = top_bytes(&pb, &[]);
    assert_eq!(
        row(&top, LOCAL).cum,
        held_bytes as i64,
        "{LOCAL} must hold the firmware's {held_bytes} B: {top:#?}"
    );
    assert_eq!(row(&top, HOLD_FN).flat, held_bytes as i64);
    // Every held object's path starts at the local (root last in pprof's traces).
    let t = traces(&pb);
    let held: Vec<&Vec<String>> = t
        .iter()
        .filter(|s| s.first().map(String::as_str) == Some(HOLD_FN))
        .collect();
    assert!(!held.is_empty(), "{t:#?}");
    for s in &held {
        assert_eq!(s.last().map(String::as_str), Some(LOCAL), "{s:#?}");
    }
    // The walk's frames are said, innermost first, from CFI (no fallback note).
    let comments = pprof(&["-comments"], &pb);
    assert!(
        comments.contains(
            "stack frames, innermost first: heapsnap_firmware::dump_leak_check <- heapsnap_firmware::__cortex_m_rt_main"
        ),
        "{comments}"
    );
    assert!(!comments.contains("return addresses"), "{comments}");

    // Without the registers the stack is no root: the held batch looks lost.
    let ram = format!("{}@{addr}", leaks.join("leaks-ram.bin").display());
    let (code, out, err) = leaks_with(&[ram], &leaks.join("leaks-snap.bin"), &elf);
    assert_eq!(code, Some(1), "{err}");
    // The Vec's buffer leads its group (definitely lost), the boxes hang off it.
    let (def, ind) = (
        totals(&out, "definitely lost"),
        totals(&out, "indirectly lost"),
    );
    assert_eq!(
        (def.0 + ind.0, def.1 + ind.1),
        (lost_bytes + held_bytes, lost_blocks + held_blocks),
        "without the stack, main's batch ({held_blocks} blocks, {held_bytes} B) is lost too:\n{out}"
    );
    assert_eq!(ind.1, held_blocks - 1, "{out}");
}

/// (bytes, blocks) of a category in the summary (`definitely lost: 1,234 bytes in 5 blocks`).
fn totals(out: &str, category: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{category}: ")))
        .unwrap_or_else(|| panic!("no {category} in:\n{out}"));
    let nums: Vec<u64> = line
        .replace(',', "")
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    (nums[0], nums[1])
}

/// The address of the Vec buffer `main` holds, from the loss record `heapsnap leaks`
/// prints for it when the stack is not given.
fn held_buffer_addr(leaks: &Path, elf: &Path, addr: &str) -> String {
    let ram = format!("{}@{addr}", leaks.join("leaks-ram.bin").display());
    let (_, out, _) = leaks_with(&[ram], &leaks.join("leaks-snap.bin"), elf);
    let record = out
        .split("\n\n")
        .find(|r| r.contains("are definitely lost") && r.contains("hold_batch"))
        .unwrap_or_else(|| panic!("no loss record of hold_batch:\n{out}"));
    let objs = record
        .lines()
        .find_map(|l| l.trim().strip_prefix("objects: "))
        .unwrap();
    objs.split(", ")
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// A pointer held only in a register (`--reg r4=ADDR`, here the held Vec's buffer and
/// no stack): the buffer and the boxes it points to are still reachable, held by the
/// register, and the check finds exactly the firmware's lost blocks again.
#[test]
fn a_pointer_held_only_in_a_register_is_a_root_named_by_the_register() {
    let (leaks, elf) = artifacts();
    let (lost_blocks, lost_bytes, addr) = ground_truth(&leaks);
    let buf = held_buffer_addr(&leaks, &elf, &addr);
    let run_with = |reg: &str| {
        let out = Command::new(heapsnap())
            .arg("leaks")
            .arg("--elf")
            .arg(&elf)
            .arg("--ram")
            .arg(format!("{}@{addr}", leaks.join("leaks-ram.bin").display()))
            .arg("--reg")
            .arg(reg)
            .arg(leaks.join("leaks-snap.bin"))
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (out, err) = run_with(&format!("r4={buf}"));
    assert!(
        out.contains(&format!(
            "definitely lost: {lost_bytes} bytes in {lost_blocks} blocks"
        )),
        "r4 = {buf} holds main's batch:\n{out}\n{err}"
    );
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let pb = tmp.join("retained-reg.pb.gz");
    run(Command::new(heapsnap())
        .arg("retain")
        .arg("-o")
        .arg(&pb)
        .arg("--elf")
        .arg(&elf)
        .arg("--ram")
        .arg(format!("{}@{addr}", leaks.join("leaks-ram.bin").display()))
        .arg("--reg")
        .arg(format!("r4={buf}"))
        .arg(leaks.join("leaks-snap.bin")));
    let (_, held_bytes) = held_by_main(&leaks);
    assert_eq!(
        row(&top_bytes(&pb, &[]), "register r4").cum,
        held_bytes as i64
    );
    // A name that is not a register of the machine is refused, saying which.
    let (_, err) = run_with("q9=0x1");
    assert!(
        err.contains("--reg q9=0x1") && !err.contains("panicked"),
        "{err}"
    );
}

/// A fully stripped ELF (`objcopy --strip-all`: no DWARF, no symbols, no CFI, no
/// stack-top symbol): the stack needs --stack, frames and sites are addresses, the
/// output says all of it, and the lost blocks are still exactly the firmware's.
#[test]
fn a_fully_stripped_elf_is_checked_conservatively_and_says_so() {
    let (leaks, elf) = artifacts();
    let (blocks, bytes, addr) = ground_truth(&leaks);
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let stripped = tmp.join("heapsnap-firmware-strip-all.elf");
    run(Command::new("arm-none-eabi-objcopy")
        .arg("--strip-all")
        .arg(&elf)
        .arg(&stripped));
    let regs = std::fs::read_to_string(leaks.join("leaks-regs.txt")).unwrap();
    let sp = regs
        .lines()
        .find_map(|l| l.strip_prefix("sp="))
        .unwrap()
        .to_owned();
    let mut c = Command::new(heapsnap());
    c.arg("leaks");
    leak_args(&mut c, &leaks, &stripped, &addr);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("no stack-top symbol") && err.contains("--stack"),
        "{err}"
    );
    let mut c = Command::new(heapsnap());
    c.arg("leaks")
        .arg("--stack")
        .arg(format!("{sp}..0x20010000"));
    leak_args(&mut c, &leaks, &stripped, &addr);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for said in [
        "neither DWARF nor a symbol table",
        "conservative scan only",
        "no call frame information",
    ] {
        assert!(text.contains(said), "`{said}` must be said:\n{text}");
    }
    assert!(
        text.contains(&format!(
            "definitely lost: {bytes} bytes in {blocks} blocks"
        )),
        "{text}"
    );
}

/// An ELF core file of the leak-check run, made here by hand as a kernel writes one
/// for a 32-bit ARM process: the RAM image as its one `PT_LOAD` segment, the captured
/// registers in an `NT_PRSTATUS` note (`pr_reg` at byte 72: r0…r15, cpsr, orig_r0).
fn arm_core(leaks: &Path, addr: &str, to: &Path) {
    let ram = std::fs::read(leaks.join("leaks-ram.bin")).unwrap();
    let addr = u32::from_str_radix(addr.trim_start_matches("0x"), 16).unwrap();
    let text = std::fs::read_to_string(leaks.join("leaks-regs.txt")).unwrap();
    let mut reg = [0u32; 18];
    for l in text.lines() {
        let (n, v) = l.split_once('=').unwrap();
        let v = u32::from_str_radix(v.trim().trim_start_matches("0x"), 16).unwrap();
        let i = match n.trim() {
            "sp" => 13,
            "lr" => 14,
            "pc" => 15,
            r => r.trim_start_matches('r').parse().unwrap(),
        };
        reg[i] = v;
    }
    let mut desc = vec![0u8; 72];
    for r in reg {
        desc.extend_from_slice(&r.to_le_bytes());
    }
    desc.extend_from_slice(&[0; 4]); // pr_fpvalid
    let mut note = Vec::new();
    for w in [5u32, desc.len() as u32, 1] {
        note.extend_from_slice(&w.to_le_bytes()); // namesz, descsz, NT_PRSTATUS
    }
    note.extend_from_slice(b"CORE\0\0\0\0");
    note.extend_from_slice(&desc);
    let (note_off, load_off) = (52 + 2 * 32, 52 + 2 * 32 + note.len() as u32);
    let mut f = Vec::new();
    f.extend_from_slice(b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0");
    for h in [4u16, 40] {
        f.extend_from_slice(&h.to_le_bytes()); // ET_CORE, EM_ARM
    }
    for w in [1u32, 0, 52, 0, 0] {
        f.extend_from_slice(&w.to_le_bytes()); // version, entry, phoff, shoff, flags
    }
    for h in [52u16, 32, 2, 40, 0, 0] {
        f.extend_from_slice(&h.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
    }
    let ph =
        |f: &mut Vec<u8>, w: [u32; 8]| w.iter().for_each(|x| f.extend_from_slice(&x.to_le_bytes()));
    let n = note.len() as u32;
    let r = ram.len() as u32;
    ph(&mut f, [4, note_off, 0, 0, n, 0, 0, 4]); // PT_NOTE
    ph(&mut f, [1, load_off, addr, 0, r, r, 6, 4]); // PT_LOAD, rw
    f.extend_from_slice(&note);
    f.extend_from_slice(&ram);
    std::fs::write(to, f).unwrap();
}

/// `--core` is the RAM image and the registers in one file: the leak check of the
/// run's core says exactly what the check of its RAM image and registers files says.
#[test]
fn a_core_file_gives_the_same_answer_as_the_ram_image_and_registers() {
    let (leaks, elf) = artifacts();
    let (lost_blocks, lost_bytes, addr) = ground_truth(&leaks);
    let tmp = target_dir().join("firmware-leaks");
    std::fs::create_dir_all(&tmp).unwrap();
    let core = tmp.join("leaks.core");
    arm_core(&leaks, &addr, &core);
    let check = |c: &mut Command| {
        let out = c.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut files = Command::new(heapsnap());
    files.arg("leaks");
    leak_args(&mut files, &leaks, &elf, &addr);
    let (want, _) = check(&mut files);
    let (got, err) = check(
        Command::new(heapsnap())
            .arg("leaks")
            .arg("--elf")
            .arg(&elf)
            .arg("--core")
            .arg(&core)
            .arg(leaks.join("leaks-snap.bin")),
    );
    assert!(
        got.contains(&format!(
            "definitely lost: {lost_bytes} bytes in {lost_blocks} blocks"
        )),
        "{got}\n{err}"
    );
    // The same loss records; the notes name the images, so only they differ.
    let body = |s: &str| s[s.find("LEAK SUMMARY:").unwrap()..].to_owned();
    assert_eq!(body(&got), body(&want));
    assert!(
        got.contains("stack frames, innermost first"),
        "the core's registers walked the stack:\n{got}"
    );

    // The program's ELF given as its core is refused as not a core.
    let out = Command::new(heapsnap())
        .arg("leaks")
        .arg("--elf")
        .arg(&elf)
        .arg("--core")
        .arg(&elf)
        .arg(leaks.join("leaks-snap.bin"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not a core file") && !err.contains("panicked"),
        "{err}"
    );
}
