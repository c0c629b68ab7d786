//! Symbolization against a real binary built here: a C fixture compiled with DWARF,
//! whose captured return address lies just after a call inlined from an
//! `always_inline` function (addr2line's `tests/correctness.rs` idea). Checks names,
//! lines, inlined frames (innermost first), the minus-one on return addresses, PIE
//! translation through the mapping and program headers, build-id matching, and the
//! errors for an ELF without DWARF and for one from another build.

use heapsnap_profile::import::{self as convert, Symbols};
use heapsnap_profile::profile::Profile;
use heapsnap_symbolize::{ConvertError, Elf, Resolver, SymbolizeError};
use sampler_core::decoded::{Bucket, Mapping, Snapshot, Stack};
use sampler_core::Cycle;
use std::path::{Path, PathBuf};
use std::process::Command;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/symfix.c");

fn tmp() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("symbolize");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles the fixture with the C compiler every Rust toolchain needs as its linker.
fn compile(name: &str, extra: &[&str]) -> PathBuf {
    let out = tmp().join(name);
    let st = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-O1", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o"])
        .arg(&out)
        .args(extra)
        .arg(SRC)
        .status()
        .expect("cannot run the C compiler `cc`");
    assert!(st.success(), "compiling {SRC} failed");
    out
}

/// Line number of the fixture line tagged `LINE:<tag>`.
fn line_of(tag: &str) -> u32 {
    let src = std::fs::read_to_string(SRC).unwrap();
    let needle = format!("LINE:{tag} ");
    src.lines()
        .position(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no LINE:{tag}")) as u32
        + 1
}

/// Runs the fixture: a snapshot of one allocation whose stack is the captured return
/// address, with the executable's mappings and build id, as a host sampler writes it.
fn run_fixture(exe: &Path) -> (Snapshot, u64) {
    let out = Command::new(exe).output().expect("run fixture");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let build_id = Elf::parse_lenient("x", &std::fs::read(exe).unwrap())
        .unwrap()
        .build_id()
        .unwrap()
        .to_vec();
    let mut mappings = Vec::new();
    let mut ra = 0;
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        match f[0] {
            "map" => mappings.push(Mapping {
                start: hex(f[1]),
                end: hex(f[2]),
                offset: hex(f[3]),
                name: f[4].to_owned(),
                build_id: build_id.clone(),
            }),
            "ra" => ra = hex(f[1]),
            _ => {}
        }
    }
    assert!(!mappings.is_empty() && ra != 0, "fixture output: {text}");
    let snap = Snapshot {
        version: 1,
        word_size: 8,
        sample_rate: 1,
        cycle: 1,
        mappings,
        stacks: vec![Stack {
            id: 1,
            frames: vec![ra],
        }],
        buckets: vec![Bucket {
            stack_id: 1,
            size: 48,
            active: Cycle {
                allocs: 2,
                frees: 1,
                alloc_bytes: 96,
                free_bytes: 48,
            },
        }],
        ..Default::default()
    };
    (snap, ra)
}

fn convert_with(snap: &Snapshot, elves: Vec<Elf>, local: bool) -> Result<Profile, ConvertError> {
    let mut load = |p: &str| Ok(std::fs::read(p).ok());
    let mut r = Resolver::new(
        snap,
        elves,
        if local {
            Some(&mut load as heapsnap_symbolize::Loader<'_>)
        } else {
            None
        },
    )?;
    Ok(convert::to_profile(
        snap,
        &mut r as &mut dyn Symbols,
        &mut |_, _| {},
    ))
}

/// (function, line) of each line of the only location, innermost first.
fn lines(p: &Profile) -> Vec<(String, i64)> {
    assert_eq!(p.location.len(), 1);
    p.location[0]
        .line
        .iter()
        .map(|l| {
            let f = p.function.iter().find(|f| f.id == l.function_id).unwrap();
            (p.str(f.name).to_owned(), l.line)
        })
        .collect()
}

#[test]
fn inlined_frames_and_call_line_of_a_return_address() {
    let exe = compile("symfix", &["-g"]);
    let (snap, ra) = run_fixture(&exe);
    let elf = Elf::parse(&exe.display().to_string(), &std::fs::read(&exe).unwrap()).unwrap();
    let p = convert_with(&snap, vec![elf], false).unwrap();
    p.check_valid().unwrap();
    assert_eq!(
        lines(&p),
        vec![
            ("helper".to_owned(), line_of("helper-call") as i64),
            ("outer".to_owned(), line_of("outer-call") as i64)
        ],
        "inlined helper first, then its caller, both on the call's line"
    );
    let loc = &p.location[0];
    assert_eq!(
        loc.address, ra,
        "Location.address keeps the captured return address"
    );
    let m = p
        .mapping
        .iter()
        .find(|m| m.id == loc.mapping_id)
        .expect("location has its mapping");
    assert!(m.has_functions && m.has_filenames && m.has_line_numbers && m.has_inline_frames);
    assert_eq!(p.str(m.filename), exe.display().to_string());
    let f = p
        .function
        .iter()
        .find(|f| p.str(f.name) == "helper")
        .unwrap();
    assert!(
        p.str(f.filename).ends_with("fixtures/symfix.c"),
        "{}",
        p.str(f.filename)
    );

    // The same address looked up without the minus one lands on the next line: the
    // subtraction is what puts the frame on the call.
    let elf = Elf::parse("symfix", &std::fs::read(&exe).unwrap()).unwrap();
    let m0 = &snap.mappings[0];
    let vaddr = elf.vaddr_of_file_offset(ra - m0.start + m0.offset).unwrap();
    let (raw, _) = elf.frames_at(vaddr);
    assert_eq!(raw[0].line, line_of("after-call"));
    assert_eq!(
        elf.frames_at_return_address(vaddr).0[0].line,
        line_of("helper-call")
    );

    // Unsampled values at rate 1: exactly the sampled ones.
    assert_eq!(p.sample[0].value[..], [2, 96, 1, 48]);
}

#[test]
fn mapped_file_on_disk_is_used_without_elf() {
    let exe = compile("symfix-disk", &["-g"]);
    let (snap, _) = run_fixture(&exe);
    let p = convert_with(&snap, vec![], true).unwrap();
    assert_eq!(lines(&p)[0].0, "helper");
    // And without it (and without --elf), the address stays, with its mapping.
    let p = convert_with(&snap, vec![], false).unwrap();
    assert!(p.location[0].line.is_empty());
    assert_ne!(p.location[0].mapping_id, 0);
    let m = &p.mapping[0];
    assert!(!m.has_functions && !m.has_filenames && !m.has_line_numbers && !m.has_inline_frames);
}

#[test]
fn elf_without_dwarf_is_an_error() {
    let exe = compile("symfix-nodebug", &["-g0", "-s"]);
    let e = Elf::parse("symfix-nodebug", &std::fs::read(&exe).unwrap()).unwrap_err();
    assert!(matches!(e, SymbolizeError::NoDwarf { .. }));
    assert!(
        e.to_string().contains("symfix-nodebug: ELF has no DWARF"),
        "{e}"
    );
    let e = Elf::parse("README", b"hello, not an elf").unwrap_err();
    assert!(
        e.to_string().starts_with("README: not a readable ELF file"),
        "{e}"
    );
}

#[test]
fn elf_from_another_build_is_an_error() {
    let exe = compile("symfix-build", &["-g"]);
    let (snap, _) = run_fixture(&exe);
    // Same name, different code: a different build id.
    let dir = tmp().join("other");
    std::fs::create_dir_all(&dir).unwrap();
    let other = dir.join("symfix-build");
    let st = Command::new("cc")
        .args(["-g", "-O0", "-DOTHER_BUILD=1", "-Wl,--build-id", "-o"])
        .arg(&other)
        .arg(SRC)
        .status()
        .unwrap();
    assert!(st.success());
    let elf = Elf::parse(
        &other.display().to_string(),
        &std::fs::read(&other).unwrap(),
    )
    .unwrap();
    let e = convert_with(&snap, vec![elf], false).unwrap_err();
    assert!(matches!(e, ConvertError::BuildIdMismatch { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("does not match the snapshot's mapping"),
        "{e}"
    );

    // An ELF of an unrelated name and build id: it matches no mapping.
    let renamed = dir.join("unrelated");
    std::fs::copy(&other, &renamed).unwrap();
    let elf = Elf::parse("unrelated", &std::fs::read(&renamed).unwrap()).unwrap();
    let e = convert_with(&snap, vec![elf], false).unwrap_err();
    assert!(
        e.to_string()
            .contains("matches none of the snapshot's mappings"),
        "{e}"
    );

    // A snapshot without build ids accepts the ELF by name.
    let mut no_ids = snap.clone();
    no_ids.mappings[0].build_id.clear();
    let elf = Elf::parse(&exe.display().to_string(), &std::fs::read(&exe).unwrap()).unwrap();
    let p = convert_with(&no_ids, vec![elf], false).unwrap();
    assert_eq!(lines(&p)[0].0, "helper");
}
