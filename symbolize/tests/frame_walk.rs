//! The stack walk of the leak check's stack roots (`frames.rs`) on a real program,
//! against gdb as the ground truth: the C fixture `tests/fixtures/frame_chain.c` (call
//! chain `main -> middle -> leaf -> stop_here`, heap pointers in each frame's locals) is
//! built for the host with DWARF at -O0 (locals on the stack at the frame base) and -O2
//! (locals in callee-saved registers, found live or where an inner frame saved them, by
//! location lists), then run under gdb to `stop_here`. gdb dumps the registers and the
//! stack, and says by its own unwinder and DWARF reader which functions are on the stack
//! and what each local holds (and, at -O0, where it lives). The walk, given only the
//! ELF, the registers and the stack image, must name the same frames and find every
//! local gdb reads, holding the same pointer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use heapsnap_profile::leaks::{Image, Memory};
use heapsnap_symbolize::{read_core, stack_roots, Elf, Registers, StackRoots};

const EM_X86_64: u16 = 62;

/// The locals the test asks gdb about: (gdb frame number, function, variable). Each
/// holds a heap pointer while `stop_here` runs.
const LOCALS: [(u32, &str, &str); 5] = [
    (1, "leaf", "leaf_node"),
    (1, "leaf", "from_middle"),
    (2, "middle", "middle_node"),
    (2, "middle", "middle_buffer"),
    (3, "main", "main_block"),
];

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("frame-walk");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn output(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (the test needs gcc and gdb)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What gdb says at `stop_here`.
struct Truth {
    exe: PathBuf,
    /// `info registers`, as printed.
    registers: String,
    /// The stack dump: from the stack pointer to 512 bytes above `main`'s.
    stack: Image,
    /// Functions of the backtrace, innermost first.
    frames: Vec<String>,
    /// (function, variable) -> value.
    values: BTreeMap<(String, String), u64>,
    /// (function, variable) -> address, when it lives in memory (-O0).
    addrs: BTreeMap<(String, String), u64>,
    /// gdb's `gcore` of the process at the stop.
    core: PathBuf,
}

/// The stop at `-O{opt}` (0 or 2), once for all tests (they share its files).
fn truth(opt: u32) -> &'static Truth {
    static O0: OnceLock<Truth> = OnceLock::new();
    static O2: OnceLock<Truth> = OnceLock::new();
    match opt {
        0 => O0.get_or_init(|| under_gdb(0)),
        _ => O2.get_or_init(|| under_gdb(2)),
    }
}

/// Build the fixture at `-O{opt}` (non-PIE: the run's addresses are the ELF's) and
/// stop it under gdb in `stop_here`.
fn under_gdb(opt: u32) -> Truth {
    let dir = out_dir();
    let exe = dir.join(format!("frame_chain_O{opt}"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/frame_chain.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    output(
        Command::new(cc)
            .args(["-g", &format!("-O{opt}"), "-no-pie", "-o"])
            .arg(&exe)
            .arg(&src),
    );
    let dump = dir.join(format!("stack_O{opt}.bin"));
    let _ = std::fs::remove_file(&dump);
    let mut ex: Vec<String> = [
        "set pagination off",
        "break stop_here",
        "run",
        "set $lo = $sp",
        "echo @@bt\\n",
        "bt",
        "echo @@regs\\n",
        "info registers",
        "echo @@end\\n",
    ]
    .map(String::from)
    .to_vec();
    for (frame, _, var) in LOCALS {
        ex.push(format!("frame {frame}"));
        ex.push(format!(
            "printf \"@@value %s %lu\\n\", \"{var}\", (unsigned long){var}"
        ));
        if opt == 0 {
            ex.push(format!(
                "printf \"@@addr %s %lu\\n\", \"{var}\", (unsigned long)&{var}"
            ));
        }
    }
    ex.push("frame 3".into());
    ex.push("set $hi = $sp + 512".into());
    ex.push("printf \"@@stack %lu %lu\\n\", $lo, $hi".into());
    ex.push(format!("dump binary memory {} $lo $hi", dump.display()));
    let core = dir.join(format!("frame_chain_O{opt}.core"));
    let _ = std::fs::remove_file(&core);
    ex.push(format!("gcore {}", core.display()));
    ex.push("kill".into());
    let mut gdb = Command::new("gdb");
    gdb.args(["-nx", "-batch"]);
    for e in &ex {
        gdb.arg("-ex").arg(e);
    }
    let text = output(gdb.arg(&exe));

    let section = |from: &str, to: &str| -> String {
        let s = text
            .split(from)
            .nth(1)
            .unwrap_or_else(|| panic!("no {from} in gdb's output:\n{text}"));
        s.split(to).next().unwrap().to_owned()
    };
    let frames: Vec<String> = section("@@bt\n", "@@regs")
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            // `#0  stop_here () at …`, `#1  0x… in leaf (from_middle=…) at …`
            let rest = l.split_once("  ").map_or(l, |x| x.1);
            let rest = rest.split_once(" in ").map_or(rest, |x| x.1);
            rest.split(" (").next().unwrap().trim().to_owned()
        })
        .collect();
    let registers = section("@@regs\n", "@@end");
    let mut values = BTreeMap::new();
    let mut addrs = BTreeMap::new();
    let mut stack: Option<(u64, u64)> = None;
    let func_of = |var: &str| {
        LOCALS
            .iter()
            .find(|l| l.2 == var)
            .map(|l| l.1.to_owned())
            .unwrap()
    };
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f.as_slice() {
            ["@@value", var, v] => {
                values.insert((func_of(var), (*var).to_owned()), v.parse().unwrap());
            }
            ["@@addr", var, a] => {
                addrs.insert((func_of(var), (*var).to_owned()), a.parse().unwrap());
            }
            ["@@stack", lo, hi] => stack = Some((lo.parse().unwrap(), hi.parse().unwrap())),
            _ => {}
        }
    }
    let (lo, hi) = stack.unwrap_or_else(|| panic!("gdb did not stop in stop_here:\n{text}"));
    let bytes = std::fs::read(&dump).unwrap_or_else(|e| panic!("{}: {e}\n{text}", dump.display()));
    assert_eq!(bytes.len() as u64, hi - lo, "gdb's dump of the stack");
    assert_eq!(
        values.len(),
        LOCALS.len(),
        "gdb printed every local:\n{text}"
    );
    Truth {
        exe,
        registers,
        stack: Image {
            name: "stack".into(),
            addr: lo,
            bytes,
        },
        frames,
        values,
        addrs,
        core,
    }
}

/// The walk on gdb's registers and stack, with the fixture's ELF.
fn walk(t: &Truth) -> StackRoots {
    let data = std::fs::read(&t.exe).unwrap();
    let mut regs = Registers::default();
    regs.parse_text(EM_X86_64, &t.registers, "info registers")
        .unwrap();
    let range = (t.stack.addr, t.stack.addr + t.stack.bytes.len() as u64);
    let memory = Memory::new(vec![t.stack.clone()], 8, false).unwrap();
    walk_in(&data, &memory, &regs, range)
}

fn walk_in(data: &[u8], memory: &Memory, regs: &Registers, range: (u64, u64)) -> StackRoots {
    let elf = Elf::parse("frame_chain", data).unwrap();
    assert_eq!(elf.machine(), EM_X86_64, "the host is x86-64");
    assert_eq!(regs.sp(EM_X86_64), Some(range.0), "the stack starts at sp");
    stack_roots(&elf, data, memory, regs, range)
}

/// Every local gdb reads is found by the walk holding the same pointer: on the stack
/// (a root `FUNCTION::local` whose word is the value) or in a register (a register
/// root `FUNCTION::local (REG)` with the value). Returns where each was found.
fn check_locals(t: &Truth, w: &StackRoots) -> BTreeMap<String, String> {
    let word_at = |a: u64| -> u64 {
        let o = (a - t.stack.addr) as usize;
        u64::from_le_bytes(t.stack.bytes[o..o + 8].try_into().unwrap())
    };
    let mut found = BTreeMap::new();
    for ((func, var), &value) in &t.values {
        let name = format!("{func}::{var}");
        let on_stack = w.roots.iter().find(|r| r.name == name);
        let in_reg = w
            .registers
            .iter()
            .find(|(n, _)| n.strip_prefix(&name).is_some_and(|r| r.starts_with(" (")));
        let place = match (on_stack, in_reg) {
            (Some(r), _) => {
                assert_eq!(
                    word_at(r.start),
                    value,
                    "{name}: the walk's stack slot {:#x} does not hold gdb's value {value:#x}",
                    r.start
                );
                if let Some(&a) = t.addrs.get(&(func.clone(), var.clone())) {
                    assert_eq!(r.start, a, "{name}: gdb has it at {a:#x}");
                    assert_eq!(r.size, 8, "{name}: a pointer");
                }
                format!("stack {:#x}", r.start)
            }
            (None, Some((n, v))) => {
                assert_eq!(*v, value, "{n}: gdb reads {value:#x}");
                n.clone()
            }
            (None, None) => panic!(
                "{name} (gdb: {value:#x}) is not among the walk's roots or registers:\n{:?}\n{:?}\n{:?}",
                w.roots, w.registers, w.notes
            ),
        };
        found.insert(name, place);
    }
    found
}

/// gdb's frames, innermost first, with the walk's: the same functions, by CFI (every
/// frame has a CFA), down to `main` where the return address leaves the program.
fn check_frames(t: &Truth, w: &StackRoots) {
    let main = t.frames.iter().position(|f| f == "main").unwrap();
    assert_eq!(
        t.frames[..=main],
        ["stop_here", "leaf", "middle", "main"],
        "gdb's backtrace"
    );
    let walked: Vec<&str> = w.frames.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(walked, t.frames[..=main], "notes: {:?}", w.notes);
    assert!(
        w.frames.iter().all(|f| f.cfa.is_some()),
        "every frame by CFI: {:?}",
        w.frames
    );
    // The frames tile the stack from sp up, each frame's CFA the next one's sp.
    assert_eq!(w.frames[0].sp, t.stack.addr);
    for p in w.frames.windows(2) {
        assert_eq!(p[0].cfa, Some(p[1].sp), "{:?}", w.frames);
    }
}

#[test]
fn at_o0_the_walk_names_the_frames_and_finds_each_local_where_gdb_has_it() {
    let t = truth(0);
    let w = walk(t);
    check_frames(t, &w);
    let found = check_locals(t, &w);
    eprintln!("found: {found:?}");
    // At -O0 every local lives in its frame, at the frame base.
    for (name, place) in &found {
        assert!(place.starts_with("stack "), "{name}: {place}");
    }
    // The rest of each frame is named by its function.
    for f in ["stop_here", "leaf", "middle", "main"] {
        assert!(
            w.roots.iter().any(|r| r.name == format!("stack of {f}")),
            "no `stack of {f}` in {:?}",
            w.roots
        );
    }
    // The roots cover the stack whole, in order.
    let mut at = t.stack.addr;
    for r in &w.roots {
        assert_eq!(r.start, at, "{:?}", w.roots);
        at += r.size;
    }
    assert_eq!(at, t.stack.addr + t.stack.bytes.len() as u64);
}

#[test]
fn at_o2_locals_in_callee_saved_registers_are_found_live_or_where_a_callee_saved_them() {
    let t = truth(2);
    let w = walk(t);
    check_frames(t, &w);
    let found = check_locals(t, &w);
    eprintln!("found: {found:?}");
    // `middle` keeps its node in a callee-saved register that `leaf` pushes: the walk
    // must read it from leaf's save slot (a restored register), not from the register
    // (which by now holds leaf's own local).
    let middle_node = &found["middle::middle_node"];
    assert!(
        middle_node.starts_with("stack "),
        "middle::middle_node: {middle_node} (see `objdump -d` of {}: leaf saves the register)",
        t.exe.display()
    );
    // And some local is live in a register at the stop (not saved by any inner frame).
    assert!(
        found.values().any(|p| p.contains(" (r")),
        "no local found live in a register: {found:?}"
    );
}

/// The same stop as a core file (gdb's `gcore`): its registers are gdb's, its memory
/// holds gdb's stack dump word for word, and the walk over the core alone (the stack
/// from sp to the end of the segment holding it) names the same frames and locals.
#[test]
fn a_gcore_core_file_gives_gdbs_registers_and_stack_and_the_same_walk() {
    let t = truth(2);
    let bytes = std::fs::read(&t.core).unwrap();
    let core = read_core("frame_chain.core", &bytes).unwrap();
    assert_eq!(core.machine, EM_X86_64);
    let mut gdb = Registers::default();
    gdb.parse_text(EM_X86_64, &t.registers, "info registers")
        .unwrap();
    assert_eq!(core.registers.pc, gdb.pc);
    assert_eq!(core.registers.regs, gdb.regs);
    assert_eq!(gdb.regs.len(), 16, "gdb's general-purpose registers");
    let memory = Memory::new(core.images.clone(), 8, false).unwrap();
    for (k, w) in t.stack.bytes.chunks(8).enumerate() {
        let a = t.stack.addr + 8 * k as u64;
        assert_eq!(
            memory.read_word(a),
            Some(u64::from_le_bytes(w.try_into().unwrap())),
            "the core's word at {a:#x}"
        );
    }
    let sp = core.registers.sp(EM_X86_64).unwrap();
    let top = core.image_end(sp).expect("a segment holds the stack");
    assert!(top >= t.stack.addr + t.stack.bytes.len() as u64);
    let exe = std::fs::read(&t.exe).unwrap();
    let w = walk_in(&exe, &memory, &core.registers, (sp, top));
    check_frames(t, &w);
    check_locals(t, &w);
}

/// Not a core: an executable is refused as one, with its name and what a core is.
#[test]
fn an_executable_is_not_taken_for_a_core() {
    let t = truth(0);
    let e = read_core("frame_chain_O0", &std::fs::read(&t.exe).unwrap()).unwrap_err();
    assert!(
        e.contains("frame_chain_O0") && e.contains("not a core file"),
        "{e}"
    );
    let e = read_core("x.bin", b"not an elf").unwrap_err();
    assert!(e.contains("x.bin: not an ELF file"), "{e}");
}
