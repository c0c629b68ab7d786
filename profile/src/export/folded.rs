//! Folded (collapsed) stacks, the input of flamegraph.pl and inferno: one line per
//! distinct stack, `root;…;leaf value`, sorted, so the output is deterministic.

use crate::profile::Profile;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Folded stacks of `sample_index` (root first, inlined frames expanded, identical
/// stacks summed, zero stacks left out). Unsymbolized frames print as `0xADDR`.
pub fn folded(p: &Profile, sample_index: usize) -> String {
    let locs: std::collections::HashMap<u64, &crate::profile::Location> =
        p.location.iter().map(|l| (l.id, l)).collect();
    let funcs: std::collections::HashMap<u64, &str> =
        p.function.iter().map(|f| (f.id, p.str(f.name))).collect();
    let mut stacks: BTreeMap<String, i64> = BTreeMap::new();
    for s in &p.sample {
        let v = s.value.get(sample_index).copied().unwrap_or(0);
        if v == 0 {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for id in s.location_id.to_vec().into_iter().rev() {
            let Some(l) = locs.get(&id) else { continue };
            if l.line.is_empty() {
                names.push(format!("{:#x}", l.address));
            }
            for line in l.line.iter().rev() {
                let n = funcs.get(&line.function_id).copied().unwrap_or("");
                // `;` separates frames and ` ` separates the count: keep them out of names.
                names.push(if n.is_empty() {
                    format!("{:#x}", l.address)
                } else {
                    n.replace(';', ":")
                });
            }
        }
        let key = if names.is_empty() {
            "[unknown]".to_owned()
        } else {
            names.join(";")
        };
        *stacks.entry(key).or_default() += v;
    }
    let mut out = String::new();
    for (k, v) in stacks {
        if v != 0 {
            let _ = writeln!(out, "{k} {v}");
        }
    }
    out
}
