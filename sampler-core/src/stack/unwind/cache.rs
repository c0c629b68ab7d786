//! The cached x86_64 walk: per-PC unwind rules evaluated once from `.eh_frame`, then
//! read from a fixed lock-free table.
//!
//! A rule is what the DWARF row at a PC says about the three registers the walk needs:
//! the CFA is rsp or rbp plus an offset, the return address is at a fixed offset from
//! the CFA (or undefined: the outermost frame), rbp is unchanged or saved at a fixed
//! offset from the CFA; the caller's rsp is the CFA. Rows that say anything else (a
//! DWARF expression, another CFA register, a rule for rsp, a signal trampoline) are
//! cached as "fall back", and the capture is redone by `_Unwind_Backtrace`. So is a PC
//! for which libgcc finds no FDE, where it tries its own
//! fallbacks (signal frames) before it calls the stack ended.
//!
//! A miss asks libgcc where the PC's FDE is (`_Unwind_Find_FDE`: the lookup its own
//! `_Unwind_Backtrace` does for every frame, lock-free through glibc's
//! `_dl_find_object` since 2.35) and `gimli` evaluates it with its context on the stack:
//! nothing allocates, and no lock is taken that the uncached walk did not take too.
//! A hit takes none at all: the walk never calls into the loader. The flip side: the
//! rules stay cached for the life of the process, so a program that unloads a library
//! (`dlclose`) and may map other code at its addresses must call
//! [`HostStack::forget_rules`](super::HostStack::forget_rules) after it. Whatever a rule
//! says, the walk only reads words of the current thread's stack.

use core::ffi::c_void;
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

use gimli::{
    BaseAddresses, CfaRule, EhFrame, NativeEndian, ReaderOffset, Register, RegisterRule,
    UnwindContext, UnwindContextStorage, UnwindSection, UnwindTableRow, X86_64,
};

use super::Frames;
use crate::stack::Captured;

/// What the walk does at one PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Not of the simple form, or no unwind info: `_Unwind_Backtrace` does the capture.
    Fallback,
    /// CFA = (rbp if `cfa_rbp` else rsp) + `cfa_off`; the return address is at
    /// CFA + 8 × `ra` (`None`: undefined, the outermost frame); rbp is at CFA + 8 ×
    /// `rbp` (`None`: unchanged).
    Frame {
        cfa_rbp: bool,
        cfa_off: i32,
        ra: Option<i8>,
        rbp: Option<i8>,
    },
}

const EPOCH_BITS: u32 = 12;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
const IS_FRAME: u64 = 1 << 48;
const CFA_RBP: u64 = 1 << 49;
const RA_SAVED: u64 = 1 << 50;
const RBP_SAVED: u64 = 1 << 51;

impl Rule {
    /// One word: the rule and the loader epoch it was computed in.
    fn pack(self, epoch: u64) -> u64 {
        let tag = (epoch & EPOCH_MASK) << (64 - EPOCH_BITS);
        match self {
            Rule::Fallback => tag,
            Rule::Frame {
                cfa_rbp,
                cfa_off,
                ra,
                rbp,
            } => {
                let mut w = tag | IS_FRAME | u64::from(cfa_off as u32);
                if cfa_rbp {
                    w |= CFA_RBP;
                }
                if let Some(r) = ra {
                    w |= RA_SAVED | (u64::from(r as u8) << 32);
                }
                if let Some(b) = rbp {
                    w |= RBP_SAVED | (u64::from(b as u8) << 40);
                }
                w
            }
        }
    }

    /// The rule in `w` if it was computed in `epoch`.
    fn unpack(w: u64, epoch: u64) -> Option<Rule> {
        if w >> (64 - EPOCH_BITS) != epoch & EPOCH_MASK {
            return None;
        }
        if w & IS_FRAME == 0 {
            return Some(Rule::Fallback);
        }
        Some(Rule::Frame {
            cfa_rbp: w & CFA_RBP != 0,
            cfa_off: w as u32 as i32,
            ra: (w & RA_SAVED != 0).then_some((w >> 32) as u8 as i8),
            rbp: (w & RBP_SAVED != 0).then_some((w >> 40) as u8 as i8),
        })
    }
}

/// One entry, guarded by its own sequence number (odd while written). Writers only
/// try the lock and give up when it is taken (the entry is an optimisation), readers
/// retry nothing: a torn read is a miss. No one ever waits.
struct Slot {
    seq: AtomicU32,
    pc: AtomicU64,
    rule: AtomicU64,
}

const WAYS: usize = 4;
const SETS: usize = 1024;

/// `SETS` sets of `WAYS` entries (4096 rules, 96 KiB), set picked by a hash of the PC.
struct Table {
    slots: [Slot; SETS * WAYS],
    /// Rotates the way a full set evicts.
    victim: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    seq: AtomicU32::new(0),
    pc: AtomicU64::new(0),
    rule: AtomicU64::new(0),
};

static TABLE: Table = Table {
    slots: [EMPTY; SETS * WAYS],
    victim: AtomicU32::new(0),
};

/// Bumped by [`forget`]: rules tagged with an older epoch are misses.
static EPOCH: AtomicU64 = AtomicU64::new(0);

fn set_of(pc: usize) -> &'static [Slot] {
    let h = (pc as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    let set = (h as usize) % SETS;
    TABLE
        .slots
        .get(set * WAYS..set * WAYS + WAYS)
        .unwrap_or(&[])
}

impl Slot {
    fn read(&self, pc: usize, epoch: u64) -> Option<Rule> {
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 != 0 {
            return None;
        }
        let k = self.pc.load(Ordering::Relaxed);
        let w = self.rule.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != s1 || k != pc as u64 {
            return None;
        }
        Rule::unpack(w, epoch)
    }

    /// Key and word for this slot, if no one else is writing it.
    fn write(&self, pc: u64, w: u64) {
        let s = self.seq.load(Ordering::Relaxed);
        if s & 1 != 0
            || self
                .seq
                .compare_exchange(s, s.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        fence(Ordering::Release);
        self.pc.store(pc, Ordering::Relaxed);
        self.rule.store(w, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Holds a rule of `epoch`?
    fn current(&self, epoch: u64) -> bool {
        self.pc.load(Ordering::Relaxed) != 0
            && self.rule.load(Ordering::Relaxed) >> (64 - EPOCH_BITS) == epoch & EPOCH_MASK
    }
}

fn cached(pc: usize, epoch: u64) -> Option<Rule> {
    set_of(pc).iter().find_map(|s| s.read(pc, epoch))
}

fn remember(pc: usize, rule: Rule, epoch: u64) {
    let set = set_of(pc);
    let slot = match set.iter().find(|s| !s.current(epoch)) {
        Some(free) => free,
        None => {
            let v = TABLE.victim.fetch_add(1, Ordering::Relaxed) as usize;
            match set.get(v % WAYS) {
                Some(s) => s,
                None => return,
            }
        }
    };
    slot.write(pc as u64, rule.pack(epoch));
}

#[cfg(test)]
std::thread_local! {
    /// Rules this thread had to evaluate (tests: the second walk must find them all).
    static MISSES: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Misses of the calling thread so far (tests only).
#[cfg(test)]
pub(super) fn misses() -> u64 {
    MISSES.with(core::cell::Cell::get)
}

fn rule_at(pc: usize, epoch: u64) -> Rule {
    if let Some(r) = cached(pc, epoch) {
        return r;
    }
    #[cfg(test)]
    MISSES.with(|m| m.set(m.get() + 1));
    let r = evaluate(pc);
    remember(pc, r, epoch);
    r
}

/// Drops every cached rule: later walks evaluate them again.
pub(super) fn forget() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
    // Epoch tags already hide older rules; emptying the table keeps a rule of an epoch
    // 4096 calls ago from looking current again.
    for s in TABLE.slots.iter() {
        s.write(0, 0);
    }
}

/// gimli's unwind context with its storage inline (on the miss path's stack, about
/// 4 KiB): room for 24 register rules and 4 remembered states, more than x86_64 code
/// uses; a row needing more is an error, hence a fallback.
struct OnStack;

impl<T: ReaderOffset> UnwindContextStorage<T> for OnStack {
    type Rules = [(Register, RegisterRule<T>); 24];
    type Stack = [UnwindTableRow<T, Self>; 4];
}

/// libgcc's `struct dwarf_eh_bases`.
#[repr(C)]
struct DwarfEhBases {
    tbase: usize,
    dbase: usize,
    func: usize,
}

extern "C" {
    /// libgcc / LLVM libunwind: the FDE covering `pc` (null if none), with the text
    /// and data bases its pointer encodings may need.
    fn _Unwind_Find_FDE(pc: *mut c_void, bases: *mut DwarfEhBases) -> *const u8;
}

/// The rule at `pc`, from the FDE the platform unwinder finds for it.
#[inline(never)]
fn evaluate(pc: usize) -> Rule {
    let mut eh = DwarfEhBases {
        tbase: 0,
        dbase: 0,
        func: 0,
    };
    // SAFETY: `eh` is written by the call; `pc` is only looked up.
    let fde = unsafe { _Unwind_Find_FDE(pc as *mut c_void, &mut eh) };
    if fde.is_null() {
        return Rule::Fallback;
    }
    // SAFETY: libgcc returned a pointer to a complete FDE of a loaded object's
    // `.eh_frame`, whose CIE lies before it in the same section; the object holds a
    // frame of this thread's stack, so it stays mapped.
    unsafe { in_fde(fde, &eh, pc) }.unwrap_or(Rule::Fallback)
}

/// # Safety
/// `fde` points at an FDE record of a mapped `.eh_frame`, as `_Unwind_Find_FDE` gives.
unsafe fn in_fde(fde: *const u8, eh: &DwarfEhBases, pc: usize) -> Option<Rule> {
    let fde_addr = fde as usize;
    // SAFETY: the FDE's length and CIE pointer words (caller).
    let (len, cie_ptr) = unsafe {
        (
            core::ptr::read_unaligned(fde.cast::<u32>()),
            core::ptr::read_unaligned(fde.add(4).cast::<u32>()),
        )
    };
    // 64-bit DWARF records and CIEs are not what libgcc hands out for a PC.
    if len == 0 || len == u32::MAX || cie_ptr == 0 {
        return None;
    }
    let cie_addr = (fde_addr + 4).checked_sub(cie_ptr as usize)?;
    let end = (fde_addr + 4).checked_add(len as usize)?;
    if cie_addr > fde_addr {
        return None;
    }
    // The section as gimli sees it: from the CIE to the end of the FDE.
    // SAFETY: [cie_addr, end) is inside one `.eh_frame` (caller).
    let bytes = unsafe { core::slice::from_raw_parts(cie_addr as *const u8, end - cie_addr) };
    let eh_frame = EhFrame::new(bytes, NativeEndian);
    let bases = BaseAddresses::default()
        .set_eh_frame(cie_addr as u64)
        .set_text(eh.tbase as u64)
        .set_got(eh.dbase as u64);
    let fde = eh_frame
        .fde_from_offset(
            &bases,
            gimli::EhFrameOffset(fde_addr - cie_addr),
            EhFrame::cie_from_offset,
        )
        .ok()?;
    if !fde.contains(pc as u64) || fde.is_signal_trampoline() {
        return None;
    }
    let mut ctx = UnwindContext::<usize, OnStack>::new_in();
    let row = fde
        .unwind_info_for_address(&eh_frame, &bases, &mut ctx, pc as u64)
        .ok()?;
    simple(row)
}

/// The row as a [`Rule::Frame`], if it has that form.
fn simple<S: UnwindContextStorage<usize>>(row: &UnwindTableRow<usize, S>) -> Option<Rule> {
    fn words(off: i64) -> Option<i8> {
        (off % 8 == 0).then_some(())?;
        i8::try_from(off / 8).ok()
    }
    let (cfa_rbp, cfa_off) = match *row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => (
            match register {
                X86_64::RSP => false,
                X86_64::RBP => true,
                _ => return None,
            },
            i32::try_from(offset).ok()?,
        ),
        CfaRule::Expression(_) => return None,
    };
    let ra = match row.register(X86_64::RA)? {
        RegisterRule::Offset(o) => Some(words(o)?),
        RegisterRule::Undefined => None,
        _ => return None,
    };
    let rbp = match row.register(X86_64::RBP) {
        None | Some(RegisterRule::SameValue) => None,
        Some(RegisterRule::Offset(o)) => Some(words(o)?),
        Some(_) => return None,
    };
    if row.register(X86_64::RSP).is_some() {
        return None;
    }
    Some(Rule::Frame {
        cfa_rbp,
        cfa_off,
        ra,
        rbp,
    })
}

/// Largest frame the walk believes (a CFA further up than this is a wrong rule or a
/// wrong register: `_Unwind_Backtrace` decides).
const MAX_FRAME: usize = 1 << 28;
/// More frames than any stack the buffer could be filled from.
const MAX_WALK: usize = 1 << 16;

/// Walk the calling thread's stack through cached rules, reporting every frame to
/// `frames` exactly as `_Unwind_Backtrace` would. `None`: some frame needs the
/// platform unwinder (the caller redoes the whole capture with it).
#[inline(never)]
pub(super) fn walk(frames: &mut Frames<'_>) -> Option<Captured> {
    let epoch = EPOCH.load(Ordering::Relaxed);
    // Where a rule may read (a wrong rule can then give a wrong frame, never a fault).
    let (stack_lo, stack_hi) = crate::stack::fp::thread_stack().unwrap_or((0, usize::MAX));
    let (mut ip, mut sp, mut bp): (usize, usize, usize);
    // SAFETY: reads three registers; the rule at `ip` (the instruction after the
    // `lea`) describes this frame with exactly this rsp and rbp.
    unsafe {
        core::arch::asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags),
        );
    }
    // The innermost PC is the current instruction; every other is a return address,
    // looked up one byte back (inside the call, as libgcc does).
    let mut innermost = true;
    for _ in 0..MAX_WALK {
        if ip == 0 {
            // libgcc reports the frame past an undefined return address, then stops.
            frames.frame(0, sp);
            return Some(frames.captured());
        }
        let rule = rule_at(if innermost { ip } else { ip - 1 }, epoch);
        let Rule::Frame {
            cfa_rbp,
            cfa_off,
            ra,
            rbp,
        } = rule
        else {
            return None;
        };
        if !frames.frame(ip, sp) {
            return Some(frames.captured());
        }
        let cfa = (if cfa_rbp { bp } else { sp }).checked_add_signed(cfa_off as isize)?;
        if cfa <= sp || cfa - sp > MAX_FRAME {
            return None;
        }
        let read = |words: i8| -> Option<usize> {
            let at = cfa.checked_add_signed(isize::from(words) * 8)?;
            // Saved registers live in the frame being unwound, between its stack
            // pointer and its CFA.
            if at < sp || at + 8 > cfa || at < stack_lo || at + 8 > stack_hi {
                return None;
            }
            // SAFETY: `at` is inside the current thread's stack (when its bounds are
            // known), in the frame between rsp and the CFA of a running function.
            Some(unsafe { core::ptr::read_volatile(at as *const usize) })
        };
        let next_ip = match ra {
            Some(w) => read(w)?,
            None => 0,
        };
        if let Some(w) = rbp {
            bp = read(w)?;
        }
        ip = next_ip;
        sp = cfa;
        innermost = false;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_survive_packing_and_expire_with_their_epoch() {
        let rules = [
            Rule::Fallback,
            Rule::Frame {
                cfa_rbp: false,
                cfa_off: 8,
                ra: Some(-1),
                rbp: None,
            },
            Rule::Frame {
                cfa_rbp: true,
                cfa_off: 16,
                ra: Some(-1),
                rbp: Some(-2),
            },
            Rule::Frame {
                cfa_rbp: false,
                cfa_off: -4096,
                ra: None,
                rbp: Some(-128),
            },
            Rule::Frame {
                cfa_rbp: false,
                cfa_off: i32::MAX,
                ra: Some(127),
                rbp: Some(127),
            },
        ];
        for r in rules {
            assert_eq!(Rule::unpack(r.pack(7), 7), Some(r));
            assert_eq!(Rule::unpack(r.pack(7), 8), None);
        }
    }
}
