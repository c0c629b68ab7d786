//! pprof's `drop_frames`/`keep_frames` (its `prune.go`): frames a profiler marks as
//! uninteresting (allocator internals, `malloc`, `operator new`) are cut from every
//! stack before anything is shown, as `go tool pprof` does on reading.

use super::{IdIndex, Profile, Stack};
use crate::analysis::Pattern;

impl Profile {
    /// pprof's `RemoveUninteresting`: when the profile names `drop_frames`, compiles
    /// `^(drop_frames)$` (and `keep_frames` likewise) with `compile` (regex-lite in the
    /// CLI, the browser's `RegExp` in the viewer) and prunes ([`Profile::prune`]). A
    /// pattern that does not compile prunes nothing, as in pprof (which ignores the
    /// error); the error is returned for a warning.
    pub fn remove_uninteresting(
        &mut self,
        compile: &dyn Fn(&str) -> Result<Pattern, String>,
    ) -> Result<(), String> {
        let (drop, keep) = (self.str(self.drop_frames), self.str(self.keep_frames));
        if drop.is_empty() {
            return Ok(());
        }
        let full = |name: &str, re: &str| {
            compile(&format!("^({re})$")).map_err(|e| format!("{name} {re}: {e}"))
        };
        let d = full("drop_frames", drop)?;
        let k = match keep {
            "" => None,
            k => Some(full("keep_frames", k)?),
        };
        self.prune(&d, k.as_ref());
        Ok(())
    }

    /// [`Profile::remove_uninteresting`] with regex-lite (RE2-like, as Go's `regexp`).
    #[cfg(feature = "regex")]
    pub fn remove_uninteresting_frames(&mut self) -> Result<(), String> {
        self.remove_uninteresting(&|re: &str| {
            let r = regex_lite::Regex::new(re).map_err(|e| e.to_string())?;
            Ok(Pattern::new(move |s| r.is_match(s)))
        })
    }

    /// pprof's `Prune`: in each location, the innermost frame (root side) whose
    /// simplified name matches `drop` and not `keep` is found; it and every frame
    /// inlined below it are removed; then each sample's stack loses everything from
    /// the first such location on its root side, except that frames above the first
    /// uninteresting one (no user frame yet, counting from the root) are never pruned.
    pub fn prune(&mut self, drop: &Pattern, keep: Option<&Pattern>) {
        let fids: Vec<u64> = self.function.iter().map(|f| f.id).collect();
        let funcs = IdIndex::lenient(&fids);
        // Per location: 0 kept, 1 pruned beneath (lines cut), 2 pruned whole.
        let mut mark = vec![0u8; self.location.len()];
        for (li, m) in mark.iter_mut().enumerate() {
            let found = self.location[li].line.iter().rposition(|l| {
                let name = funcs
                    .get(l.function_id)
                    .map_or("", |i| self.str(self.function[i as usize].name));
                let f = simplify_func(name);
                !name.is_empty() && drop.is_match(f) && !keep.is_some_and(|k| k.is_match(f))
            });
            if let Some(i) = found {
                let lines = &mut self.location[li].line;
                *m = if i + 1 == lines.len() { 2 } else { 1 };
                if *m == 1 {
                    // (`drain` would be one more generic Drain per type in the viewer.)
                    lines.rotate_left(i + 1);
                    lines.truncate(lines.len() - i - 1);
                }
            }
        }
        if mark.iter().all(|&m| m == 0) {
            return;
        }
        let lids: Vec<u64> = self.location.iter().map(|l| l.id).collect();
        let locs = IdIndex::lenient(&lids);
        // One sample's ids, reused (a stack's varints are read forwards only).
        let mut ids = Vec::new();
        for s in &mut self.sample {
            let mut found_user = false;
            ids.clear();
            s.location_id.append_to(&mut ids);
            for i in (0..ids.len()).rev() {
                let m = locs.get(ids[i]).map_or(0, |k| mark[k as usize]);
                if m == 0 {
                    found_user = true;
                } else if found_user {
                    let k = if m == 2 { i + 1 } else { i };
                    s.location_id = Stack::from(&ids[k..]);
                    break;
                }
            }
        }
    }
}

/// pprof's `simplifyFunc`: a leading `.` off (PPC ELF v1), then the argument list
/// cut at the first `(` that does not begin `(anonymous namespace)` nor is part of
/// `operator()`.
fn simplify_func(f: &str) -> &str {
    let f = f.strip_prefix('.').unwrap_or(f);
    const RESERVED: [&str; 2] = ["(anonymous namespace)", "operator()"];
    let b = f.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &f[i..];
        if let Some(r) = RESERVED.iter().find(|r| rest.starts_with(**r)) {
            i += r.len();
        } else if b[i] == b'(' {
            return &f[..i];
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::simplify_func;

    #[test]
    fn simplified_names_as_pprof() {
        assert_eq!(simplify_func("operator new(unsigned long)"), "operator new");
        assert_eq!(simplify_func(".foo(int)"), "foo");
        assert_eq!(
            simplify_func("(anonymous namespace)::f(int)"),
            "(anonymous namespace)::f"
        );
        assert_eq!(simplify_func("A::operator()(int)"), "A::operator()");
        assert_eq!(simplify_func("main.go"), "main.go");
        assert_eq!(simplify_func("ünï(x"), "ünï");
    }
}
