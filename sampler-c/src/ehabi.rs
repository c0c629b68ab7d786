//! Stacks of GCC-built Thumb code from the ARM EHABI unwind tables (`.ARM.exidx`,
//! `.ARM.extab`), which `-funwind-tables` makes GCC emit for C.
//!
//! Why not frame pointers: GCC's Thumb frame pointer (`r7` with
//! `-fno-omit-frame-pointer`) points at the *bottom* of the frame, below the locals
//! (`push {r7, lr}; sub sp, #N; add r7, sp, #0`), so `[r7]` is a local, not the saved
//! `r7`: the chain cannot be walked without each function's frame size, which is what
//! the unwind tables give. The tables cost 8 bytes of flash per function (plus a word
//! in `.ARM.extab` for the few with long descriptions) and need no frame pointer, so
//! the code keeps `-Os`'s size.
//!
//! The walk starts from the registers at the call into the profiler (the entry points
//! push them: see `trampoline!` in `lib.rs`) and interprets each frame's unwind
//! instructions on a virtual register set. It is bounded like the frame-pointer walker:
//! every stack read lies in the given range and is aligned, the stack pointer must grow,
//! at most `out.len()` frames are taken, and anything the tables do not describe
//! (`EXIDX_CANTUNWIND`, which the linker puts on code without tables, a personality
//! routine, an instruction this decoder refuses) ends the stack there.
//!
//! Generic over memory reads, so the decoder is tested on the host against synthetic
//! tables and stacks (`tests` below); on the device it reads memory directly.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use sampler_core::Captured;

/// The registers at a call into the profiler: where the walk starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Start {
    /// `r4` … `r11` of the caller (callee-saved: unchanged by the call).
    pub r4_r11: [u32; 8],
    /// The caller's stack pointer at the call.
    pub sp: u32,
    /// The return address into the caller (`lr` at the call, Thumb bit set or not).
    pub lr: u32,
}

/// Where the index table is: `[start, end)`, 8-byte entries sorted by function address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exidx {
    pub start: u32,
    pub end: u32,
}

/// `EXIDX_CANTUNWIND`: this function's frame cannot be unwound.
const CANTUNWIND: u32 = 1;
/// Most `.ARM.extab` words after the header a description may take (GCC's C code uses
/// none; longer ones end the stack).
const MAX_EXTRA_WORDS: usize = 8;

/// A prel31 offset (bits 0..31, sign-extended) from `place`.
fn prel31(place: u32, word: u32) -> u32 {
    let off = ((word << 1) as i32) >> 1;
    place.wrapping_add(off as u32)
}

/// The unwind instructions of one function, as bytes in execution order.
struct Insns {
    bytes: [u8; 3 + 4 * MAX_EXTRA_WORDS],
    len: usize,
}

impl Insns {
    fn new() -> Self {
        Insns {
            bytes: [0; 3 + 4 * MAX_EXTRA_WORDS],
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

/// The table entry covering `addr`: the last one whose function starts at or below it.
fn lookup(tab: Exidx, addr: u32, read: &impl Fn(u32) -> Option<u32>) -> Option<(u32, u32)> {
    if tab.end <= tab.start
        || !(tab.end - tab.start).is_multiple_of(8)
        || !tab.start.is_multiple_of(4)
    {
        return None;
    }
    let n = (tab.end - tab.start) / 8;
    let entry = |i: u32| -> Option<(u32, u32)> {
        let at = tab.start + 8 * i;
        Some((prel31(at, read(at)?), read(at + 4)?))
    };
    // Binary search for the last entry with fn <= addr.
    let (mut lo, mut hi) = (0u32, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if entry(mid)?.0 <= addr {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let i = lo.checked_sub(1)?;
    let (_, data) = entry(i)?;
    Some((tab.start + 8 * i + 4, data))
}

/// The instructions for the entry whose second word is `data`, at address `place`.
/// Into `out`, one buffer for the whole walk (returned by value, each frame's copy and
/// clearing cost 0.1 KB of flash).
fn instructions(
    place: u32,
    data: u32,
    read: &impl Fn(u32) -> Option<u32>,
    out: &mut Insns,
) -> Option<()> {
    out.len = 0;
    if data == CANTUNWIND {
        return None;
    }
    let (header, at) = if data & 0x8000_0000 != 0 {
        (data, None)
    } else {
        let at = prel31(place, data);
        if !at.is_multiple_of(4) {
            return None;
        }
        (read(at)?, Some(at))
    };
    // Bit 31 clear in .ARM.extab: a personality routine (C++ exceptions), not ours.
    if header & 0x8000_0000 == 0 {
        return None;
    }
    let [_, b2, b1, b0] = header.to_be_bytes();
    match (header >> 24) & 0x0f {
        // Su16: three instruction bytes in the word.
        0 => [b2, b1, b0].into_iter().for_each(|b| out.push(b)),
        // Lu16 / Lu32: a count of further words, two bytes here, four in each.
        1 | 2 => {
            let extra = b2 as usize;
            if extra > MAX_EXTRA_WORDS {
                return None;
            }
            out.push(b1);
            out.push(b0);
            let mut w = at?;
            for _ in 0..extra {
                w = w.checked_add(4)?;
                read(w)?.to_be_bytes().into_iter().for_each(|b| out.push(b));
            }
        }
        _ => return None,
    }
    Some(())
}

/// Walk the stack from `start`: return addresses (Thumb bit cleared), innermost first —
/// the same convention as `sampler_core::stack::walk`. Stack reads stay in `[lo, hi)`.
#[inline(never)]
pub fn walk(
    start: &Start,
    tab: Exidx,
    (lo, hi): (u32, u32),
    out: &mut [usize],
    read: impl Fn(u32) -> Option<u32>,
) -> Captured {
    let mut vrs = [0u32; 16];
    for (r, v) in vrs.iter_mut().skip(4).zip(start.r4_r11) {
        *r = v;
    }
    vrs[13] = start.sp;
    vrs[14] = start.lr;
    vrs[15] = start.lr;
    let stack = |a: u32| -> Option<u32> {
        (a >= lo && a.checked_add(4).is_some_and(|e| e <= hi) && a.is_multiple_of(4))
            .then(|| read(a))
            .flatten()
    };
    let mut len = 0;
    let mut insns = Insns::new();
    loop {
        let pc = vrs[15] & !1;
        // 0: the end of the chain; 0xFxxxxxxx: EXC_RETURN (an exception frame).
        if pc == 0 || pc >= 0xF000_0000 {
            break;
        }
        match out.get_mut(len) {
            Some(slot) => {
                *slot = pc as usize;
                len += 1;
            }
            None => {
                return Captured {
                    len,
                    truncated: true,
                }
            }
        }
        // The call instruction ends just before the return address.
        let Some((place, data)) = lookup(tab, pc - 1, &read) else {
            break;
        };
        if instructions(place, data, &read, &mut insns).is_none() {
            break;
        }
        let sp_before = vrs[13];
        if execute(insns.as_slice(), &mut vrs, &stack).is_none() {
            break;
        }
        // Stacks grow down: the caller's frame is above. Equal is a leaf that saved
        // nothing, which cannot be a caller: either way the chain ends.
        if vrs[13] <= sp_before || vrs[13] > hi {
            break;
        }
    }
    Captured {
        len,
        truncated: false,
    }
}

/// Pop the registers in `mask` (bit i = register `first + i`), lowest first; true if
/// `pc` was among them. Out of line: three instructions use it, and inlined it tripled.
#[inline(never)]
fn pop(
    vrs: &mut [u32; 16],
    vsp: &mut u32,
    first: usize,
    mask: u32,
    stack: &dyn Fn(u32) -> Option<u32>,
) -> Option<bool> {
    let mut new_sp = None;
    let mut pc_set = false;
    for i in 0..16usize.saturating_sub(first) {
        if mask & (1 << i) == 0 {
            continue;
        }
        let v = stack(*vsp)?;
        *vsp = vsp.checked_add(4)?;
        let r = first + i;
        if r == 13 {
            new_sp = Some(v);
        } else if let Some(slot) = vrs.get_mut(r) {
            *slot = v;
        }
        pc_set |= r == 15;
    }
    if let Some(sp) = new_sp {
        *vsp = sp;
    }
    Some(pc_set)
}

/// Run one frame's unwind instructions (EHABI §9.3) on `vrs`; afterwards `vrs[15]` is
/// the return address into the caller and `vrs[13]` the caller's stack pointer.
fn execute(insns: &[u8], vrs: &mut [u32; 16], stack: &dyn Fn(u32) -> Option<u32>) -> Option<()> {
    let mut vsp = vrs[13];
    let mut pc_set = false;
    let mut bytes = insns.iter().copied();
    while let Some(b) = bytes.next() {
        match b {
            0x00..=0x3f => vsp = vsp.checked_add((u32::from(b & 0x3f) << 2) + 4)?,
            0x40..=0x7f => vsp = vsp.checked_sub((u32::from(b & 0x3f) << 2) + 4)?,
            0x80..=0x8f => {
                let mask = (u32::from(b & 0x0f) << 8) | u32::from(bytes.next()?);
                if mask == 0 {
                    return None; // "refuse to unwind"
                }
                pc_set |= pop(vrs, &mut vsp, 4, mask, stack)?;
            }
            0x90..=0x9f => {
                let n = usize::from(b & 0x0f);
                if n == 13 || n == 15 {
                    return None;
                }
                vsp = *vrs.get(n)?;
            }
            0xa0..=0xaf => {
                let mut mask = (1u32 << (u32::from(b & 0x07) + 1)) - 1;
                if b & 0x08 != 0 {
                    mask |= 1 << (14 - 4);
                }
                pc_set |= pop(vrs, &mut vsp, 4, mask, stack)?;
            }
            0xb0 => break,
            0xb1 => {
                let mask = u32::from(bytes.next()?);
                if mask == 0 || mask & 0xf0 != 0 {
                    return None;
                }
                pc_set |= pop(vrs, &mut vsp, 0, mask, stack)?;
            }
            0xb2 => {
                let mut v = 0u32;
                let mut shift = 0u32;
                loop {
                    let c = bytes.next()?;
                    v |= u32::from(c & 0x7f).checked_shl(shift)?;
                    if c & 0x80 == 0 {
                        break;
                    }
                    shift += 7;
                    if shift > 28 {
                        return None;
                    }
                }
                vsp = vsp.checked_add(0x204)?.checked_add(v.checked_mul(4)?)?;
            }
            // VFP / iWMMXt registers: not restored (no return addresses there), skipped.
            0xb3 => vsp = vsp.checked_add(8 * (u32::from(bytes.next()? & 0x0f) + 1) + 4)?,
            0xb8..=0xbf => vsp = vsp.checked_add(8 * (u32::from(b & 0x07) + 1) + 4)?,
            0xc0..=0xc5 | 0xd0..=0xd7 => vsp = vsp.checked_add(8 * (u32::from(b & 0x07) + 1))?,
            0xc6 | 0xc8 | 0xc9 => {
                vsp = vsp.checked_add(8 * (u32::from(bytes.next()? & 0x0f) + 1))?
            }
            0xc7 => {
                let mask = bytes.next()?;
                if mask == 0 || mask & 0xf0 != 0 {
                    return None;
                }
                vsp = vsp.checked_add(4 * mask.count_ones())?;
            }
            _ => return None,
        }
    }
    vrs[13] = vsp;
    if !pc_set {
        vrs[15] = vrs[14];
    }
    Some(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A little firmware image: an exidx table at 0x1000 for three functions, an extab
    /// entry, and a stack at 0x2000_0000.
    struct Image {
        mem: HashMap<u32, u32>,
        tab: Exidx,
    }

    const EXIDX: u32 = 0x1000;

    impl Image {
        /// `entries`: (function address, second word or `Extab(words)`).
        fn new(entries: &[(u32, Entry)]) -> Image {
            let mut mem = HashMap::new();
            let mut extab = 0x1800u32;
            for (i, (f, e)) in entries.iter().enumerate() {
                let at = EXIDX + 8 * i as u32;
                mem.insert(at, f.wrapping_sub(at) & 0x7fff_ffff);
                let data = match e {
                    Entry::Word(w) => *w,
                    Entry::Extab(words) => {
                        let place = at + 4;
                        for (k, w) in words.iter().enumerate() {
                            mem.insert(extab + 4 * k as u32, *w);
                        }
                        let off = extab.wrapping_sub(place) & 0x7fff_ffff;
                        extab += 4 * words.len() as u32;
                        off
                    }
                };
                mem.insert(at + 4, data);
            }
            Image {
                mem,
                tab: Exidx {
                    start: EXIDX,
                    end: EXIDX + 8 * entries.len() as u32,
                },
            }
        }

        fn stack(&mut self, sp: u32, words: &[u32]) {
            for (i, w) in words.iter().enumerate() {
                self.mem.insert(sp + 4 * i as u32, *w);
            }
        }

        fn walk(&self, start: &Start, out: &mut [usize]) -> Vec<usize> {
            let c = walk(start, self.tab, (0x2000_0000, 0x2000_1000), out, |a| {
                self.mem.get(&a).copied()
            });
            out[..c.len].to_vec()
        }
    }

    enum Entry {
        Word(u32),
        Extab(Vec<u32>),
    }

    /// Inline (Su16) description: bit 31, personality 0, three instruction bytes.
    fn su16(b: [u8; 3]) -> Entry {
        Entry::Word(0x8000_0000 | u32::from_be_bytes([0, b[0], b[1], b[2]]))
    }

    #[test]
    fn three_frames_as_gcc_describes_them() {
        // leaf @0x100: sub sp, #8 after push {r4, lr}: 0x01 (vsp += 8), 0xa8 (pop r4, r14)
        // mid  @0x200: push {r3, lr}: 0x00 (vsp += 4, r3), 0x84 0x00 (pop r14)
        // main @0x300: push {r7, lr}; frame pointer r7 = sp: 0x97 (vsp = r7),
        //              0x84 0x08 (pop r7, r14)
        let mut img = Image::new(&[
            (0x100, su16([0x01, 0xa8, 0xb0])),
            (0x200, su16([0x00, 0x84, 0x00])),
            (0x300, su16([0x97, 0x84, 0x08])),
            (0x400, Entry::Word(CANTUNWIND)),
        ]);
        let sp = 0x2000_0100;
        // leaf's frame: 8 bytes of locals, r4, lr=0x211 (into mid)
        // mid's frame: r3 slot, lr=0x305 (into main)
        // main's frame at r7: saved r7, lr=0x401 (into the cantunwind reset code)
        img.stack(
            sp,
            &[0, 0, 0xaaaa, 0x211, 0xdead, 0x305, 0x2000_0200, 0x401],
        );
        let start = Start {
            r4_r11: [0, 0, 0, 0x2000_0118, 0, 0, 0, 0],
            sp,
            lr: 0x151,
        };
        let mut out = [0usize; 8];
        assert_eq!(img.walk(&start, &mut out), vec![0x150, 0x210, 0x304, 0x400]);
    }

    #[test]
    fn truncated_when_out_is_full() {
        let mut img = Image::new(&[(0x100, su16([0x84, 0x00, 0xb0]))]);
        // A frame chain that keeps returning into 0x100's function, each one higher.
        img.stack(0x2000_0000, &[0x121, 0x131, 0x141, 0x151]);
        let start = Start {
            sp: 0x2000_0000,
            lr: 0x111,
            ..Start::default()
        };
        let mut out = [0usize; 3];
        let c = walk(&start, img.tab, (0x2000_0000, 0x2000_1000), &mut out, |a| {
            img.mem.get(&a).copied()
        });
        assert_eq!((c.len, c.truncated), (3, true));
        assert_eq!(out, [0x110, 0x120, 0x130]);
    }

    #[test]
    fn long_description_in_extab() {
        // Lu16 with one further word: 0x02 (vsp += 12), 0x00 (vsp += 4) in the header,
        // then 0xa8 (pop r4, r14), 0xb0 (finish) in the next word.
        let mut img = Image::new(&[(0x100, Entry::Extab(vec![0x8101_0200, 0xa8b0_b0b0]))]);
        img.stack(0x2000_0000, &[0, 0, 0, 0, 4, 0x131]);
        let start = Start {
            sp: 0x2000_0000,
            lr: 0x121,
            ..Start::default()
        };
        let mut out = [0usize; 4];
        // The second frame (back in the same function) reads above what the stack
        // holds: unreadable memory ends the walk.
        assert_eq!(img.walk(&start, &mut out), vec![0x120, 0x130]);
    }

    #[test]
    fn reads_never_leave_the_stack_range() {
        // pop {r4, r14} at an sp 4 bytes below the range's end: the second read would be
        // outside (though memory is there), so the walk stops after the first frame.
        let mut img = Image::new(&[(0x100, su16([0xa8, 0xb0, 0xb0]))]);
        img.stack(0x2000_0ffc, &[0, 0x121]);
        let start = Start {
            sp: 0x2000_0ffc,
            lr: 0x111,
            ..Start::default()
        };
        let mut out = [0usize; 4];
        assert_eq!(img.walk(&start, &mut out), vec![0x110]);
    }

    #[test]
    fn no_entry_cantunwind_refuse_and_personality_end_the_stack() {
        let start = Start {
            sp: 0x2000_0000,
            lr: 0x51, // below the first function
            ..Start::default()
        };
        let mut out = [0usize; 4];
        let img = Image::new(&[(0x100, su16([0xa8, 0xb0, 0xb0]))]);
        assert_eq!(img.walk(&start, &mut out), vec![0x50]);
        for e in [
            Entry::Word(CANTUNWIND),
            su16([0x80, 0x00, 0xb0]),           // refuse to unwind
            Entry::Extab(vec![0x0000_1234, 0]), // a personality routine
            su16([0x9d, 0xb0, 0xb0]),           // vsp = sp: reserved
        ] {
            let mut img = Image::new(&[(0x100, e)]);
            img.stack(0x2000_0000, &[0, 0x121]);
            let start = Start {
                sp: 0x2000_0000,
                lr: 0x111,
                ..Start::default()
            };
            assert_eq!(img.walk(&start, &mut out), vec![0x110]);
        }
    }

    #[test]
    fn exception_return_and_zero_end_the_stack() {
        let mut img = Image::new(&[(0x100, su16([0x84, 0x00, 0xb0]))]);
        img.stack(0x2000_0000, &[0xffff_fff9]);
        let start = Start {
            sp: 0x2000_0000,
            lr: 0x111,
            ..Start::default()
        };
        let mut out = [0usize; 4];
        assert_eq!(img.walk(&start, &mut out), vec![0x110]);
    }
}
