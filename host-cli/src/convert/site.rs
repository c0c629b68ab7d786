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
/// (innermost first), its function names (innermost inlined frame first): the index
/// of the first address to keep and how many of its innermost frames to drop.
/// An unsymbolized address (no names) counts as user code.
pub fn allocation_site<'a, I, F>(stack: I) -> (usize, usize)
where
    I: IntoIterator<Item = F>,
    F: IntoIterator<Item = &'a str>,
{
    allocation_site_of_leads(stack.into_iter().map(|names| library_lead(names)))
}

/// For one address: `(frames, leading library frames)` — how many (inlined) frames it
/// has and how many of them, innermost first, are allocation plumbing. Computed once
/// per address, so finding the site of each stack is integer work.
pub fn library_lead<'a>(names: impl IntoIterator<Item = &'a str>) -> (usize, usize) {
    let (mut total, mut lead, mut in_lead) = (0, 0, true);
    for name in names {
        total += 1;
        if in_lead && is_library_frame(name) {
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
            allocation_site(stack.iter().map(|l| l.iter().copied())),
            (2, 1)
        );
        let direct: Vec<Vec<&str>> = vec![vec!["leak_small"], vec!["main"]];
        assert_eq!(
            allocation_site(direct.iter().map(|l| l.iter().copied())),
            (0, 0)
        );
        let unsymbolized: Vec<Vec<&str>> = vec![vec!["alloc::alloc::alloc"], vec![], vec!["main"]];
        assert_eq!(
            allocation_site(unsymbolized.iter().map(|l| l.iter().copied())),
            (1, 0)
        );
        let library_only: Vec<Vec<&str>> =
            vec![vec!["alloc::alloc::alloc"], vec!["std::rt::lang_start"]];
        assert_eq!(
            allocation_site(library_only.iter().map(|l| l.iter().copied())),
            (0, 0)
        );
    }
}
