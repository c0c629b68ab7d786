//! `heapsnap pull`: read the latest snapshot out of a target's RAM mailbox
//! (`sampler_core::SnapshotMailbox`) through a GDB server, with the firmware's ELF to
//! find the mailbox by its symbol.
//!
//! The mailbox header carries a sequence lock: an odd sequence (the target was stopped
//! in the middle of a publish) or one that changed while the bytes were read is a torn
//! read; the target is let run a moment and read again.

use std::time::Duration;

use object::{Object, ObjectSymbol};
use sampler_core::mailbox::{
    MailboxHeader, MAILBOX_HEADER_LEN, MAILBOX_MAGIC, MAILBOX_SYMBOL, MAILBOX_VERSION,
};
use sampler_core::snapshot::{self, DecodeError};

use crate::gdb::{Gdb, GdbError};

/// Torn reads tolerated before giving up (each lets the target run ~10 ms).
const TORN_RETRIES: u32 = 50;

/// Why no snapshot was pulled.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    #[error("{elf}: not an ELF file: {why}")]
    NotElf { elf: String, why: String },
    #[error("{elf} has no symbol `{symbol}`{hint}: publish snapshots into `#[no_mangle] static {default}: sampler_core::SnapshotMailbox<2048> = SnapshotMailbox::new();` with `{default}.publish(HEAP.profiler(), &[])` (docs/integrating.md, section 4), or name your mailbox with --symbol")]
    SymbolMissing {
        elf: String,
        symbol: String,
        hint: String,
        default: &'static str,
    },
    #[error("{elf}: `{symbol}` is {size} bytes, smaller than a mailbox header ({MAILBOX_HEADER_LEN}): not a SnapshotMailbox")]
    SymbolTooSmall {
        elf: String,
        symbol: String,
        size: u64,
    },
    #[error(transparent)]
    Gdb(#[from] GdbError),
    #[error("`{symbol}` at {addr:#x} was never published into (all zero): the firmware has not reached its first `publish` yet, or it does not call it")]
    NeverWritten { symbol: String, addr: u64 },
    #[error("`{symbol}` at {addr:#x} does not hold a mailbox (magic {magic:02x?}, expected \"HSMB\"): is the ELF the build running on the target?")]
    NotAMailbox {
        symbol: String,
        addr: u64,
        magic: [u8; 4],
    },
    #[error("`{symbol}` has mailbox layout version {version}; this heapsnap reads version {MAILBOX_VERSION}")]
    Version { symbol: String, version: u32 },
    #[error("`{symbol}` says it holds {capacity} bytes ({len} used) but the symbol is {size} bytes: is the ELF the build running on the target?")]
    Inconsistent {
        symbol: String,
        capacity: u32,
        len: u32,
        size: u64,
    },
    #[error("the firmware's last snapshot did not fit in `{symbol}`: it needed {needed} bytes, the mailbox holds {capacity} (make it SnapshotMailbox<{needed}> or more; {too_big} publish(es) did not fit so far)")]
    TooBig {
        symbol: String,
        needed: u32,
        capacity: u32,
        too_big: u32,
    },
    #[error("the firmware's last publish into `{symbol}` failed ({failed} failure(s) so far: a publish from inside the profiler, or an encoder error); no snapshot in the mailbox")]
    Failed { symbol: String, failed: u32 },
    #[error("every one of {tries} reads of `{symbol}` raced a publish (sequence odd or changed): does the firmware publish without pause?")]
    Torn { symbol: String, tries: u32 },
    #[error("the {len} bytes in `{symbol}` (publish {publish}) are not a valid snapshot")]
    BadSnapshot {
        symbol: String,
        len: u32,
        publish: u32,
        source: DecodeError,
    },
}

/// Where the mailbox is, from the ELF.
#[derive(Clone, Debug)]
pub struct Mailbox {
    pub symbol: String,
    pub addr: u64,
    /// The symbol's size in bytes (header + capacity).
    pub size: u64,
    pub little_endian: bool,
}

impl Mailbox {
    /// Find `symbol` in the ELF `bytes` (named `elf` in messages).
    pub fn find(elf: &str, bytes: &[u8], symbol: &str) -> Result<Mailbox, PullError> {
        let file = object::File::parse(bytes).map_err(|e| PullError::NotElf {
            elf: elf.to_owned(),
            why: e.to_string(),
        })?;
        let Some(sym) = file.symbol_by_name(symbol) else {
            // A mailbox without #[no_mangle] has a mangled name containing the plain one.
            let similar: Vec<String> = file
                .symbols()
                .filter_map(|s| s.name().ok().map(str::to_owned))
                .filter(|n| {
                    n != MAILBOX_SYMBOL && (n.contains(symbol) || n.contains(MAILBOX_SYMBOL))
                })
                .take(3)
                .collect();
            let hint = if file.symbol_by_name(MAILBOX_SYMBOL).is_some() {
                format!(" (it has `{MAILBOX_SYMBOL}`, the default: leave out --symbol)")
            } else if similar.is_empty() {
                String::new()
            } else {
                format!(
                    " (it has {}: a mangled name needs `#[no_mangle]`, or pass it to --symbol)",
                    similar
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return Err(PullError::SymbolMissing {
                elf: elf.to_owned(),
                symbol: symbol.to_owned(),
                hint,
                default: MAILBOX_SYMBOL,
            });
        };
        if sym.size() < MAILBOX_HEADER_LEN as u64 {
            return Err(PullError::SymbolTooSmall {
                elf: elf.to_owned(),
                symbol: symbol.to_owned(),
                size: sym.size(),
            });
        }
        Ok(Mailbox {
            symbol: symbol.to_owned(),
            addr: sym.address(),
            size: sym.size(),
            little_endian: file.is_little_endian(),
        })
    }
}

/// One snapshot read out of the mailbox.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The snapshot's bytes (checked: they decode).
    pub bytes: Vec<u8>,
    /// The header as read (its `seq` / 2 is the publish number).
    pub header: MailboxHeader,
    /// Torn reads retried before this one.
    pub torn: u32,
}

/// Read the snapshot out of a halted target; on a torn read, let it run ~10 ms,
/// stop it again and retry.
pub fn read(gdb: &mut Gdb, mb: &Mailbox) -> Result<Pulled, PullError> {
    for torn in 0..TORN_RETRIES {
        if torn > 0 {
            gdb.resume()?;
            std::thread::sleep(Duration::from_millis(10));
            gdb.interrupt()?;
        }
        let raw = gdb.read_memory(mb.addr, MAILBOX_HEADER_LEN)?;
        let mut head = [0u8; MAILBOX_HEADER_LEN];
        head.copy_from_slice(&raw);
        let h = MailboxHeader::parse(&head, mb.little_endian);
        if h.seq % 2 == 1 {
            continue;
        }
        check(mb, &h)?;
        let bytes = gdb.read_memory(mb.addr + MAILBOX_HEADER_LEN as u64, h.len as usize)?;
        // A server that reads a running target's memory (no halt): the sequence must
        // not have moved while the bytes were read.
        let after = gdb.read_memory(mb.addr, MAILBOX_HEADER_LEN)?;
        let mut again = [0u8; MAILBOX_HEADER_LEN];
        again.copy_from_slice(&after);
        if MailboxHeader::parse(&again, mb.little_endian).seq != h.seq {
            continue;
        }
        snapshot::decode(&bytes).map_err(|source| PullError::BadSnapshot {
            symbol: mb.symbol.clone(),
            len: h.len,
            publish: h.seq / 2,
            source,
        })?;
        return Ok(Pulled {
            bytes,
            header: h,
            torn,
        });
    }
    Err(PullError::Torn {
        symbol: mb.symbol.clone(),
        tries: TORN_RETRIES,
    })
}

/// A complete (even-sequence) header: does it hold a snapshot?
fn check(mb: &Mailbox, h: &MailboxHeader) -> Result<(), PullError> {
    let symbol = mb.symbol.clone();
    if *h == MailboxHeader::default() {
        return Err(PullError::NeverWritten {
            symbol,
            addr: mb.addr,
        });
    }
    if h.magic != MAILBOX_MAGIC {
        return Err(PullError::NotAMailbox {
            symbol,
            addr: mb.addr,
            magic: h.magic,
        });
    }
    if h.version != MAILBOX_VERSION {
        return Err(PullError::Version {
            symbol,
            version: h.version,
        });
    }
    if u64::from(h.capacity) + MAILBOX_HEADER_LEN as u64 > mb.size || h.len > h.capacity {
        return Err(PullError::Inconsistent {
            symbol,
            capacity: h.capacity,
            len: h.len,
            size: mb.size,
        });
    }
    if h.len == 0 {
        if h.too_big > 0 {
            return Err(PullError::TooBig {
                symbol,
                needed: h.needed,
                capacity: h.capacity,
                too_big: h.too_big,
            });
        }
        return Err(PullError::Failed {
            symbol,
            failed: h.failed,
        });
    }
    Ok(())
}
