//! The allocation site: where a stack leaves the allocator's plumbing.
//!
//! A sampled stack starts (innermost) inside the standard library's allocation path:
//! `Vec::with_capacity`, `RawVec::grow_one`, `alloc::alloc::alloc`, … — often as
//! *inlined* frames in the caller's own location, so the device cannot skip them (it
//! only sees return addresses). Go's runtime skips its `mallocgc` frames before it
//! records a stack, and pprof's legacy heap parser drops `malloc`/`operator new` frames
//! the same way; here the converter does it once, so `go tool pprof -top`, `heapsnap
//! top` and the viewer all show the function that allocated (e.g. the firmware's
//! `remember_message`) as the leaf, with the line of the allocating call.
//!
//! Only frames at the leaf end are trimmed, up to the first frame of another crate; a
//! stack made only of library frames is kept whole (never emptied).

/// Crates whose frames at the leaf end of a stack are allocation plumbing.
const LIBRARY_CRATES: &[&str] = &["alloc", "core", "std", "sampler_core", "__rustc"];

/// Is this (demangled, hash-free) function name allocation plumbing of the standard
/// library or of the profiler? `<A as B>::f` belongs to `A`'s crate unless `A` is not a
/// path (`u8`, `[T]`, `str`), then to the trait's crate.
pub fn is_library_frame(function: &str) -> bool {
    if function.starts_with("__rust_")
        || function.starts_with("__rg_")
        || function.starts_with("__rdl_")
    {
        return true;
    }
    let owner = match function.strip_prefix('<') {
        Some(rest) => {
            // `<A as B>::f` or `<A>::f`: A is up to the top-level " as " or '>'.
            let (a, b) = split_impl(rest);
            if a.contains("::") {
                a
            } else {
                b.unwrap_or(a)
            }
        }
        None => function,
    };
    let krate = owner
        .trim_start_matches(['<', '&', '*', '('])
        .split("::")
        .next()
        .unwrap_or("");
    LIBRARY_CRATES.contains(&krate)
}

/// Is this source file part of Rust's standard library (shipped as
/// `…/library/{alloc,core,std}/src/…`, e.g. `/rustc/<hash>/library/alloc/src/raw_vec.rs`)
/// or of sampler-core (`…/sampler-core/src/…` in a checkout, `…/sampler-core-<version>/src/…`
/// from a registry)? Names alone do not tell in builds with `debug = "line-tables-only"`
/// (a common release setting), whose DWARF often names a function without its crate
/// (`grow_one`, `alloc_impl<…>`).
pub fn is_library_file(file: &str) -> bool {
    let (mut p2, mut p1) = ("", "");
    for part in file.split(['/', '\\']) {
        if part == "src" {
            let std_lib = p2 == "library" && matches!(p1, "alloc" | "core" | "std");
            let sampler = p1 == "sampler-core"
                || p1
                    .strip_prefix("sampler-core-")
                    .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()));
            if std_lib || sampler {
                return true;
            }
        }
        (p2, p1) = (p1, part);
    }
    false
}

/// Split `A as B>::f` (the text after the leading `<`) into `A` and `Some(B)` at the
/// nesting level of that `<`; `A>::f` gives `(A, None)`.
fn split_impl(s: &str) -> (&str, Option<&str>) {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'<' => depth += 1,
            b'>' if depth == 0 => return (&s[..i], None),
            b'>' => depth -= 1,
            b' ' if depth == 0 && s[i..].starts_with(" as ") => {
                let rest = &s[i + 4..];
                return (&s[..i], Some(rest));
            }
            _ => {}
        }
    }
    (s, None)
}

/// Where the allocation site starts in a stack given as, per return address
/// (innermost first), its frames' (function name, source file) (innermost inlined
/// frame first): the index of the first address to keep and how many of its innermost
/// frames to drop. An unsymbolized address (no frames) counts as user code.
pub fn allocation_site<'a, I, F>(stack: I) -> (usize, usize)
where
    I: IntoIterator<Item = F>,
    F: IntoIterator<Item = (&'a str, &'a str)>,
{
    allocation_site_of_leads(stack.into_iter().map(|frames| library_lead(frames)))
}

/// For one address, from its frames' (function name, source file): `(frames, leading
/// library frames)` — how many (inlined) frames it has and how many of them, innermost
/// first, are allocation plumbing (by name or by file). Computed once per address, so
/// finding the site of each stack is integer work.
pub fn library_lead<'a>(frames: impl IntoIterator<Item = (&'a str, &'a str)>) -> (usize, usize) {
    let (mut total, mut lead, mut in_lead) = (0, 0, true);
    for (name, file) in frames {
        total += 1;
        if in_lead && (is_library_frame(name) || is_library_file(file)) {
            lead += 1;
        } else {
            in_lead = false;
        }
    }
    (total, lead)
}

/// [`allocation_site`] from each address's [`library_lead`].
pub fn allocation_site_of_leads(stack: impl IntoIterator<Item = (usize, usize)>) -> (usize, usize) {
    for (i, (total, lead)) in stack.into_iter().enumerate() {
        if total == 0 {
            return (i, 0);
        }
        if lead < total {
            return (i, lead);
        }
    }
    // Library frames only: keep the whole stack.
    (0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_plumbing_is_library() {
        for f in [
            "alloc::alloc::alloc",
            "alloc::raw_vec::RawVec<T,A>::grow_one",
            "<alloc::alloc::Global as core::alloc::Allocator>::allocate",
            "<alloc::alloc::Global>::alloc_impl",
            "<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
            "<[T] as alloc::slice::hack::ConvertVec>::to_vec",
            "<alloc::boxed::Box<[T]> as core::convert::From<&[T]>>::from",
            "__rustc::__rust_alloc",
            "__rust_realloc",
            "std::alloc::__default_lib_allocator::__rdl_alloc",
            "<sampler_core::ProfiledAlloc<A,St,S,F,B,L,D> as core::alloc::global::GlobalAlloc>::alloc",
            "core::iter::traits::iterator::Iterator::collect",
        ] {
            assert!(is_library_frame(f), "{f}");
        }
    }

    #[test]
    fn user_code_is_not_library() {
        for f in [
            "heapsnap_firmware::router::remember_message",
            "<heapsnap_firmware::router::Route as core::clone::Clone>::clone",
            "<alloc_rx::Ring>::new",
            "host_workload::leaky_cache_insert",
            "main",
            "leak_small",
            "",
        ] {
            assert!(!is_library_frame(f), "{f}");
        }
    }

    #[test]
    fn library_sources_are_known_by_path() {
        for f in [
            "/rustc/17067e9ac6d7e98f18d4b5d4a3fb5ff8d2d5c5e1/library/alloc/src/raw_vec/mod.rs",
            "/rustc/abc/library/core/src/alloc/layout.rs",
            "C:\\rustc\\abc\\library\\std\\src\\alloc.rs",
            "/home/u/.rustup/toolchains/stable/lib/rustlib/src/rust/library/alloc/src/vec/mod.rs",
            "/work/heapsnap/sampler-core/src/alloc.rs",
            "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/sampler-core-0.1.0/src/profiler.rs",
        ] {
            assert!(is_library_file(f), "{f}");
        }
        for f in [
            "",
            "/work/heapsnap/firmware/src/router.rs",
            "/home/u/library/app/src/main.rs",
            "/home/u/sampler-core-tests/src/lib.rs",
            "/work/alloc/src/lib.rs",
        ] {
            assert!(!is_library_file(f), "{f}");
        }
        // A line-tables-only build: bare names, the files tell.
        let stack = [
            vec![("grow_one", "/rustc/h/library/alloc/src/raw_vec/mod.rs")],
            vec![
                ("push<u8>", "/rustc/h/library/alloc/src/vec/mod.rs"),
                ("remember_message", "/work/fw/src/router.rs"),
            ],
        ];
        assert_eq!(
            allocation_site(stack.iter().map(|l| l.iter().copied())),
            (1, 1)
        );
    }

    #[test]
    fn site_skips_leaf_library_frames_and_lines() {
        // leaf location: alloc inlined into remember_message; then its caller.
        let stack: Vec<Vec<&str>> = vec![
            vec!["alloc::raw_vec::RawVecInner<A>::finish_grow"],
            vec!["alloc::raw_vec::RawVec<T,A>::grow_one"],
            vec![
                "alloc::vec::Vec<T,A>::push",
                "heapsnap_firmware::router::remember_message",
            ],
            vec!["heapsnap_firmware::router::route_message"],
        ];
        assert_eq!(
            allocation_site(stack.iter().map(|l| l.iter().map(|&n| (n, "")))),
            (2, 1)
        );
        let direct: Vec<Vec<&str>> = vec![vec!["leak_small"], vec!["main"]];
        assert_eq!(
            allocation_site(direct.iter().map(|l| l.iter().map(|&n| (n, "")))),
            (0, 0)
        );
        let unsymbolized: Vec<Vec<&str>> = vec![vec!["alloc::alloc::alloc"], vec![], vec!["main"]];
        assert_eq!(
            allocation_site(unsymbolized.iter().map(|l| l.iter().map(|&n| (n, "")))),
            (1, 0)
        );
        let library_only: Vec<Vec<&str>> =
            vec![vec!["alloc::alloc::alloc"], vec!["std::rt::lang_start"]];
        assert_eq!(
            allocation_site(library_only.iter().map(|l| l.iter().map(|&n| (n, "")))),
            (0, 0)
        );
    }
}
