//! The roots of a leak check from an ELF: its writable static data (`.data`, `.bss`
//! and the like), one root per data symbol, named by its demangled path, and the
//! parts no symbol covers named by section and offset.

use heapsnap_profile::leaks::{Root, Types};
use object::elf::{SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE};
use object::{Object, ObjectSection, ObjectSymbol, SectionFlags};

use crate::{demangle, SymbolizeError};

/// What a leak check needs from the ELF: the roots and the target's word.
#[derive(Clone, Debug)]
pub struct StaticData {
    /// Every data symbol of the writable sections, then the uncovered parts.
    pub roots: Vec<Root>,
    /// The writable sections themselves (name, start, size), for messages.
    pub sections: Vec<Root>,
    /// Sections left out: the stack and heap regions a linker script reserves (their
    /// dead words would keep lost objects alive; give a live stack range instead).
    pub skipped: Vec<Root>,
    /// Bytes per pointer (4 or 8).
    pub word_size: u8,
    pub big_endian: bool,
    /// The statics' types from DWARF, for a typed scan (named reference paths), or why
    /// there are none (no DWARF: the scan is conservative only).
    pub types: Result<Types, String>,
}

/// The writable, allocated, non-executable sections of the ELF with their data
/// symbols, and the statics' types when it has DWARF. Sections named `.stack*` or `.heap*` are skipped (see
/// [`StaticData::skipped`]).
pub fn static_data(name: &str, data: &[u8]) -> Result<StaticData, SymbolizeError> {
    let file = object::File::parse(data).map_err(|e| SymbolizeError::NotElf {
        name: name.to_owned(),
        reason: e.to_string(),
    })?;
    let mut sections = Vec::new();
    let mut skipped = Vec::new();
    for s in file.sections() {
        let SectionFlags::Elf { sh_flags, .. } = s.flags() else {
            continue;
        };
        if !sh_flags.contains(SHF_WRITE.with(SHF_ALLOC))
            || sh_flags.intersects(SHF_EXECINSTR)
            || s.size() == 0
        {
            continue;
        }
        let sname = s.name().unwrap_or("?").to_owned();
        let r = Root {
            name: sname.clone(),
            start: s.address(),
            size: s.size(),
        };
        if sname.starts_with(".stack") || sname.starts_with(".heap") {
            skipped.push(r);
        } else {
            sections.push((s.index(), r));
        }
    }
    let mut syms: Vec<Root> = Vec::new();
    for sym in file.symbols() {
        let Some(idx) = sym.section_index() else {
            continue;
        };
        let Some((_, sec)) = sections.iter().find(|(i, _)| *i == idx) else {
            continue;
        };
        if sym.size() == 0 || sym.address() < sec.start {
            continue;
        }
        let raw = sym.name().unwrap_or("");
        if raw.is_empty() {
            continue;
        }
        // Clipped to the section (a symbol's size is the linker's word, not ours).
        let end = (sym.address() + sym.size()).min(sec.start + sec.size);
        syms.push(Root {
            name: demangle(raw),
            start: sym.address(),
            size: end - sym.address(),
        });
    }
    syms.sort_by_key(|r| (r.start, std::cmp::Reverse(r.size)));
    // Aliases and nested symbols: the first (largest) at an address wins, and a symbol
    // inside an earlier one is dropped, so every word belongs to one root.
    let mut roots: Vec<Root> = Vec::new();
    for r in syms {
        if roots.last().is_some_and(|l| r.start < l.start + l.size) {
            continue;
        }
        roots.push(r);
    }
    // The parts of each section no symbol covers.
    let mut gaps = Vec::new();
    for (_, sec) in &sections {
        let mut at = sec.start;
        let end = sec.start + sec.size;
        for r in roots
            .iter()
            .filter(|r| r.start >= sec.start && r.start < end)
        {
            if r.start > at {
                gaps.push(gap(sec, at, r.start));
            }
            at = at.max(r.start + r.size);
        }
        if at < end {
            gaps.push(gap(sec, at, end));
        }
    }
    roots.extend(gaps);
    roots.sort_by_key(|r| r.start);
    Ok(StaticData {
        roots,
        sections: sections.into_iter().map(|(_, r)| r).collect(),
        skipped,
        word_size: if file.is_64() { 8 } else { 4 },
        big_endian: !file.is_little_endian(),
        types: crate::types::types_from_dwarf(data),
    })
}

fn gap(sec: &Root, from: u64, to: u64) -> Root {
    Root {
        name: format!("{}+{:#x}", sec.name, from - sec.start),
        start: from,
        size: to - from,
    }
}
