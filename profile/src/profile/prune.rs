//! pprof's `drop_frames`/`keep_frames` (its `prune.go`): frames a profiler marks as
//! uninteresting (allocator internals, `malloc`, `operator new`) are cut from every
//! stack before anything is shown, as `go tool pprof` does on reading.

use super::Profile;
use std::collections::HashMap;

/// A compiled frame pattern: does this (simplified) function name match in full?
pub type FrameMatch<'a> = &'a dyn Fn(&str) -> bool;

impl Profile {
    /// pprof's `RemoveUninteresting`: when the profile names `drop_frames`, compiles
    /// `^(drop_frames)$` (and `keep_frames` likewise) with `compile` and prunes
    /// ([`Profile::prune`]). A pattern that does not compile prunes nothing, as in
    /// pprof (which ignores the error); the error is returned for a warning.
    pub fn remove_uninteresting<M: Fn(&str) -> bool>(
        &mut self,
        compile: &dyn Fn(&str) -> Result<M, String>,
    ) -> Result<(), String> {
        let (drop, keep) = (self.str(self.drop_frames), self.str(self.keep_frames));
        if drop.is_empty() {
            return Ok(());
        }
        let what = |name, re: &str, e| format!("{name} {re:?} is not a valid regex: {e}");
        let d = compile(&format!("^({drop})$")).map_err(|e| what("drop_frames", drop, e))?;
        let k = match keep {
            "" => None,
            k => Some(compile(&format!("^({k})$")).map_err(|e| what("keep_frames", k, e))?),
        };
        self.prune(&d, k.as_ref().map(|k| k as FrameMatch<'_>));
        Ok(())
    }

    /// [`Profile::remove_uninteresting`] with regex-lite (RE2-like, as Go's `regexp`).
    #[cfg(feature = "regex")]
    pub fn remove_uninteresting_frames(&mut self) -> Result<(), String> {
        self.remove_uninteresting(&|re: &str| {
            regex_lite::Regex::new(re)
                .map(|r| move |s: &str| r.is_match(s))
                .map_err(|e| e.to_string())
        })
    }

    /// pprof's `Prune`: in each location, the innermost frame (root side) whose
    /// simplified name matches `drop` and not `keep` is found; it and every frame
    /// inlined below it are removed; then each sample's stack loses everything from
    /// the first such location on its root side, except that frames above the first
    /// uninteresting one (no user frame yet, counting from the root) are never pruned.
    pub fn prune(&mut self, drop: FrameMatch<'_>, keep: Option<FrameMatch<'_>>) {
        let names: HashMap<u64, &str> = self
            .function
            .iter()
            .map(|f| (f.id, self.str(f.name)))
            .collect();
        // Location id → pruned whole (else: beneath it); (location, lines cut).
        let mut marks: HashMap<u64, bool> = HashMap::new();
        let mut cut: Vec<(usize, usize)> = Vec::new();
        for (li, loc) in self.location.iter().enumerate() {
            let found = loc.line.iter().enumerate().rev().find(|(_, l)| {
                let name = names.get(&l.function_id).copied().unwrap_or("");
                if name.is_empty() {
                    return false;
                }
                let f = simplify_func(name);
                drop(f) && !keep.is_some_and(|k| k(f))
            });
            if let Some((i, _)) = found {
                let whole = i == loc.line.len() - 1;
                marks.insert(loc.id, whole);
                if !whole {
                    cut.push((li, i + 1));
                }
            }
        }
        for (li, from) in cut {
            self.location[li].line.drain(..from);
        }
        if marks.is_empty() {
            return;
        }
        for s in &mut self.sample {
            let mut found_user = false;
            for i in (0..s.location_id.len()).rev() {
                let Some(&whole) = marks.get(&s.location_id[i]) else {
                    found_user = true;
                    continue;
                };
                if !found_user {
                    continue;
                }
                s.location_id.drain(..if whole { i + 1 } else { i });
                break;
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
