//! Which ELF symbolizes which address: snapshot mappings matched to ELFs by GNU build
//! id (or by name when the snapshot has none), PIE addresses translated through the
//! mapping and the ELF's program headers; firmware (no mappings) at link addresses.

use crate::{Elf, FoundIn};
use heapsnap_profile::import::{
    hex, mapping_index, snapshot_mappings, to_profile_limited, Resolved, Symbols,
};
use heapsnap_profile::limits::{Budget, LimitError, Limits};
use heapsnap_profile::profile::{Mapping, Profile};
use sampler_core::decoded::Snapshot;
use std::collections::HashMap;

/// Why a snapshot cannot be converted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// An ELF given by the user is from another build than the snapshot's program.
    #[error("{elf}: build id {elf_id} does not match the snapshot's mapping {mapping} (build id {mapping_id}): the snapshot was taken from a different build of this program")]
    BuildIdMismatch {
        /// The ELF's name.
        elf: String,
        /// Its build id (hex).
        elf_id: String,
        /// The mapping's name.
        mapping: String,
        /// The mapping's build id (hex).
        mapping_id: String,
    },
    /// An ELF given by the user matches none of the snapshot's mappings.
    #[error("{elf} (build id {elf_id}) matches none of the snapshot's mappings: {mappings}")]
    NoMatchingMapping {
        /// The ELF's name.
        elf: String,
        /// Its build id (hex), or "none".
        elf_id: String,
        /// The snapshot's mappings with their build ids.
        mappings: String,
    },
    /// A given ELF does not fit the snapshot: another word size, or (firmware, which
    /// has no build id to compare) return addresses outside its code or not after a
    /// call in it.
    #[error("{elf} does not fit the snapshot: {why}; give the ELF of the build that ran")]
    ElfMismatch {
        /// The ELF's name.
        elf: String,
        /// What does not fit.
        why: String,
    },
    /// An ELF could not be read.
    #[error(transparent)]
    Symbolize(#[from] crate::SymbolizeError),
    /// The profile being built went over a resource limit.
    #[error(transparent)]
    Limit(Box<LimitError>),
}

impl ConvertError {
    /// An ELF that does not fit, which a user may still insist on: each client words
    /// how (the CLI's `--force-elf`; the browser has no such switch), so the message
    /// here does not.
    pub fn is_wrong_elf(&self) -> bool {
        matches!(
            self,
            ConvertError::BuildIdMismatch { .. } | ConvertError::ElfMismatch { .. }
        )
    }
}

impl From<LimitError> for ConvertError {
    fn from(e: LimitError) -> Self {
        ConvertError::Limit(Box::new(e))
    }
}

/// A snapshot as a profile, symbolized with the ELFs given (and, with `load`, the files
/// its mappings name), checked that they fit unless `force` (`--force-elf`), and built
/// within `limits` for an input of `input_len` bytes. The one conversion the CLI and the
/// browser's importer both run, so a snapshot reads the same in both.
pub fn snapshot_profile(
    snap: &Snapshot,
    input_len: u64,
    elves: Vec<Elf>,
    load: Option<Loader<'_>>,
    force: bool,
    limits: &Limits,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Profile, ConvertError> {
    let mut resolver = if force {
        Resolver::forced(snap, elves, load)?
    } else {
        Resolver::new(snap, elves, load)?
    };
    if !force {
        resolver.verify()?;
    }
    let mut budget = Budget::new(limits, input_len);
    Ok(to_profile_limited(
        snap,
        &mut resolver as &mut dyn Symbols,
        progress,
        &mut budget,
    )?)
}

/// Reads a mapped file by its path: `Ok(None)` if there is none, `Err(why)` if there is
/// one that must not be read (not a regular file, too large, not an ELF: the snapshot
/// names the path, so it can name anything). The CLI reads the local file system with
/// those checks; the browser has no such thing.
pub type Loader<'a> = &'a mut dyn FnMut(&str) -> Result<Option<Vec<u8>>, String>;

/// Symbolizes a snapshot's return addresses with a set of ELFs.
pub struct Resolver<'s> {
    snap: &'s Snapshot,
    elves: Vec<Elf>,
    /// Snapshot mapping index → ELF index.
    by_mapping: Vec<Option<usize>>,
    /// Firmware: no mappings in the snapshot; addresses are link addresses.
    firmware: bool,
    /// How many of `elves` the caller gave (the rest were found through mappings).
    given: usize,
    warnings: Vec<String>,
}

/// The program a path names: its file name, without an `.elf` suffix (cargo's
/// `my-firmware` and the `my-firmware.elf` copy next to the snapshots are one program).
fn basename(p: &str) -> &str {
    let name = p.rsplit(['/', '\\']).next().unwrap_or(p);
    name.strip_suffix(".elf").unwrap_or(name)
}

impl<'s> Resolver<'s> {
    /// Matches the given ELFs to the snapshot's mappings. A given ELF whose build id
    /// differs from the mapping it names, or that matches no mapping of a snapshot that
    /// has build ids, is an error. With `load(path)` (e.g. reading the file if it
    /// exists), mappings no ELF was given for are tried as files on disk; problems with
    /// those are warnings, not errors.
    pub fn new(
        snap: &'s Snapshot,
        given: Vec<Elf>,
        load: Option<Loader<'_>>,
    ) -> Result<Self, ConvertError> {
        Self::build(snap, given, load, false)
    }

    /// As [`Resolver::new`], for a user who insists (`--force-elf`): one given ELF
    /// serves every mapping, whatever its build id or name says. With several ELFs the
    /// matching is as in `new`.
    pub fn forced(
        snap: &'s Snapshot,
        given: Vec<Elf>,
        load: Option<Loader<'_>>,
    ) -> Result<Self, ConvertError> {
        Self::build(snap, given, load, true)
    }

    fn build(
        snap: &'s Snapshot,
        given: Vec<Elf>,
        load: Option<Loader<'_>>,
        force: bool,
    ) -> Result<Self, ConvertError> {
        let firmware = snap.mappings.is_empty();
        let mut by_mapping = if firmware {
            Vec::new()
        } else if force && given.len() == 1 {
            vec![Some(0); snap.mappings.len()]
        } else {
            match_given(snap, &given)?
        };
        let mut warnings = Vec::new();
        let given_count = given.len();
        if firmware && given.is_empty() {
            warnings.push(
                "no ELF given: the firmware's addresses stay unsymbolized (one row of addresses); pass the firmware's ELF with --elf".to_owned(),
            );
        }
        let mut elves = given;
        if let (false, Some(load)) = (firmware, load) {
            load_mapped(snap, load, &mut elves, &mut by_mapping, &mut warnings);
        }
        if given_count == 0 && !firmware && by_mapping.iter().all(Option::is_none) {
            // A firmware that publishes its mapping (name and build id, no path) and
            // no --elf: nothing to symbolize with, which must not pass in silence.
            let names: Vec<&str> = snap.mappings.iter().map(|m| m.name.as_str()).collect();
            warnings.push(format!(
                "no ELF given, and no file of the snapshot's mappings ({}) was found: its addresses stay unsymbolized; pass the program's ELF with --elf",
                names.join(", ")
            ));
        }
        Ok(Resolver {
            snap,
            elves,
            by_mapping,
            firmware,
            given: given_count,
            warnings,
        })
    }

    /// Checks that the ELFs the caller gave can be the snapshot's program, beyond the
    /// build ids [`Resolver::new`] compares: the word size, the architecture (the
    /// snapshot's `elf_machine` against the ELF's `e_machine`), and for firmware (no
    /// mappings, no build id) that its return addresses lie in the ELFs' loaded
    /// segments and, in Thumb code, right after call instructions. A wrong ELF gives
    /// confident garbage otherwise. More than half of the addresses failing is an
    /// error; a few (a corrupt frame chain) is a warning.
    pub fn verify(&mut self) -> Result<(), ConvertError> {
        let given = self.elves.get(..self.given).unwrap_or(&[]);
        // A legacy text profile does not say its word size: it is guessed from the
        // widest address, and a 64-bit program may well use only low addresses (Go
        // links statically at 0x400000).
        let guessed = heapsnap_profile::import::legacy(self.snap.version).is_some();
        for e in given {
            if e.word_size() != self.snap.word_size
                && !(guessed && e.word_size() > self.snap.word_size)
            {
                return Err(ConvertError::ElfMismatch {
                    elf: e.name().to_owned(),
                    why: format!(
                        "it is a {}-bit ELF and the snapshot holds {}-bit addresses",
                        u32::from(e.word_size()) * 8,
                        u32::from(self.snap.word_size) * 8
                    ),
                });
            }
        }
        // The snapshot says which architecture wrote it (an encoder before
        // `elf_machine` sends 0: unknown, checked below by the code where it can be).
        let machine = self.snap.counters.elf_machine;
        if let Some(e) = given
            .iter()
            .find(|e| machine != 0 && u64::from(e.machine()) != machine)
        {
            return Err(ConvertError::ElfMismatch {
                elf: e.name().to_owned(),
                why: format!(
                    "it is code for {} and the snapshot was written by code for {}",
                    crate::machine_name(u64::from(e.machine())),
                    crate::machine_name(machine)
                ),
            });
        }
        if !self.firmware || given.is_empty() {
            return Ok(());
        }
        let mut addrs: Vec<u64> = self
            .snap
            .stacks
            .iter()
            .flat_map(|s| s.frames.iter().copied())
            .collect();
        addrs.sort_unstable();
        addrs.dedup();
        let (mut outside, mut calls, mut not_calls) = (0usize, 0usize, 0usize);
        for &a in &addrs {
            let elf = given.iter().find(|e| {
                let a = if e.is_arm() { a & !1 } else { a };
                e.contains_vaddr(a.saturating_sub(1))
            });
            match elf.map(|e| e.follows_call(a)) {
                None => outside += 1,
                Some(Some(true)) => calls += 1,
                Some(Some(false)) => not_calls += 1,
                Some(None) => {}
            }
        }
        let names = given.iter().map(Elf::name).collect::<Vec<_>>().join(", ");
        let total = addrs.len();
        if outside * 2 > total {
            let ranges: Vec<String> = given
                .iter()
                .map(|e| {
                    let (lo, hi) = e.vaddr_range();
                    format!("{lo:#x}..{hi:#x}")
                })
                .collect();
            return Err(ConvertError::ElfMismatch {
                elf: names,
                why: format!(
                    "{outside} of the snapshot's {total} return addresses lie outside its loaded segments ({}); a firmware snapshot carries no build id to check",
                    ranges.join(", ")
                ),
            });
        }
        if not_calls > calls {
            return Err(ConvertError::ElfMismatch {
                elf: names,
                why: format!(
                    "{not_calls} of {} return addresses do not follow a call instruction in it (another build of the firmware?); a firmware snapshot carries no build id to check",
                    calls + not_calls
                ),
            });
        }
        // A legacy text profile never records its architecture (pprof reads it with
        // whatever binary it is given): its addresses lying in the ELF is the check.
        if machine == 0 && !guessed && calls + not_calls == 0 && !addrs.is_empty() {
            // No architecture recorded, and no instruction check for this ELF's
            // (only Thumb code is decoded): nothing has shown that it is the right one.
            self.warnings.push(format!(
                "the snapshot does not say which architecture wrote it (an encoder before elf_machine) and {names} is {} code, whose return addresses heapsnap cannot check: make sure it is the ELF of the firmware that ran",
                given
                    .iter()
                    .map(|e| crate::machine_name(u64::from(e.machine())))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if outside + not_calls > 0 {
            self.warnings.push(format!(
                "{} of {total} return addresses do not fit {names} (outside its code or not after a call): a corrupt frame chain, or the wrong ELF",
                outside + not_calls
            ));
        }
        Ok(())
    }

    /// Problems met with ELFs found on disk (for the profile's comments / stderr).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

impl Symbols for Resolver<'_> {
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn mappings(&self) -> Vec<(Mapping, String, String)> {
        if !self.firmware {
            let mut ms = snapshot_mappings(self.snap);
            // An ELF at its link addresses (a firmware's mapping, which sends offset 0):
            // the offset pprof readers need is where the ELF's segment puts the start.
            for (i, (m, _, _)) in ms.iter_mut().enumerate() {
                let elf = self.by_mapping.get(i).copied().flatten();
                if let Some(e) = elf.map(|e| &self.elves[e]).filter(|e| e.is_exec()) {
                    if let Some(off) = e.file_offset_of_vaddr(m.memory_start) {
                        m.file_offset = off;
                    }
                }
            }
            return ms;
        }
        // Firmware: one mapping per ELF, over its link addresses.
        self.elves
            .iter()
            .map(|e| {
                let (lo, hi) = e.vaddr_range();
                let m = Mapping {
                    memory_start: lo,
                    memory_limit: hi,
                    file_offset: 0,
                    ..Default::default()
                };
                (m, e.name().to_owned(), hex(e.build_id().unwrap_or(&[])))
            })
            .collect()
    }

    fn resolve(&mut self, addr: u64) -> Resolved {
        let (mapping, elf, vaddr) = if self.firmware {
            let clear = |e: &Elf| if e.is_arm() { addr & !1 } else { addr };
            match self
                .elves
                .iter()
                .position(|e| e.contains_vaddr(clear(e).saturating_sub(1)))
            {
                Some(i) => (Some(i), Some(&self.elves[i]), Some(addr)),
                None => (None, None, None),
            }
        } else {
            let mi = mapping_index(self.snap, addr);
            let elf = mi.and_then(|i| self.by_mapping[i]).map(|e| &self.elves[e]);
            let vaddr = match (mi, elf) {
                // Loaded at its link addresses: the address is the ELF's (a firmware's
                // mapping cannot know its file offset and sends 0).
                (Some(_), Some(e)) if e.is_exec() => Some(addr),
                (Some(i), Some(e)) => {
                    let m = &self.snap.mappings[i];
                    e.vaddr_of_file_offset(addr - m.start + m.offset)
                }
                _ => None,
            };
            (mi, elf, vaddr)
        };
        let (frames, found_in) = match (elf, vaddr) {
            (Some(e), Some(v)) => e.frames_at_return_address(v),
            _ => (Vec::new(), FoundIn::None),
        };
        Resolved {
            mapping,
            frames,
            dwarf: found_in == FoundIn::Dwarf,
        }
    }
}

/// Which given ELF serves each snapshot mapping: by build id, else by file name. A
/// given ELF whose build id differs from the mapping it names, or that matches no
/// mapping, is an error (the user named it: it must fit).
fn match_given(snap: &Snapshot, given: &[Elf]) -> Result<Vec<Option<usize>>, ConvertError> {
    let mut by_mapping = vec![None; snap.mappings.len()];
    for (ei, elf) in given.iter().enumerate() {
        let id = elf.build_id().unwrap_or(&[]);
        let by_id: Vec<usize> = (0..snap.mappings.len())
            .filter(|&i| !id.is_empty() && snap.mappings[i].build_id == id)
            .collect();
        let by_name: Vec<usize> = (0..snap.mappings.len())
            .filter(|&i| basename(&snap.mappings[i].name) == basename(elf.name()))
            .collect();
        let chosen = if !by_id.is_empty() {
            by_id
        } else if let Some(&i) = by_name
            .iter()
            .find(|&&i| !snap.mappings[i].build_id.is_empty() && !id.is_empty())
        {
            let m = &snap.mappings[i];
            return Err(ConvertError::BuildIdMismatch {
                elf: elf.name().to_owned(),
                elf_id: hex(id),
                mapping: m.name.clone(),
                mapping_id: hex(&m.build_id),
            });
        } else if !by_name.is_empty() {
            by_name
        } else {
            let mappings = snap
                .mappings
                .iter()
                .map(|m| {
                    let id = if m.build_id.is_empty() {
                        "no build id".to_owned()
                    } else {
                        format!("build id {}", hex(&m.build_id))
                    };
                    format!("{} ({id})", m.name)
                })
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ConvertError::NoMatchingMapping {
                elf: elf.name().to_owned(),
                elf_id: if id.is_empty() {
                    "none".into()
                } else {
                    hex(id)
                },
                mappings,
            });
        };
        for i in chosen {
            by_mapping[i].get_or_insert(ei);
        }
    }
    Ok(by_mapping)
}

/// Mappings no given ELF serves, tried as files through `load` (problems with those
/// are warnings: nobody asked for them by name).
fn load_mapped(
    snap: &Snapshot,
    load: Loader<'_>,
    elves: &mut Vec<Elf>,
    by_mapping: &mut [Option<usize>],
    warnings: &mut Vec<String>,
) {
    let mut loaded: HashMap<String, Option<usize>> = HashMap::new();
    for (i, m) in snap.mappings.iter().enumerate() {
        if by_mapping[i].is_some() || m.name.is_empty() || m.name.starts_with('[') {
            continue;
        }
        if let Some(&ei) = loaded.get(&m.name) {
            by_mapping[i] = ei;
            continue;
        }
        let ei = match load(&m.name) {
            Ok(None) => None,
            Err(why) => {
                warnings.push(format!(
                    "mapping {} names {}: not read: {why}",
                    i + 1,
                    m.name
                ));
                None
            }
            Ok(Some(bytes)) => match Elf::parse_lenient(&m.name, &bytes) {
                Err(e) => {
                    warnings.push(format!("cannot symbolize {}: {e}", m.name));
                    None
                }
                Ok(elf)
                    if !m.build_id.is_empty()
                        && elf.build_id().is_some_and(|id| id != m.build_id) =>
                {
                    warnings.push(format!(
                            "{} on disk has build id {}, the snapshot's mapping has {}: left unsymbolized",
                            m.name,
                            hex(elf.build_id().unwrap_or(&[])),
                            hex(&m.build_id)
                        ));
                    None
                }
                Ok(elf) => {
                    elves.push(elf);
                    Some(elves.len() - 1)
                }
            },
        };
        loaded.insert(m.name.clone(), ei);
        by_mapping[i] = ei;
    }
}
