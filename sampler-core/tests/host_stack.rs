//! Host stack capture, end to end: a known chain of `#[inline(never)]` functions
//! records a sample, the stored return addresses are mapped back to file addresses via
//! this process's mappings (as the host CLI does for PIE programs) and symbolized with
//! `addr2line` from this test binary's own DWARF.
#![cfg(all(feature = "std", target_os = "linux"))]

use std::hint::black_box;

use object::{Object, ObjectSegment};
use sampler_core::decoded::Mapping;
use sampler_core::{mappings, HostStack, Profiler, Recorded, StackSource};

type Prof = Profiler<64, 4096, 64, 64, 32>;

#[inline(never)]
fn chain_outer_alpha(p: &Prof, src: &dyn Fn(&Prof) -> Recorded) -> Recorded {
    black_box(chain_middle_beta(p, src))
}

#[inline(never)]
fn chain_middle_beta(p: &Prof, src: &dyn Fn(&Prof) -> Recorded) -> Recorded {
    black_box(chain_inner_gamma(p, src))
}

#[inline(never)]
fn chain_inner_gamma(p: &Prof, src: &dyn Fn(&Prof) -> Recorded) -> Recorded {
    black_box(src(p))
}

/// Runtime address → the ELF virtual address `addr2line` wants: through the mapping
/// (file offset) and then the PT_LOAD segment that holds that offset.
fn to_svma(maps: &[Mapping], file: &object::File<'_>, addr: u64) -> Option<u64> {
    let m = maps
        .iter()
        .find(|m| m.start <= addr && addr < m.end && m.name == maps[0].name)?;
    let off = addr - m.start + m.offset;
    file.segments().find_map(|s| {
        let (fo, fl) = s.file_range();
        (fo <= off && off < fo + fl).then(|| s.address() + (off - fo))
    })
}

/// Names of the physical function holding each frame (the outermost of its inline
/// chain), symbolizing `ret - 1` as a host does for return addresses.
fn symbolize(frames: &[u64]) -> Vec<String> {
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let data = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let maps = mappings::current().unwrap();
    let loader = addr2line::Loader::new(&exe).unwrap();
    frames
        .iter()
        .map(|&ret| {
            let Some(svma) = to_svma(&maps, &file, ret - 1) else {
                return match maps.iter().find(|m| m.start < ret && ret <= m.end) {
                    Some(m) => format!("<in {}>", m.name),
                    None => format!("<unmapped {ret:#x}>"),
                };
            };
            let mut it = loader.find_frames(svma).unwrap();
            let mut last = None;
            while let Some(f) = it.next().unwrap() {
                if let Some(func) = f.function {
                    last = Some(func.demangle().unwrap().into_owned());
                }
            }
            last.unwrap_or_else(|| format!("<no dwarf {svma:#x}>"))
        })
        .collect()
}

fn short(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

fn captured_chain(src: &dyn Fn(&Prof) -> Recorded) -> Vec<String> {
    let prof = Prof::new(1, 1);
    assert_eq!(chain_outer_alpha(&prof, src), Recorded::Sampled);
    let snap = sampler_core::snapshot::decode(&prof.snapshot_vec(&[], false).unwrap()).unwrap();
    assert_eq!(snap.stacks.len(), 1);
    symbolize(&snap.stacks[0].frames)
}

#[test]
fn the_unwinder_source_yields_the_call_chain_in_order_starting_at_the_caller() {
    let names = captured_chain(&|p| p.record_alloc(0x1000 as *const u8, 8, &HostStack));
    let got: Vec<&str> = names.iter().map(|n| short(n)).collect();
    assert!(got.len() >= 4, "{names:?}");
    assert_eq!(
        &got[..3],
        &[
            "chain_inner_gamma",
            "chain_middle_beta",
            "chain_outer_alpha"
        ],
        "full: {names:?}"
    );
    // The closure that called record_alloc is the caller: chain_inner_gamma calls it.
    assert!(
        !names.iter().any(|n| n.contains("sampler_core::profiler")),
        "profiler frames leaked: {names:?}"
    );
}

#[test]
fn the_allocator_wrapper_records_its_caller_first_not_itself() {
    use std::alloc::{GlobalAlloc, Layout, System};
    static WRAPPED: sampler_core::ProfiledAlloc<System, HostStack, 64, 4096, 64, 64, 32> =
        sampler_core::ProfiledAlloc::new(System, HostStack, 1, 1);
    let l = Layout::from_size_align(24, 8).unwrap();
    let prof = Prof::new(1, 1); // unused by this source: the wrapper has its own profiler
    let ptr = std::cell::Cell::new(std::ptr::null_mut());
    chain_outer_alpha(&prof, &|_| {
        ptr.set(unsafe { WRAPPED.alloc(l) });
        Recorded::Sampled
    });
    unsafe { WRAPPED.dealloc(ptr.get(), l) };
    let snap =
        sampler_core::snapshot::decode(&WRAPPED.profiler().snapshot_vec(&[], false).unwrap())
            .unwrap();
    assert_eq!(snap.stacks.len(), 1);
    let names = symbolize(&snap.stacks[0].frames);
    let got: Vec<&str> = names.iter().map(|n| short(n)).collect();
    // The closure is the allocator's caller; then the chain, in order.
    let i = got
        .iter()
        .position(|n| *n == "chain_inner_gamma")
        .unwrap_or_else(|| panic!("{names:?}"));
    assert_eq!(
        &got[i..i + 3],
        &[
            "chain_inner_gamma",
            "chain_middle_beta",
            "chain_outer_alpha"
        ]
    );
    assert!(
        i <= 1,
        "only the calling closure may precede the chain: {names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("sampler_core::")),
        "profiler frames leaked: {names:?}"
    );
}

#[test]
fn a_caller_supplied_slice_is_stored_verbatim() {
    let frames = [0xAAAAusize, 0xBBBB, 0xCCCC];
    let prof = Prof::new(1, 1);
    prof.record_alloc(0x10 as *const u8, 8, &frames[..]);
    let snap = sampler_core::snapshot::decode(&prof.snapshot_vec(&[], false).unwrap()).unwrap();
    assert_eq!(snap.stacks[0].frames, vec![0xAAAA, 0xBBBB, 0xCCCC]);
}

/// The frame-pointer walker on this host: the test binary is not necessarily built
/// with frame pointers, so only what holds regardless is asserted: the walk stays in
/// the thread's stack range and returns, and every frame it does return symbolizes to
/// a function of a file mapped into this process (a frame-pointer build gives the full
/// chain; the Thumb/RISC-V register reads are compiled by the device checks).
#[test]
fn the_frame_pointer_walker_is_bounded_by_the_thread_stack() {
    let src = sampler_core::FramePointerStack::current_thread();
    let mut out = [0usize; 64];
    let c = src.capture(0, &mut out);
    assert!(c.len <= 64);
    let names = symbolize(&out[..c.len].iter().map(|&a| a as u64).collect::<Vec<_>>());
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("<unmapped") && !n.starts_with("<no dwarf")),
        "{names:?}"
    );
    eprintln!("frame-pointer walk from the test: {names:?}");
}
