//! Typed scanning on real programs: a Rust and a C fixture (`tests/fixtures/`) are
//! built for the host with debug info, as non-PIE executables so the ELF's addresses
//! are the run's, and run; each writes its static's bytes and every heap object's bytes
//! with a name that says how the program holds it. The leak check then scans that
//! memory with the types read from the fixture's DWARF, and every object's reference
//! path must name the fields and elements that hold it (`HOLDER`, `list`, `[10+]`,
//! `Message.body`), while objects reached through untyped memory (a pointer kept in an
//! integer, a `void *`) stay conservative: found, and named by their holder's
//! allocation. The C fixture's heap also has valgrind's harder cases: a buffer held
//! only by an interior pointer, an unreachable cycle, self-referencing nodes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use heapsnap_profile::leaks::{self, Category, Image, Leaks, Memory, Object, PathFrame};

/// One dumped region: `KIND NAME ADDR HEX`.
struct Region {
    kind: String,
    name: String,
    addr: u64,
    bytes: Vec<u8>,
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("typed-scan");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn check(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Build the Rust fixture (once for all tests): debug info, no optimization, a
/// non-PIE executable.
fn build_rust() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(build_rust_once).clone()
}

fn build_rust_once() -> PathBuf {
    let exe = out_dir().join("typed_holder_rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    check(
        Command::new(rustc)
            .args(["-g", "-C", "opt-level=0", "-C", "relocation-model=static"])
            .args(["-C", "link-arg=-no-pie", "--edition", "2021"])
            .args(["--crate-name", "fixture", "-o"])
            .arg(&exe)
            .arg(fixture("typed_holder.rs")),
    );
    exe
}

/// Build the C fixture the same way (once: two tests run it).
fn build_c() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(build_c_once).clone()
}

fn build_c_once() -> PathBuf {
    let exe = out_dir().join("typed_holder_c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    check(
        Command::new(cc)
            .args(["-g", "-O0", "-no-pie", "-o"])
            .arg(&exe)
            .arg(fixture("typed_holder.c")),
    );
    exe
}

/// Run the fixture and read its regions.
fn run(exe: &Path) -> Vec<Region> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let dump = exe.with_extension(format!("{n}.regions"));
    check(Command::new(exe).arg(&dump));
    let text = std::fs::read_to_string(&dump).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let hex = f[3];
            Region {
                kind: f[0].into(),
                name: f[1].into(),
                addr: u64::from_str_radix(f[2].trim_start_matches("0x"), 16).unwrap(),
                bytes: (0..hex.len() / 2)
                    .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                    .collect(),
            }
        })
        .collect()
}

/// The scan's answer and each object's name (from the fixture), by address.
struct Scanned {
    leaks: Leaks,
    names: HashMap<u64, String>,
}

impl Scanned {
    fn index(&self, name: &str) -> usize {
        let addr = self
            .names
            .iter()
            .find(|(_, n)| *n == name)
            .unwrap_or_else(|| panic!("no object {name}"))
            .0;
        self.leaks
            .objects
            .iter()
            .position(|o| o.addr == *addr)
            .unwrap()
    }

    /// The reference path of object `name` as strings: the root's name, fields and
    /// elements, `<alloc NAME>` for an untyped holder.
    fn path(&self, name: &str) -> Vec<String> {
        self.leaks
            .reference_path(self.index(name))
            .into_iter()
            .map(|f| match f {
                PathFrame::Root(r) => r.name.clone(),
                PathFrame::Field(s) => s.to_owned(),
                PathFrame::Object(o) => format!("<alloc {}>", self.names[&o.addr]),
            })
            .collect()
    }

    fn category(&self, name: &str) -> Category {
        self.leaks.category[self.index(name)]
    }

    fn typed(&self, name: &str) -> bool {
        self.leaks.typed[self.index(name)]
    }
}

/// Scan the fixture's memory from its static `root` (by the ELF's symbol), typed by
/// its DWARF when `typed`.
fn scan(exe: &Path, root: &str, typed: bool) -> Scanned {
    let regions = run(exe);
    let elf = std::fs::read(exe).unwrap();
    let data = heapsnap_symbolize::static_data("fixture", &elf).unwrap();
    let types = data.types.as_ref().expect("the fixture has DWARF");
    let roots: Vec<_> = data
        .roots
        .iter()
        .filter(|r| r.name == root)
        .cloned()
        .collect();
    assert_eq!(roots.len(), 1, "{root} in {:?}", data.roots.len());
    let dumped = regions.iter().find(|r| r.kind == "root").unwrap();
    assert_eq!(
        dumped.addr, roots[0].start,
        "a non-PIE build runs at its ELF addresses"
    );
    let objects = regions
        .iter()
        .filter(|r| r.kind == "obj")
        .map(|r| Object {
            addr: r.addr,
            size: r.bytes.len() as u64,
            stack_id: 0,
        })
        .collect();
    let names = regions
        .iter()
        .filter(|r| r.kind == "obj")
        .map(|r| (r.addr, r.name.clone()))
        .collect();
    let images = regions
        .iter()
        .map(|r| Image {
            name: r.name.clone(),
            addr: r.addr,
            bytes: r.bytes.clone(),
        })
        .collect();
    let memory = Memory::new(images, data.word_size, data.big_endian).unwrap();
    let leaks = leaks::scan_typed(&memory, roots, objects, typed.then_some(types)).unwrap();
    Scanned { leaks, names }
}

fn frames(f: &[&str]) -> Vec<String> {
    f.iter().map(|s| s.to_string()).collect()
}

#[test]
fn rust_fixture_paths_name_fields_and_elements() {
    let s = scan(&build_rust(), "fixture::HOLDER", true);
    const H: &str = "fixture::HOLDER";
    assert_eq!(s.leaks.typed_roots, 1);
    // A struct's Box field; the boxed struct's Box<[u8]> field, named by its type.
    assert_eq!(s.path("boxed"), frames(&[H, "boxed"]));
    assert_eq!(s.path("boxed.body"), frames(&[H, "boxed", "Message.body"]));
    // A Vec of Boxes: the buffer under the field, elements by index, from the tenth on
    // as one `[10+]`.
    assert_eq!(s.path("list"), frames(&[H, "list"]));
    assert_eq!(s.path("list[3]"), frames(&[H, "list", "[3]"]));
    assert_eq!(
        s.path("list[3].body"),
        frames(&[H, "list", "[3]", "Message.body"])
    );
    assert_eq!(s.path("list[11]"), frames(&[H, "list", "[10+]"]));
    assert_eq!(
        s.path("list[11].body"),
        frames(&[H, "list", "[10+]", "Message.body"])
    );
    // A raw pointer is followed by its pointee type.
    assert_eq!(s.path("raw.body"), frames(&[H, "raw", "Message.body"]));
    // An array of Option<Box<u64>> (None in the middle).
    assert_eq!(s.path("slots[0]"), frames(&[H, "slots", "[0]"]));
    assert_eq!(s.path("slots[2]"), frames(&[H, "slots", "[2]"]));
    // A pointer hidden in a usize: found by the conservative scan, named by its field,
    // and what it points to is untyped, scanned conservatively.
    assert_eq!(s.path("hidden"), frames(&[H, "hidden"]));
    assert!(!s.typed("hidden") && s.typed("raw") && s.typed("list[11]"));
    assert_eq!(
        s.path("hidden.body"),
        frames(&[H, "hidden", "<alloc hidden>"])
    );
    assert_eq!(s.category("hidden.body"), Category::StillReachable);
    // The lost Box: definitely lost, its body indirectly.
    assert_eq!(s.category("lost"), Category::DefinitelyLost);
    assert_eq!(s.category("lost.body"), Category::IndirectlyLost);
    assert!(s.path("lost").is_empty());
    let reachable = s
        .leaks
        .category
        .iter()
        .filter(|c| **c == Category::StillReachable)
        .count();
    assert_eq!(reachable, s.leaks.objects.len() - 2);
}

/// Types name paths; they never change what is reachable. Without them the same memory
/// gives the same categories, and every holder is named by its allocation.
#[test]
fn rust_fixture_without_types_is_the_conservative_answer() {
    let exe = build_rust();
    let typed = scan(&exe, "fixture::HOLDER", true);
    let plain = scan(&exe, "fixture::HOLDER", false);
    assert_eq!(plain.leaks.typed_roots, 0);
    assert!((0..plain.leaks.objects.len()).all(|i| plain.leaks.label(i).is_empty()));
    for name in typed.names.values() {
        assert_eq!(typed.category(name), plain.category(name), "{name}");
    }
    assert_eq!(
        plain.path("list[11].body"),
        frames(&["fixture::HOLDER", "<alloc list>", "<alloc list[11]>"])
    );
}

#[test]
fn c_fixture_paths_name_members_array_elements_and_list_links() {
    let s = scan(&build_c(), "HOLDER", true);
    const H: &str = "HOLDER";
    assert_eq!(s.path("boxed"), frames(&[H, "boxed"]));
    // Through a typedef to the struct: named by the struct's tag.
    assert_eq!(s.path("boxed.body"), frames(&[H, "boxed", "msg.body"]));
    // An array of pointers in the static.
    assert_eq!(s.path("list[3]"), frames(&[H, "list", "[3]"]));
    assert_eq!(
        s.path("list[11].body"),
        frames(&[H, "list", "[10+]", "msg.body"])
    );
    // A linked list: each link named.
    assert_eq!(s.path("head"), frames(&[H, "head"]));
    assert_eq!(
        s.path("head.next.next"),
        frames(&[H, "head", "node.next", "node.next"])
    );
    // Untyped holders stay conservative: an integer, a void pointer, a union.
    assert_eq!(
        s.path("hidden.body"),
        frames(&[H, "hidden", "<alloc hidden>"])
    );
    assert_eq!(
        s.path("opaque.body"),
        frames(&[H, "opaque", "<alloc opaque>"])
    );
    assert_eq!(s.path("u.body"), frames(&[H, "u", "<alloc u>"]));
    assert!(!s.typed("opaque") && s.typed("boxed"));
    // A node that points to itself, held: reachable, the self-reference not a step.
    assert_eq!(s.path("loop"), frames(&[H, "loop"]));
    // Everything else the static holds is reachable.
    let lost = ["inside", "cycle_a", "cycle_b", "lost_self"];
    for (addr, name) in &s.names {
        if !lost.contains(&name.as_str()) {
            assert_eq!(
                s.category(name),
                Category::StillReachable,
                "{name} at {addr:#x}"
            );
        }
    }
}

/// valgrind's categories on a real C program's heap: a buffer held only by a pointer
/// into its middle is possibly lost; of two nodes that point to each other and that
/// nothing else holds, one is definitely lost and the other indirectly; a node that
/// points only to itself is definitely lost (its own pointer does not keep it).
#[test]
fn c_fixture_interior_pointers_cycles_and_self_references_get_valgrinds_categories() {
    let s = scan(&build_c(), "HOLDER", true);
    assert_eq!(s.category("inside"), Category::PossiblyLost);
    let cycle = [s.category("cycle_a"), s.category("cycle_b")];
    assert!(
        cycle.contains(&Category::DefinitelyLost) && cycle.contains(&Category::IndirectlyLost),
        "{cycle:?}"
    );
    assert_eq!(s.category("lost_self"), Category::DefinitelyLost);
    assert_eq!(s.category("loop"), Category::StillReachable);
    // The conservative scan agrees.
    let plain = scan(&build_c(), "HOLDER", false);
    for name in ["inside", "cycle_a", "cycle_b", "lost_self", "loop"] {
        assert_eq!(plain.category(name), s.category(name), "{name}");
    }
}
