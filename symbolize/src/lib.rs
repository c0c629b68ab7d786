//! Symbolization from ELF + DWARF: function (demangled), file and line, with inlined
//! frames, through `object`, `gimli` and `addr2line` ([`Elf`]), and which ELF
//! symbolizes which address of a snapshot ([`Resolver`], the `Symbols` the profile
//! library's snapshot importer asks for). Pure computation over bytes (files are read
//! by the caller, see [`Loader`]), so it builds for wasm32 too.

mod core;
mod frames;
mod resolve;
mod statics;
mod types;

pub use core::{read_core, Core};
pub use frames::{stack_roots, stack_top, Frame, Registers, StackRoots};
pub use heapsnap_profile::import::{hex, machine_name, SymFrame};
pub use resolve::{snapshot_profile, ConvertError, Loader, Resolver};
pub use statics::{static_data, StaticData};
pub use types::types_from_dwarf;

use gimli::{EndianArcSlice, RunTimeEndian};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

type Reader = EndianArcSlice<RunTimeEndian>;

/// Why an ELF cannot be used for symbolization.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SymbolizeError {
    /// Not an object file `object` can read (or not ELF).
    #[error("{name}: not a readable ELF file: {reason}")]
    NotElf {
        /// Name of the file.
        name: String,
        /// What the parser said.
        reason: String,
    },
    /// The ELF has no `.debug_info`: it was stripped or built without debug info.
    #[error("{name}: ELF has no DWARF debug info (.debug_info is missing); pass the unstripped binary or build with debug info")]
    NoDwarf {
        /// Name of the file.
        name: String,
    },
    /// The DWARF is there but broken.
    #[error("{name}: corrupt DWARF: {reason}")]
    Dwarf {
        /// Name of the file.
        name: String,
        /// What gimli said.
        reason: String,
    },
}

/// Where in the ELF the frames of an address were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FoundIn {
    /// DWARF: functions, files, lines, inlined frames.
    Dwarf,
    /// The ELF symbol table only: a function name, no file or line.
    Symtab,
    /// Nothing known.
    None,
}

/// A parsed ELF with its DWARF, ready for lookups. Holds its own copy of the debug
/// sections, so the bytes it was parsed from can be dropped.
pub struct Elf {
    name: String,
    build_id: Option<Vec<u8>>,
    arm: bool,
    /// `ET_EXEC`: loaded at its link addresses (firmware, a non-PIE program), so a
    /// runtime address is an ELF address whatever the mapping's file offset says.
    exec: bool,
    /// Bytes per address: 4 or 8 (the ELF class).
    word_size: u8,
    /// The ELF header's `e_machine`: the architecture its code is for.
    machine: u16,
    /// PT_LOAD segments: (file offset, file size, virtual address, memory size).
    segments: Vec<(u64, u64, u64, u64)>,
    /// ARM only: executable segments' bytes by address.
    arm_code: Vec<(u64, Vec<u8>)>,
    /// Names of the function symbols in `.symtab` (empty without one): a function
    /// DWARF names but the linker kept no symbol of was discarded
    /// ([`Elf::is_live_function`]).
    symbol_names: HashSet<String>,
    ctx: Option<addr2line::Context<Reader>>,
    /// A Go program (it has a `.gopclntab`): `go tool pprof` symbolizes it with the
    /// Go line table, which names the out-of-line function only, so inlined frames
    /// are folded into it ([`Elf::frames_at`]) to show what pprof shows.
    go: bool,
    /// Function symbols sorted by address: (address, size, mangled name).
    symbols: Vec<(u64, u64, String)>,
}

/// `e_machine` from an ELF header (offset 18 in ELF32 and ELF64 alike), in the byte
/// order `EI_DATA` names; 0 (`EM_NONE`) if the header is too short.
fn e_machine(data: &[u8]) -> u16 {
    let (Some(&lo), Some(&hi)) = (data.get(18), data.get(19)) else {
        return 0;
    };
    if data.get(5) == Some(&2) {
        u16::from_be_bytes([lo, hi])
    } else {
        u16::from_le_bytes([lo, hi])
    }
}

impl std::fmt::Debug for Elf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elf")
            .field("name", &self.name)
            .field("build_id", &self.build_id.as_deref().map(hex))
            .finish()
    }
}

impl Elf {
    /// Parses an ELF that must carry DWARF (an ELF the user named explicitly: without
    /// debug info it cannot do what was asked, and saying so beats a silent address dump).
    pub fn parse(name: &str, data: &[u8]) -> Result<Elf, SymbolizeError> {
        let elf = Self::parse_lenient(name, data)?;
        if elf.ctx.is_none() {
            return Err(SymbolizeError::NoDwarf {
                name: name.to_owned(),
            });
        }
        Ok(elf)
    }

    /// Parses an ELF, falling back to its symbol table when it has no DWARF (system
    /// libraries found through a snapshot's mappings usually have none).
    pub fn parse_lenient(name: &str, data: &[u8]) -> Result<Elf, SymbolizeError> {
        let not_elf = |e: object::Error| SymbolizeError::NotElf {
            name: name.to_owned(),
            reason: e.to_string(),
        };
        if data.starts_with(&sampler_core::snapshot::MAGIC) {
            return Err(SymbolizeError::NotElf {
                name: name.to_owned(),
                reason: "it is a heapsnap snapshot: give it as the input file, and the \
                         program's ELF with --elf"
                    .to_owned(),
            });
        }
        let obj = object::File::parse(data).map_err(not_elf)?;
        if obj.format() != object::BinaryFormat::Elf {
            return Err(SymbolizeError::NotElf {
                name: name.to_owned(),
                // Named by hand: the browser's release wasm compiles `Debug` out.
                reason: match obj.format() {
                    object::BinaryFormat::Coff => "a COFF file",
                    object::BinaryFormat::MachO => "a Mach-O file",
                    object::BinaryFormat::Pe => "a PE file",
                    object::BinaryFormat::Wasm => "a WebAssembly file",
                    object::BinaryFormat::Xcoff => "an XCOFF file",
                    _ => "not an ELF file",
                }
                .to_owned(),
            });
        }
        let build_id = obj.build_id().map_err(not_elf)?.map(<[u8]>::to_vec);
        let arm = matches!(obj.architecture(), object::Architecture::Arm);
        let exec = obj.kind() == object::ObjectKind::Executable;
        // Thumb code, kept to check that return addresses follow calls (firmware has
        // no build id to check against; see `follows_call`). Small: flash-sized.
        let arm_code = if arm {
            obj.segments()
                .filter(|s| {
                    matches!(s.flags(), object::SegmentFlags::Elf { p_flags, .. } if p_flags.contains(object::elf::PF_X))
                })
                .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
                .collect()
        } else {
            Vec::new()
        };
        let segments = obj
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address(), s.size())
            })
            .collect();
        let mut symbols: Vec<(u64, u64, String)> = obj
            .symbols()
            .chain(obj.dynamic_symbols())
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                Some((
                    (s.address() & if arm { !1 } else { !0 }),
                    s.size(),
                    s.name().ok()?.to_owned(),
                ))
            })
            .collect();
        // Before aliases at one address are dropped: every kept name counts.
        let symbol_names = obj
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text)
            .filter_map(|s| s.name().ok().map(str::to_owned))
            .collect();
        symbols.sort();
        symbols.dedup_by_key(|s| s.0);
        let has_dwarf = obj
            .section_by_name(".debug_info")
            .is_some_and(|s| s.size() > 0);
        let ctx = if has_dwarf {
            let endian = if obj.is_little_endian() {
                RunTimeEndian::Little
            } else {
                RunTimeEndian::Big
            };
            let load = |id: gimli::SectionId| -> Result<Reader, object::Error> {
                let data = match obj.section_by_name(id.name()) {
                    Some(s) => s.uncompressed_data()?,
                    None => Cow::Borrowed(&[][..]),
                };
                Ok(EndianArcSlice::new(Arc::from(&*data), endian))
            };
            let dwarf = gimli::Dwarf::load(load).map_err(|e| SymbolizeError::Dwarf {
                name: name.to_owned(),
                reason: e.to_string(),
            })?;
            Some(
                addr2line::Context::from_dwarf(dwarf).map_err(|e| SymbolizeError::Dwarf {
                    name: name.to_owned(),
                    reason: e.to_string(),
                })?,
            )
        } else {
            None
        };
        let go = obj.section_by_name(".gopclntab").is_some();
        Ok(Elf {
            name: name.to_owned(),
            build_id,
            arm,
            exec,
            word_size: if obj.is_64() { 8 } else { 4 },
            machine: e_machine(data),
            segments,
            arm_code,
            symbol_names,
            ctx,
            go,
            symbols,
        })
    }

    /// The name it was loaded as (path or file name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// GNU build id, if the ELF has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// Does it have a symbol table with functions (not fully stripped)?
    pub fn has_symbols(&self) -> bool {
        !self.symbols.is_empty()
    }

    /// Does it have DWARF (file/line/inline info)?
    pub fn has_dwarf(&self) -> bool {
        self.ctx.is_some()
    }

    /// Is it an ARM (32-bit) ELF, whose code addresses carry the Thumb bit?
    pub fn is_arm(&self) -> bool {
        self.arm
    }

    /// Bytes per address of its code: 4 (ELF32) or 8 (ELF64).
    pub fn word_size(&self) -> u8 {
        self.word_size
    }

    /// The architecture its code is for: the ELF header's `e_machine` (what a
    /// snapshot's `elf_machine` counter is compared with).
    pub fn machine(&self) -> u16 {
        self.machine
    }

    /// Does the instruction before return address `ret` (a link address) call? Only
    /// known for ARM Thumb code: a 32-bit `BL`/`BLX` immediate or a 16-bit `BLX`
    /// register. A return address from another build of the firmware lands on some
    /// instruction of this one, rarely right after a call: that is how a wrong ELF is
    /// told apart when the snapshot carries no build id. `None` = cannot tell.
    pub fn follows_call(&self, ret: u64) -> Option<bool> {
        let ret = ret & !1;
        let (base, code) = self
            .arm_code
            .iter()
            .find(|(a, c)| ret > *a && ret - a <= c.len() as u64)?;
        let at = usize::try_from(ret - base).ok()?;
        let half = |end: usize| {
            let b = code.get(end.checked_sub(2)?..end)?;
            Some(u16::from_le_bytes([b[0], b[1]]))
        };
        let blx_reg = half(at).is_some_and(|h| h & 0xff87 == 0x4780);
        let bl = match (at.checked_sub(2).and_then(half), half(at)) {
            (Some(h1), Some(h2)) => h1 & 0xf800 == 0xf000 && h2 & 0xc000 == 0xc000,
            _ => false,
        };
        Some(blx_reg || bl)
    }

    /// Lowest and highest+1 virtual address of the loadable segments (link addresses),
    /// for a mapping that stands for a firmware image.
    pub fn vaddr_range(&self) -> (u64, u64) {
        let lo = self
            .segments
            .iter()
            .filter(|s| s.3 > 0)
            .map(|s| s.2)
            .min()
            .unwrap_or(0);
        let hi = self
            .segments
            .iter()
            .filter(|s| s.3 > 0)
            .map(|s| s.2.saturating_add(s.3))
            .max()
            .unwrap_or(0);
        (lo, hi)
    }

    /// The ELF virtual address that a file offset is loaded at (through the program
    /// headers): how a runtime address of a PIE program, turned into a file offset with
    /// its mapping, becomes an address DWARF knows.
    pub fn vaddr_of_file_offset(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(o, size, _, _)| off >= o && off - o < size)
            .map(|&(o, _, vaddr, _)| vaddr.wrapping_add(off - o))
    }

    /// Loaded at its link addresses (`ET_EXEC`: firmware, a non-PIE program)?
    pub fn is_exec(&self) -> bool {
        self.exec
    }

    /// The file offset `vaddr` is loaded from (inverse of
    /// [`vaddr_of_file_offset`](Self::vaddr_of_file_offset)): the offset a pprof
    /// mapping of an `ET_EXEC` ELF must carry, which firmware cannot know itself.
    pub fn file_offset_of_vaddr(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(_, size, v, _)| vaddr >= v && vaddr - v < size)
            .map(|&(o, _, v, _)| o.wrapping_add(vaddr - v))
    }

    /// Is `vaddr` inside one of the loadable segments?
    pub fn contains_vaddr(&self, vaddr: u64) -> bool {
        self.segments
            .iter()
            .any(|&(_, _, v, size)| vaddr >= v && vaddr - v < size)
    }

    /// Frames at a *return address* (already an ELF virtual address): the Thumb bit is
    /// cleared on ARM and one is subtracted so the lookup lands on the call instruction,
    /// not on the line after it. Innermost (inlined) frame first.
    pub fn frames_at_return_address(&self, vaddr: u64) -> (Vec<SymFrame>, FoundIn) {
        let a = if self.arm { vaddr & !1 } else { vaddr };
        self.frames_at(a.saturating_sub(1))
    }

    /// Frames at an exact code address, innermost first.
    pub fn frames_at(&self, probe: u64) -> (Vec<SymFrame>, FoundIn) {
        if let Some(ctx) = &self.ctx {
            let mut out = Vec::new();
            if let Ok(mut it) = ctx.find_frames(probe).skip_all_loads() {
                while let Ok(Some(f)) = it.next() {
                    let (function, system_name) = match &f.function {
                        Some(n) => {
                            let raw = n.raw_name().map(|s| s.into_owned()).unwrap_or_default();
                            (
                                n.demangle()
                                    .map(|s| s.into_owned())
                                    .unwrap_or_else(|_| raw.clone()),
                                raw,
                            )
                        }
                        None => (String::new(), String::new()),
                    };
                    let (file, line, column) = match &f.location {
                        Some(l) => (
                            l.file.unwrap_or("").to_owned(),
                            l.line.unwrap_or(0),
                            l.column.unwrap_or(0),
                        ),
                        None => (String::new(), 0, 0),
                    };
                    out.push(SymFrame {
                        function,
                        system_name,
                        file,
                        line,
                        column,
                    });
                }
            }
            // The last frame is the out-of-line function (inlined ones come first).
            let outermost = out.last().map_or("", |f| f.system_name.as_str());
            if !self.is_live_function(outermost, probe) {
                // A function the linker discarded claims the address: its frames and
                // lines are not this code's. The symbol table names it; no line.
                out.clear();
            }
            if self.go && out.len() > 1 {
                // The Go line table's answer: the out-of-line function, at the
                // innermost position.
                let outer = out.pop().unwrap_or_default();
                let inner = out.swap_remove(0);
                out = vec![SymFrame {
                    function: outer.function,
                    system_name: outer.system_name,
                    ..inner
                }];
            }
            if out.iter().any(|f| !f.function.is_empty()) {
                // A location-only frame (no function) gets the symbol table's name.
                if let Some(name) = out
                    .iter()
                    .position(|f| f.function.is_empty())
                    .and(self.symbol(probe))
                {
                    for f in out.iter_mut().filter(|f| f.function.is_empty()) {
                        f.function = demangle(&name);
                        f.system_name = name.clone();
                    }
                }
                return (out, FoundIn::Dwarf);
            }
            if let Some(name) = self.symbol(probe) {
                let (file, line, column) = out
                    .first()
                    .map(|f| (f.file.clone(), f.line, f.column))
                    .unwrap_or_default();
                return (
                    vec![SymFrame {
                        function: demangle(&name),
                        system_name: name,
                        file,
                        line,
                        column,
                    }],
                    FoundIn::Dwarf,
                );
            }
            if !out.is_empty() {
                return (out, FoundIn::Dwarf);
            }
        }
        match self.symbol(probe) {
            Some(name) => (
                vec![SymFrame {
                    function: demangle(&name),
                    system_name: name,
                    ..Default::default()
                }],
                FoundIn::Symtab,
            ),
            None => (Vec::new(), FoundIn::None),
        }
    }

    /// Is the out-of-line function DWARF names at `probe` (its linkage name, or its
    /// plain name in line-tables-only builds) one the linker kept? Linkers leave the
    /// debug info of functions they discarded (`--gc-sections`, LTO) at a tombstone
    /// address, 0 for LLD and GNU ld, and where flash starts at 0 those ranges overlap
    /// real code: the reset handler came out as `u128_div_rem` or `long_jump`. A
    /// discarded function has no symbol, so when the symbol table has another function
    /// at `probe` and none of the DWARF's name, the DWARF answer is a tombstone's (LLDB
    /// drops such functions by their low_pc; addr2line does not say which DIE
    /// matched). Without a symbol table nothing is known: yes.
    fn is_live_function(&self, dwarf_name: &str, probe: u64) -> bool {
        if self.symbol_names.is_empty()
            || dwarf_name.is_empty()
            || self.symbol_names.contains(dwarf_name)
        {
            return true;
        }
        let Some(symbol) = self.symbol(probe) else {
            return true;
        };
        let demangled = demangle(&symbol);
        demangled == dwarf_name
            || demangled
                .strip_suffix(dwarf_name)
                .is_some_and(|head| head.ends_with("::"))
    }

    /// The function symbol containing `addr` (or the nearest one below it when the
    /// symbol has no size).
    fn symbol(&self, addr: u64) -> Option<String> {
        let i = self
            .symbols
            .partition_point(|s| s.0 <= addr)
            .checked_sub(1)?;
        let (start, size, name) = &self.symbols[i];
        (*size == 0 || addr - start < *size).then(|| name.clone())
    }
}

/// Rust (v0 or legacy) demangling without the hash; Go's assembly functions without
/// the `.abi0` its linker adds to their symbols (`runtime.goexit.abi0` is
/// `runtime.goexit` in the Go tools and in pprof); other names unchanged.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.strip_suffix(".abi0").unwrap_or(name).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{e_machine, Elf};

    /// `e_machine` in the byte order the header's `EI_DATA` names, and 0 for a header
    /// too short to have one.
    #[test]
    fn e_machine_reads_the_header_in_its_byte_order() {
        let mut h = [0u8; 20];
        h[..4].copy_from_slice(b"\x7fELF");
        h[5] = 1; // little-endian
        h[18..20].copy_from_slice(&243u16.to_le_bytes());
        assert_eq!(e_machine(&h), 243);
        h[5] = 2; // big-endian
        h[18..20].copy_from_slice(&8u16.to_be_bytes());
        assert_eq!(e_machine(&h), 8);
        assert_eq!(e_machine(&h[..19]), 0);
    }

    /// A real ELF (this test binary) reports the architecture sampler-core records in
    /// the snapshots it writes on this host: the two sides of the `--elf` check agree.
    #[test]
    fn this_binary_is_the_architecture_a_host_snapshot_records() {
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let elf = Elf::parse_lenient("self", &data).unwrap();
        assert_ne!(
            sampler_core::ELF_MACHINE,
            0,
            "a host with a known e_machine"
        );
        assert_eq!(u64::from(elf.machine()), sampler_core::ELF_MACHINE);
    }
}
