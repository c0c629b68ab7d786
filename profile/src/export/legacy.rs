//! The legacy gperftools / Go `debug=1` heap text format, which pprof still reads
//! (`profile/legacy_profile.go`): a `heap profile:` header, one line per bucket with
//! the *sampled* counts and the raw return addresses, then `MAPPED_LIBRARIES:`.
//!
//! Like Go's `writeHeapInternal`, the header says `@ heap/<2×rate>` (pprof halves it
//! back) and the reader unsamples with the same `scaleHeapSample` as
//! [`crate::import::to_profile`], so both formats give `go tool pprof` the same numbers.

use crate::profile::Profile;
use sampler_core::decoded::Snapshot;
use std::collections::HashMap;
use std::fmt::Write;

/// The snapshot as legacy heap text. `symbols` (a profile converted from the same
/// snapshot) adds `#` comment lines with function and file:line under each bucket, as
/// Go does; pprof skips them. Buckets are ordered by in-use bytes, largest first.
pub fn legacy_text(snap: &Snapshot, symbols: Option<&Profile>) -> String {
    let stacks: HashMap<u32, &[u64]> = snap
        .stacks
        .iter()
        .map(|s| (s.id, s.frames.as_slice()))
        .collect();
    let inuse = |c: &sampler_core::Cycle| {
        (
            c.allocs.saturating_sub(c.frees),
            c.alloc_bytes.saturating_sub(c.free_bytes),
        )
    };
    let mut buckets: Vec<_> = snap
        .buckets
        .iter()
        .filter(|b| b.active.allocs != 0 || b.active.alloc_bytes != 0)
        .collect();
    buckets.sort_by_key(|b| (std::cmp::Reverse(inuse(&b.active).1), b.stack_id, b.size));
    let (mut t_in, mut t_inb, mut t_a, mut t_ab) = (0u64, 0u64, 0u64, 0u64);
    for b in &buckets {
        let (o, by) = inuse(&b.active);
        t_in += o;
        t_inb += by;
        t_a += b.active.allocs;
        t_ab += b.active.alloc_bytes;
    }
    let names = symbols.map(address_names).unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "heap profile: {t_in}: {t_inb} [{t_a}: {t_ab}] @ heap/{}",
        snap.sample_rate.saturating_mul(2)
    );
    for b in buckets {
        let (o, by) = inuse(&b.active);
        let _ = write!(
            out,
            "{o}: {by} [{}: {}] @",
            b.active.allocs, b.active.alloc_bytes
        );
        let frames = stacks.get(&b.stack_id).copied().unwrap_or(&[]);
        for a in frames {
            let _ = write!(out, " {a:#x}");
        }
        out.push('\n');
        for a in frames {
            for n in names.get(a).into_iter().flatten() {
                let _ = writeln!(out, "#\t{a:#x}\t{n}");
            }
        }
        out.push('\n');
    }
    out.push_str("\nMAPPED_LIBRARIES:\n");
    for m in &snap.mappings {
        let _ = writeln!(
            out,
            "{:08x}-{:08x} r-xp {:08x} 00:00 0 {}",
            m.start, m.end, m.offset, m.name
        );
    }
    out
}

/// address → "function file:line" for each (inlined) frame of each location.
fn address_names(p: &Profile) -> HashMap<u64, Vec<String>> {
    let funcs: HashMap<u64, &crate::profile::Function> =
        p.function.iter().map(|f| (f.id, f)).collect();
    p.location
        .iter()
        .map(|l| {
            let names = l
                .line
                .iter()
                .filter_map(|ln| {
                    let f = funcs.get(&ln.function_id)?;
                    Some(format!(
                        "{}\t{}:{}",
                        p.str(f.name),
                        p.str(f.filename),
                        ln.line
                    ))
                })
                .collect();
            (l.address, names)
        })
        .collect()
}
