//! Stack and register roots of a leak check, named: the registers captured with the
//! RAM image (by name, `r4=0x…` or gdb's `info registers`), a walk of the stack from
//! them by the ELF's call frame information (`.debug_frame`, `.eh_frame`), and each
//! frame's locals where DWARF locates them at that frame's PC (on the stack, or in a
//! register the frame or a callee saved on the stack). A stack word no local claims is
//! named by its frame (`stack of FUNCTION`). Without CFI (a stripped ELF, or a PC
//! outside it) frames are found conservatively, by the return addresses on the stack.

use std::collections::BTreeMap;
use std::sync::Arc;

use gimli::{
    constants as dw, AttributeValue, EndianArcSlice, EvaluationResult, Location, RegisterRule,
    RunTimeEndian, UnwindSection, Value,
};
use heapsnap_profile::leaks::{Memory, Root};
use object::{Object, ObjectSection, ObjectSymbol};

use crate::{demangle, Elf};

type Reader = EndianArcSlice<RunTimeEndian>;

const EM_386: u16 = 3;
const EM_ARM: u16 = 40;
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;
const EM_RISCV: u16 = 243;

/// At most this many frames are walked (a corrupt stack must not loop).
const MAX_FRAMES: usize = 256;

/// The registers captured with the RAM image: the program counter and the others by
/// DWARF register number (what CFI and location expressions name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Registers {
    /// The program counter (on ARM also DWARF register 15).
    pub pc: Option<u64>,
    /// Values by DWARF register number.
    pub regs: BTreeMap<u16, u64>,
    /// Names read but not general-purpose registers of the machine (`xpsr`, `fpscr`,
    /// `eflags` in gdb's list): not roots, listed in a note so nothing is dropped silently.
    pub ignored: Vec<String>,
}

impl Registers {
    /// Set register `name` (as gdb names it: `r4`, `sp`, `lr`, `pc`; `x8`/`s0`/`a0` on
    /// RISC-V; `rax`…`rip` on x86-64; `x0`…`x30`, `sp`, `pc` on AArch64) of a program
    /// for ELF machine `machine`. `Ok(false)`: a register that is not a general-purpose
    /// one (ignored).
    pub fn set(&mut self, machine: u16, name: &str, value: u64) -> Result<bool, String> {
        let lower = name.to_ascii_lowercase();
        match register_number(machine, &lower)? {
            Some(Reg::Pc) => {
                self.pc = Some(value);
                if machine == EM_ARM {
                    self.regs.insert(15, value);
                }
                Ok(true)
            }
            Some(Reg::Dwarf(n)) => {
                if machine == EM_ARM && n == 15 {
                    self.pc = Some(value);
                }
                self.regs.insert(n, value);
                Ok(true)
            }
            None => {
                self.ignored.push(lower);
                Ok(false)
            }
        }
    }

    /// Read registers from text: one per line, `NAME=VALUE`, `NAME VALUE` or gdb's
    /// `info registers` line (`r4   0x20001234   536875572`: the first value counts);
    /// empty lines and `#` comments skipped. Values are hex (`0x…`) or decimal.
    /// `file` names the file in messages.
    pub fn parse_text(&mut self, machine: u16, text: &str, file: &str) -> Result<(), String> {
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, rest) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), v.trim()),
                None => line
                    .split_once(char::is_whitespace)
                    .map(|(n, v)| (n, v.trim()))
                    .ok_or_else(|| {
                        format!(
                            "{file}:{}: `{line}`: expected NAME=VALUE or NAME VALUE (e.g. r4=0x20001234, or gdb's `info registers`)",
                            i + 1
                        )
                    })?,
            };
            let value = rest.split_whitespace().next().unwrap_or("");
            let Some(v) = parse_value(value) else {
                // gdb prints some registers it cannot read as `<unavailable>`, and
                // vector registers as `{…}`: only a general-purpose one is an error.
                if register_number(machine, &name.to_ascii_lowercase())?.is_some() {
                    return Err(format!(
                        "{file}:{}: register {name}: `{value}` is not a number (hex 0x… or decimal)",
                        i + 1
                    ));
                }
                self.ignored.push(name.to_ascii_lowercase());
                continue;
            };
            self.set(machine, name, v)
                .map_err(|e| format!("{file}:{}: {e}", i + 1))?;
        }
        Ok(())
    }

    /// The stack pointer, if given.
    pub fn sp(&self, machine: u16) -> Option<u64> {
        sp_register(machine).and_then(|r| self.regs.get(&r).copied())
    }
}

fn parse_value(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

enum Reg {
    Pc,
    Dwarf(u16),
}

/// DWARF number of register `name` (lower case) on `machine`; `None` for a register
/// that is not general-purpose; an error for a machine this does not know.
fn register_number(machine: u16, name: &str) -> Result<Option<Reg>, String> {
    // `r4`, `x31`: the number after the prefix, without leading zeros.
    let num = |prefix: &str, max: u16| {
        let digits = name.strip_prefix(prefix)?;
        if digits.len() > 1 && digits.starts_with('0') {
            return None;
        }
        digits.parse::<u16>().ok().filter(|&n| n <= max)
    };
    let r = match machine {
        EM_ARM => match name {
            "pc" | "r15" => Some(Reg::Pc),
            "sp" | "r13" => Some(Reg::Dwarf(13)),
            "lr" | "r14" => Some(Reg::Dwarf(14)),
            "ip" => Some(Reg::Dwarf(12)),
            _ => num("r", 12).map(Reg::Dwarf),
        },
        EM_RISCV => {
            const ABI: [&str; 32] = [
                "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2",
                "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9",
                "s10", "s11", "t3", "t4", "t5", "t6",
            ];
            match name {
                "pc" => Some(Reg::Pc),
                "fp" => Some(Reg::Dwarf(8)),
                _ => ABI
                    .iter()
                    .position(|&a| a == name)
                    .map(|n| n as u16)
                    .or_else(|| num("x", 31))
                    .map(Reg::Dwarf),
            }
        }
        EM_X86_64 => {
            const NAMES: [&str; 16] = [
                "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
                "r12", "r13", "r14", "r15",
            ];
            match name {
                "rip" | "pc" => Some(Reg::Pc),
                _ => NAMES
                    .iter()
                    .position(|&a| a == name)
                    .map(|n| Reg::Dwarf(n as u16)),
            }
        }
        EM_AARCH64 => match name {
            "pc" => Some(Reg::Pc),
            "sp" => Some(Reg::Dwarf(31)),
            "fp" => Some(Reg::Dwarf(29)),
            "lr" => Some(Reg::Dwarf(30)),
            _ => num("x", 30).map(Reg::Dwarf),
        },
        m => {
            return Err(format!(
            "registers of ELF machine {m} are not known here (ARM, AArch64, RISC-V and x86-64 are)"
        ))
        }
    };
    Ok(r)
}

/// The stack pointer's DWARF number on `machine`.
fn sp_register(machine: u16) -> Option<u16> {
    match machine {
        EM_ARM => Some(13),
        EM_RISCV => Some(2),
        EM_X86_64 => Some(7),
        EM_AARCH64 => Some(31),
        EM_386 => Some(4),
        _ => None,
    }
}

/// The name of DWARF register `n` as gdb prints it.
fn register_name(machine: u16, n: u16) -> String {
    match (machine, n) {
        (EM_ARM, 13) => "sp".into(),
        (EM_ARM, 14) => "lr".into(),
        (EM_ARM, 15) => "pc".into(),
        (EM_ARM, n) => format!("r{n}"),
        (EM_RISCV, 1) => "ra".into(),
        (EM_RISCV, 2) => "sp".into(),
        (EM_RISCV, n) => format!("x{n}"),
        (EM_X86_64, n) => [
            "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
            "r12", "r13", "r14", "r15",
        ]
        .get(usize::from(n))
        .map_or_else(|| format!("reg{n}"), |s| (*s).to_owned()),
        (EM_AARCH64, 31) => "sp".into(),
        (EM_AARCH64, n) => format!("x{n}"),
        (_, n) => format!("reg{n}"),
    }
}

/// The top of the stack (its highest address + 1) from the ELF's symbols, with the
/// symbol's name: cortex-m-rt's `_stack_start`, CMSIS's `__StackTop`, ST's `_estack`,
/// and the like. `None` when the ELF has none of them.
pub fn stack_top(data: &[u8]) -> Option<(String, u64)> {
    const NAMES: [&str; 6] = [
        "_stack_start",
        "__StackTop",
        "_estack",
        "__stack_top",
        "_stack_top",
        "__stack",
    ];
    let file = object::File::parse(data).ok()?;
    let mut best: Option<(usize, String, u64)> = None;
    for s in file.symbols() {
        let Ok(name) = s.name() else { continue };
        if let Some(k) = NAMES.iter().position(|&n| n == name) {
            if best.as_ref().is_none_or(|b| k < b.0) {
                best = Some((k, name.to_owned(), s.address()));
            }
        }
    }
    best.map(|(_, n, a)| (n, a))
}

/// One frame of the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The function (demangled; the outermost of an inlined chain).
    pub function: String,
    /// Its PC (the return address for callers).
    pub pc: u64,
    /// Its stack pointer: the frame's words are `sp..cfa`.
    pub sp: u64,
    /// The canonical frame address (the caller's stack pointer); `None` when the frame
    /// was found by return addresses, without CFI.
    pub cfa: Option<u64>,
}

/// Named stack and register roots.
#[derive(Clone, Debug, Default)]
pub struct StackRoots {
    /// The stack range cut into named roots, in address order, covering it whole:
    /// `FUNCTION::local` where a local lives, `stack of FUNCTION` for the rest of each
    /// frame.
    pub roots: Vec<Root>,
    /// The registers as (name, value): `r4`, or `FUNCTION::local (r4)` where a local
    /// lives in it (see [`Memory::add_registers`]).
    pub registers: Vec<(String, u64)>,
    /// The frames, innermost first.
    pub frames: Vec<Frame>,
    /// How the frames were found and what is missing, for the output.
    pub notes: Vec<String>,
}

/// Where a value of a frame lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// In the CPU register (not saved by any inner frame).
    Live,
    /// Saved on the stack at this address.
    Saved(u64),
}

/// Name the stack `stack.0..stack.1` (from the captured stack pointer to the top) and
/// the registers `regs` of the program `elf` (its bytes `data`) as roots, by a CFI
/// walk from `regs` where the ELF has CFI, else by return addresses (see the module
/// doc). Without a PC the stack is one root named `stack`.
pub fn stack_roots(
    elf: &Elf,
    data: &[u8],
    memory: &Memory,
    regs: &Registers,
    stack: (u64, u64),
) -> StackRoots {
    let machine = elf.machine();
    let mut out = StackRoots::default();
    let mut named: Vec<(u64, u64, String)> = Vec::new();
    let mut reg_names: BTreeMap<u16, String> = BTreeMap::new();
    let (lo, hi) = stack;
    let cfi = Cfi::load(data);
    let dwarf = Locals::load(data);
    match (regs.pc, &cfi) {
        _ if hi <= lo => {}
        (None, _) => {
            out.notes.push(
                "note: no pc among the registers: the stack is one root `stack`, not named by frame and local".into(),
            );
        }
        (Some(_), Err(why)) => {
            out.notes.push(format!(
                "note: {}: {why}: stack frames are found conservatively, by the return addresses on the stack (a stale one can misname a frame), and locals are not named",
                elf.name()
            ));
        }
        (Some(pc), Ok(cfi)) => {
            walk(
                elf,
                cfi,
                dwarf.as_ref().ok(),
                memory,
                regs,
                pc,
                (lo, hi),
                &mut out.frames,
                &mut named,
                &mut reg_names,
            );
            if let Err(why) = &dwarf {
                out.notes.push(format!(
                    "note: {}: {why}: frames are named by function, locals are not",
                    elf.name()
                ));
            }
        }
    }
    // Frames by return addresses where the CFI walk could not go on (or start).
    if let Some(pc) = regs.pc.filter(|_| hi > lo) {
        let from = match out.frames.last() {
            None => Some((lo, pc)),
            Some(f) if f.cfa.is_none() => out.frames.pop().map(|f| (f.sp, f.pc)),
            Some(_) => None,
        };
        if let Some((start, pc)) = from {
            if cfi.is_ok() {
                out.notes.push(format!(
                    "note: no call frame information at {pc:#x} ({}): the frames from {start:#x} up are found by the return addresses on the stack (a stale one can misname a frame)",
                    function_at(elf, pc, !out.frames.is_empty())
                ));
            }
            let first = out.frames.is_empty();
            by_return_addresses(elf, memory, start, hi, pc, first, &mut out.frames);
        }
    }
    // The stack: locals first (the first at an address wins), then each frame's rest.
    named.retain(|(s, e, _)| *s >= lo && *e <= hi && s < e);
    named.sort_by_key(|n| (n.0, std::cmp::Reverse(n.1)));
    let mut pieces: Vec<(u64, u64, String)> = Vec::new();
    for n in named {
        if pieces.last().is_some_and(|l| n.0 < l.1) {
            continue;
        }
        pieces.push(n);
    }
    let mut cuts: Vec<(u64, u64, String)> = Vec::new();
    let mut at = lo;
    let frame_of = |a: u64| -> String {
        out.frames
            .iter()
            .find(|f| a >= f.sp && f.cfa.is_none_or(|c| a < c))
            .or(out.frames.last().filter(|f| a >= f.sp))
            .map_or_else(
                || "stack".to_owned(),
                |f| format!("stack of {}", f.function),
            )
    };
    let fill = |from: u64, to: u64, cuts: &mut Vec<(u64, u64, String)>| {
        // Split the gap at frame boundaries.
        let mut bounds: Vec<u64> = out
            .frames
            .iter()
            .flat_map(|f| [Some(f.sp), f.cfa])
            .flatten()
            .filter(|&b| b > from && b < to)
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut s = from;
        for b in bounds.into_iter().chain([to]) {
            if b > s {
                cuts.push((s, b, frame_of(s)));
            }
            s = b;
        }
    };
    for (s, e, name) in pieces {
        fill(at, s, &mut cuts);
        cuts.push((s, e, name));
        at = e;
    }
    fill(at, hi, &mut cuts);
    // Neighbouring pieces of one frame are one root.
    for (s, e, name) in cuts {
        match out.roots.last_mut() {
            Some(r) if r.name == name && r.start + r.size == s => r.size = e - r.start,
            _ => out.roots.push(Root {
                name,
                start: s,
                size: e - s,
            }),
        }
    }
    for (&n, &v) in &regs.regs {
        if Some(n) == sp_register(machine) || (machine == EM_ARM && n == 15) {
            continue;
        }
        let rn = register_name(machine, n);
        let name = match reg_names.get(&n) {
            Some(local) => format!("{local} ({rn})"),
            None => format!("register {rn}"),
        };
        out.registers.push((name, v));
    }
    if !regs.ignored.is_empty() {
        out.notes.push(format!(
            "note: not general-purpose registers, not scanned: {}",
            regs.ignored.join(", ")
        ));
    }
    out
}

/// Frames by return addresses: from `start` up to `hi`, a word that is a return
/// address (on ARM: the instruction before it calls) ends the current frame; the
/// frame above it belongs to the function it returns into. `pc` names the first frame.
fn by_return_addresses(
    elf: &Elf,
    memory: &Memory,
    start: u64,
    hi: u64,
    pc: u64,
    first: bool,
    frames: &mut Vec<Frame>,
) {
    let w = u64::from(memory.word_size());
    let mut sp = start;
    let mut func = function_at(elf, pc, !first);
    let mut fpc = pc;
    let mut a = start.div_ceil(w) * w;
    while a + w <= hi && frames.len() < MAX_FRAMES {
        let Some(v) = memory.read_word(a) else { break };
        if is_return_address(elf, v) {
            frames.push(Frame {
                function: func.clone(),
                pc: fpc,
                sp,
                cfa: Some(a + w),
            });
            sp = a + w;
            func = function_at(elf, v, true);
            fpc = v;
        }
        a += w;
    }
    frames.push(Frame {
        function: func,
        pc: fpc,
        sp,
        cfa: None,
    });
}

fn is_return_address(elf: &Elf, v: u64) -> bool {
    if v == 0 || !elf.contains_vaddr(v) {
        return false;
    }
    match elf.follows_call(v) {
        Some(call) => call,
        // Not ARM Thumb: a word in a function's code.
        None => !elf.is_arm() && elf.frames_at(v).1 != crate::FoundIn::None,
    }
}

/// The function at `pc` (a return address when `ret`): the outermost of its inlined
/// chain, demangled; `0x…` when nothing names it.
fn function_at(elf: &Elf, pc: u64, ret: bool) -> String {
    let (frames, _) = if ret {
        elf.frames_at_return_address(pc)
    } else {
        elf.frames_at(if elf.is_arm() { pc & !1 } else { pc })
    };
    frames
        .last()
        .map_or_else(|| format!("{pc:#x}"), |f| f.function.clone())
}

/// The ELF's call frame information.
struct Cfi {
    debug_frame: Option<gimli::DebugFrame<Reader>>,
    eh_frame: Option<(gimli::EhFrame<Reader>, gimli::BaseAddresses)>,
}

impl Cfi {
    fn load(data: &[u8]) -> Result<Cfi, String> {
        let file = object::File::parse(data).map_err(|e| e.to_string())?;
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let word = if file.is_64() { 8 } else { 4 };
        let section = |name: &str| -> Option<(Reader, u64)> {
            let s = file.section_by_name(name)?;
            let d = s.uncompressed_data().ok()?;
            (!d.is_empty()).then(|| (EndianArcSlice::new(Arc::from(&*d), endian), s.address()))
        };
        let debug_frame = section(".debug_frame").map(|(r, _)| {
            let mut f = gimli::DebugFrame::from(r);
            f.set_address_size(word);
            f
        });
        let eh_frame = section(".eh_frame").map(|(r, addr)| {
            let mut f = gimli::EhFrame::from(r);
            f.set_address_size(word);
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(addr);
            if let Some(t) = file.section_by_name(".text") {
                bases = bases.set_text(t.address());
            }
            (f, bases)
        });
        if debug_frame.is_none() && eh_frame.is_none() {
            return Err(
                "no call frame information (.debug_frame and .eh_frame are missing)".into(),
            );
        }
        Ok(Cfi {
            debug_frame,
            eh_frame,
        })
    }

    /// The unwind row at `pc`: (CFA rule, register rules, return address register).
    fn row(&self, pc: u64) -> Option<Row> {
        let mut ctx = gimli::UnwindContext::new();
        if let Some(f) = &self.debug_frame {
            let bases = gimli::BaseAddresses::default();
            if let Ok(fde) = f.fde_for_address(&bases, pc, gimli::DebugFrame::cie_from_offset) {
                if let Ok(row) = fde.unwind_info_for_address(f, &bases, &mut ctx, pc) {
                    return Some(Row::of(row, fde.cie().return_address_register()));
                }
            }
        }
        if let Some((f, bases)) = &self.eh_frame {
            if let Ok(fde) = f.fde_for_address(bases, pc, gimli::EhFrame::cie_from_offset) {
                if let Ok(row) = fde.unwind_info_for_address(f, bases, &mut ctx, pc) {
                    return Some(Row::of(row, fde.cie().return_address_register()));
                }
            }
        }
        None
    }
}

/// What a frame walk needs of an unwind row.
struct Row {
    /// The CFA as register + offset (an expression CFA is not followed).
    cfa: Option<(u16, i64)>,
    /// Registers saved at CFA + offset.
    saved: Vec<(u16, i64)>,
    /// Registers copied from another.
    copied: Vec<(u16, u16)>,
    undefined: Vec<u16>,
    ra: u16,
}

impl Row {
    fn of(row: &gimli::UnwindTableRow<usize>, ra: gimli::Register) -> Row {
        let cfa = match row.cfa() {
            gimli::CfaRule::RegisterAndOffset { register, offset } => Some((register.0, *offset)),
            gimli::CfaRule::Expression(_) => None,
        };
        let mut r = Row {
            cfa,
            saved: Vec::new(),
            copied: Vec::new(),
            undefined: Vec::new(),
            ra: ra.0,
        };
        for (reg, rule) in row.registers() {
            match rule {
                RegisterRule::Offset(o) => r.saved.push((reg.0, *o)),
                RegisterRule::Register(from) => r.copied.push((reg.0, from.0)),
                RegisterRule::Undefined => r.undefined.push(reg.0),
                _ => {}
            }
        }
        r
    }
}

/// The CFI walk from the registers: per frame, its locals (named stack ranges and
/// registers), then the caller's registers from the saved ones.
#[allow(clippy::too_many_arguments)]
fn walk(
    elf: &Elf,
    cfi: &Cfi,
    dwarf: Option<&Locals>,
    memory: &Memory,
    regs: &Registers,
    pc: u64,
    (lo, hi): (u64, u64),
    frames: &mut Vec<Frame>,
    named: &mut Vec<(u64, u64, String)>,
    reg_names: &mut BTreeMap<u16, String>,
) {
    let machine = elf.machine();
    let Some(sp_reg) = sp_register(machine) else {
        return;
    };
    let w = u64::from(memory.word_size());
    let mut cur: BTreeMap<u16, u64> = regs.regs.clone();
    let mut place: BTreeMap<u16, Place> = cur.keys().map(|&r| (r, Place::Live)).collect();
    let mut pc = pc;
    let mut sp = lo;
    cur.insert(sp_reg, lo);
    for depth in 0..MAX_FRAMES {
        let code = if elf.is_arm() { pc & !1 } else { pc };
        // A caller's PC is a return address: look up the call, not the next line.
        let probe = if depth == 0 {
            code
        } else {
            code.saturating_sub(1)
        };
        let function = function_at(elf, probe, false);
        let row = cfi.row(probe);
        if row.is_none() && depth == 0 {
            // Handed to the return-address scan by the caller.
            return;
        }
        let cfa = row.as_ref().and_then(|row| {
            row.cfa
                .and_then(|(r, off)| cur.get(&r).map(|v| v.wrapping_add_signed(off)))
        });
        frames.push(Frame {
            function,
            pc,
            sp,
            cfa,
        });
        // Without CFI or a CFA here the walk ends at this frame.
        let (Some(row), Some(cfa)) = (row, cfa) else {
            return;
        };
        if let Some(d) = dwarf {
            for local in d.at(probe, &cur, cfa, memory) {
                match local.place {
                    LocalPlace::Memory(a) => named.push((a, a + local.size.max(1), local.name)),
                    LocalPlace::Register(r) => match place.get(&r) {
                        Some(Place::Saved(a)) => named.push((*a, a + w, local.name)),
                        Some(Place::Live) => {
                            reg_names.entry(r).or_insert(local.name);
                        }
                        None => {}
                    },
                }
            }
        }
        // The caller's registers.
        let mut next = cur.clone();
        let mut next_place = place.clone();
        for &(r, off) in &row.saved {
            let a = cfa.wrapping_add_signed(off);
            match memory.read_word(a) {
                Some(v) => {
                    next.insert(r, v);
                    next_place.insert(r, Place::Saved(a));
                }
                None => {
                    next.remove(&r);
                    next_place.remove(&r);
                }
            }
        }
        for &(r, from) in &row.copied {
            match cur.get(&from) {
                Some(&v) => next.insert(r, v),
                None => next.remove(&r),
            };
            match place.get(&from) {
                Some(&p) => next_place.insert(r, p),
                None => next_place.remove(&r),
            };
        }
        for r in &row.undefined {
            next.remove(r);
            next_place.remove(r);
        }
        next.insert(sp_reg, cfa);
        next_place.remove(&sp_reg);
        let Some(&ret) = next.get(&row.ra) else {
            return;
        };
        let ret_code = if elf.is_arm() { ret & !1 } else { ret };
        // The bottom: a return address out of the program (cortex-m-rt's reset handler
        // returns to 0xffffffff), or no progress up the stack.
        if ret_code == 0 || !elf.contains_vaddr(ret_code) || cfa <= sp || cfa >= hi {
            return;
        }
        cur = next;
        place = next_place;
        if machine == EM_ARM {
            cur.insert(15, ret);
        }
        pc = ret;
        sp = cfa;
    }
}

/// Where a local lives in its frame.
enum LocalPlace {
    Memory(u64),
    Register(u16),
}

struct Local {
    /// `FUNCTION::name`.
    name: String,
    place: LocalPlace,
    size: u64,
}

/// DWARF's subprograms for finding the locals in scope at a PC.
struct Locals {
    dwarf: gimli::Dwarf<Reader>,
}

impl Locals {
    fn load(data: &[u8]) -> Result<Locals, String> {
        let file = object::File::parse(data).map_err(|e| e.to_string())?;
        let dwarf = crate::types::load_dwarf(&file)?;
        Ok(Locals { dwarf })
    }

    /// The locals (variables and parameters) in scope at `pc` that DWARF locates
    /// there, given the frame's register values and CFA. Errors in the DWARF drop the
    /// local they concern, not the walk.
    fn at(&self, pc: u64, regs: &BTreeMap<u16, u64>, cfa: u64, memory: &Memory) -> Vec<Local> {
        let mut out = Vec::new();
        let mut headers = self.dwarf.units();
        while let Ok(Some(header)) = headers.next() {
            let Ok(unit) = self.dwarf.unit(header) else {
                continue;
            };
            let in_unit = self.dwarf.unit_ranges(&unit).ok().and_then(|mut r| {
                while let Ok(Some(r)) = r.next() {
                    if r.begin <= pc && pc < r.end {
                        return Some(());
                    }
                }
                None
            });
            if in_unit.is_none() {
                continue;
            }
            let _ = self.unit_locals(&unit, pc, regs, cfa, memory, &mut out);
        }
        out
    }

    fn unit_locals(
        &self,
        unit: &gimli::Unit<Reader>,
        pc: u64,
        regs: &BTreeMap<u16, u64>,
        cfa: u64,
        memory: &Memory,
        out: &mut Vec<Local>,
    ) -> gimli::Result<()> {
        // Open scopes containing pc: (depth, function name, frame base).
        let mut scopes: Vec<(isize, Option<String>, Option<u64>)> = Vec::new();
        // Depth of a scope that does not contain pc: its subtree is skipped.
        let mut skip: Option<isize> = None;
        let mut cursor = unit.entries();
        while let Some(e) = cursor.next_dfs()? {
            let depth = e.depth();
            if skip.is_some_and(|s| depth > s) {
                continue;
            }
            skip = None;
            while scopes.last().is_some_and(|s| s.0 >= depth) {
                scopes.pop();
            }
            let tag = e.tag();
            if matches!(
                tag,
                dw::DW_TAG_subprogram | dw::DW_TAG_inlined_subroutine | dw::DW_TAG_lexical_block
            ) {
                if !self.contains(unit, e, pc) {
                    skip = Some(depth);
                    continue;
                }
                let (name, base) = if tag == dw::DW_TAG_lexical_block {
                    (None, None)
                } else {
                    let base = if tag == dw::DW_TAG_subprogram {
                        e.attr_value(dw::DW_AT_frame_base).and_then(|v| match v {
                            AttributeValue::Exprloc(x) => {
                                match eval(unit, x, regs, None, cfa, memory)?.first()? {
                                    LocalPlace::Register(r) => regs.get(r).copied(),
                                    LocalPlace::Memory(a) => Some(*a),
                                }
                            }
                            _ => None,
                        })
                    } else {
                        None
                    };
                    (self.function_name(unit, e), base)
                };
                scopes.push((depth, name, base));
                continue;
            }
            if !matches!(tag, dw::DW_TAG_variable | dw::DW_TAG_formal_parameter) {
                continue;
            }
            // Only the locals of an open scope (not statics of a namespace).
            if scopes.last().is_none_or(|s| s.0 != depth - 1) {
                continue;
            }
            let Some(loc) = e.attr_value(dw::DW_AT_location) else {
                continue;
            };
            let expr = match loc {
                AttributeValue::Exprloc(x) => Some(x),
                other => {
                    let mut found = None;
                    if let Ok(Some(mut it)) = self.dwarf.attr_locations(unit, other) {
                        while let Ok(Some(l)) = it.next() {
                            if l.range.begin <= pc && pc < l.range.end {
                                found = Some(l.data);
                                break;
                            }
                        }
                    }
                    found
                }
            };
            let Some(expr) = expr else { continue };
            let fb = scopes.iter().rev().find_map(|s| s.2);
            let Some(places) = eval(unit, expr, regs, fb, cfa, memory) else {
                continue;
            };
            let Some(var) = self.name_of(unit, e) else {
                continue;
            };
            let func = scopes
                .iter()
                .rev()
                .find_map(|s| s.1.clone())
                .unwrap_or_else(|| "?".into());
            let size = self.type_size(unit, e).unwrap_or(0);
            let n = places.len() as u64;
            for place in places {
                out.push(Local {
                    name: format!("{func}::{var}"),
                    // A variable in pieces: each piece a word (its size unknown here).
                    size: if n == 1 { size } else { 0 },
                    place,
                });
            }
        }
        Ok(())
    }

    fn contains(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
        pc: u64,
    ) -> bool {
        let Ok(mut ranges) = self.dwarf.die_ranges(unit, e) else {
            return false;
        };
        while let Ok(Some(r)) = ranges.next() {
            if r.begin <= pc && pc < r.end {
                return true;
            }
        }
        false
    }

    /// An entry's DIE by reference, following `DW_AT_abstract_origin` and
    /// `DW_AT_specification` for the attribute `at`.
    fn attr_through(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
        at: gimli::DwAt,
    ) -> Option<AttributeValue<Reader>> {
        if let Some(v) = e.attr_value(at) {
            return Some(v);
        }
        for link in [dw::DW_AT_abstract_origin, dw::DW_AT_specification] {
            if let Some(AttributeValue::UnitRef(o)) = e.attr_value(link) {
                let d = unit.entry(o).ok()?;
                if let Some(v) = d.attr_value(at) {
                    return Some(v);
                }
                for link2 in [dw::DW_AT_abstract_origin, dw::DW_AT_specification] {
                    if let Some(AttributeValue::UnitRef(o2)) = d.attr_value(link2) {
                        if let Some(v) = unit.entry(o2).ok()?.attr_value(at) {
                            return Some(v);
                        }
                    }
                }
            }
        }
        None
    }

    fn string(&self, unit: &gimli::Unit<Reader>, v: AttributeValue<Reader>) -> Option<String> {
        let s = self.dwarf.attr_string(unit, v).ok()?;
        Some(String::from_utf8_lossy(&s).into_owned())
    }

    fn name_of(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Option<String> {
        self.string(unit, self.attr_through(unit, e, dw::DW_AT_name)?)
    }

    /// A subprogram's or inlined subroutine's name: its linkage name demangled (the
    /// full path, as the profiles show it), else its plain name.
    fn function_name(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Option<String> {
        self.attr_through(unit, e, dw::DW_AT_linkage_name)
            .and_then(|v| self.string(unit, v))
            .map(|n| demangle(&n))
            .or_else(|| self.name_of(unit, e))
    }

    /// The byte size of a variable's type (through typedefs and qualifiers).
    fn type_size(
        &self,
        unit: &gimli::Unit<Reader>,
        e: &gimli::DebuggingInformationEntry<Reader>,
    ) -> Option<u64> {
        let mut t = match self.attr_through(unit, e, dw::DW_AT_type)? {
            AttributeValue::UnitRef(o) => o,
            _ => return None,
        };
        for _ in 0..16 {
            let d = unit.entry(t).ok()?;
            if let Some(s) = d
                .attr_value(dw::DW_AT_byte_size)
                .and_then(|v| v.udata_value())
            {
                return Some(s);
            }
            match d.attr_value(dw::DW_AT_type)? {
                AttributeValue::UnitRef(o) => t = o,
                _ => return None,
            }
        }
        None
    }
}

/// Evaluate a location expression in a frame: where its pieces live. `None` when it
/// needs what the walk does not know (an entry value, TLS) or describes a value that
/// is not in memory or a register (a constant, an implicit pointer).
fn eval(
    unit: &gimli::Unit<Reader>,
    expr: gimli::Expression<Reader>,
    regs: &BTreeMap<u16, u64>,
    frame_base: Option<u64>,
    cfa: u64,
    memory: &Memory,
) -> Option<Vec<LocalPlace>> {
    let mut ev = expr.evaluation(unit.encoding());
    let mut r = ev.evaluate().ok()?;
    // Bounded: each resume makes progress in the expression.
    for _ in 0..1024 {
        r = match r {
            EvaluationResult::Complete => break,
            EvaluationResult::RequiresRegister { register, .. } => {
                let v = *regs.get(&register.0)?;
                ev.resume_with_register(Value::Generic(v)).ok()?
            }
            EvaluationResult::RequiresFrameBase => ev.resume_with_frame_base(frame_base?).ok()?,
            EvaluationResult::RequiresCallFrameCfa => ev.resume_with_call_frame_cfa(cfa).ok()?,
            EvaluationResult::RequiresMemory { address, size, .. } => {
                let v = if size == memory.word_size() {
                    memory.read_word(address)?
                } else {
                    return None;
                };
                ev.resume_with_memory(Value::Generic(v)).ok()?
            }
            EvaluationResult::RequiresRelocatedAddress(a) => {
                ev.resume_with_relocated_address(a).ok()?
            }
            _ => return None,
        };
    }
    if !matches!(r, EvaluationResult::Complete) {
        return None;
    }
    let mut places = Vec::new();
    for p in ev.result() {
        match p.location {
            Location::Address { address } => places.push(LocalPlace::Memory(address)),
            Location::Register { register } => places.push(LocalPlace::Register(register.0)),
            _ => {}
        }
    }
    (!places.is_empty()).then_some(places)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gdb's `info registers` on a Cortex-M, as printed: the general-purpose
    /// registers are read by name (sp, lr, pc too), the others listed as ignored.
    #[test]
    fn gdb_info_registers_are_read_and_the_rest_listed() {
        let text = "r0             0x0                 0\n\
                    r4             0x20001234          536875572\n\
                    r7             0x2000fdf0          0x2000fdf0\n\
                    r12            0x8255              33365\n\
                    sp             0x2000faf8          0x2000faf8\n\
                    lr             0x2e89              11913\n\
                    pc             0x2e94              0x2e94 <heapsnap_firmware::dump_leak_check+20>\n\
                    xpsr           0x61000000          1627389952\n\
                    fpscr          <unavailable>\n";
        let mut r = Registers::default();
        r.parse_text(EM_ARM, text, "regs.txt").unwrap();
        assert_eq!(r.pc, Some(0x2e94));
        assert_eq!(r.sp(EM_ARM), Some(0x2000_faf8));
        assert_eq!(r.regs.get(&4), Some(&0x2000_1234));
        assert_eq!(r.regs.get(&14), Some(&0x2e89));
        assert_eq!(r.regs.get(&15), Some(&0x2e94));
        assert_eq!(r.regs.len(), 7);
        assert_eq!(r.ignored, ["xpsr", "fpscr"]);
    }

    /// `NAME=VALUE` lines with comments, decimal values, and the machines' own names.
    #[test]
    fn name_value_lines_on_each_machine() {
        let mut r = Registers::default();
        r.parse_text(EM_ARM, "# captured\nr4=0x10\n\nR5 = 17\nip=1\n", "x")
            .unwrap();
        assert_eq!(
            r.regs.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>(),
            [(4, 0x10), (5, 17), (12, 1)]
        );
        let mut r = Registers::default();
        r.parse_text(EM_RISCV, "sp=0x80001000\ns0=2\nx31=3\npc=0x80000000\n", "x")
            .unwrap();
        assert_eq!(r.sp(EM_RISCV), Some(0x8000_1000));
        assert_eq!(r.regs.get(&8), Some(&2));
        assert_eq!(r.regs.get(&31), Some(&3));
        assert_eq!(r.pc, Some(0x8000_0000));
        let mut r = Registers::default();
        r.parse_text(
            EM_X86_64,
            "rsp 0x7ffc0000 0x7ffc0000\nrip 0x401000 0x401000 <main>\nrbx 5 5\n",
            "x",
        )
        .unwrap();
        assert_eq!(r.sp(EM_X86_64), Some(0x7ffc_0000));
        assert_eq!(r.pc, Some(0x40_1000));
        assert_eq!(r.regs.get(&3), Some(&5));
    }

    /// Bad lines say the file, the line and what is wrong; nothing is guessed.
    #[test]
    fn bad_register_lines_are_refused_with_file_and_line() {
        let mut r = Registers::default();
        let e = r
            .parse_text(EM_ARM, "r4=0x10\nr5\n", "regs.txt")
            .unwrap_err();
        assert!(
            e.starts_with("regs.txt:2:") && e.contains("NAME=VALUE"),
            "{e}"
        );
        let e = r.parse_text(EM_ARM, "r6=zz\n", "regs.txt").unwrap_err();
        assert!(
            e.contains("regs.txt:1: register r6: `zz` is not a number"),
            "{e}"
        );
        // r13 is sp; r16 and r04 are not registers.
        let mut r = Registers::default();
        assert!(r.set(EM_ARM, "r13", 8).unwrap());
        assert_eq!(r.sp(EM_ARM), Some(8));
        assert!(!r.set(EM_ARM, "r16", 1).unwrap());
        assert!(!r.set(EM_ARM, "r04", 1).unwrap());
        let e = r.set(0x1234, "r1", 1).unwrap_err();
        assert!(e.contains("ELF machine 4660"), "{e}");
    }
}
