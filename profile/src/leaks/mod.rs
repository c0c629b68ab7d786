//! Who holds it: a leak check and reference paths from a RAM image, the object table
//! of a snapshot (its object table, format §2.5) and the program's static data.
//!
//! The model is valgrind memcheck's: memory is scanned conservatively (every aligned
//! word that points into a known object is a reference), starting from *roots* (the
//! program's `.data` and `.bss`, a stack range). An object reached by a chain of
//! pointers to its first byte is *still reachable*; one reached only through a chain
//! with an interior pointer is *possibly lost*; the others are lost, *definitely* for
//! the first of each group of unreachable objects that point to each other (valgrind's
//! clique leader) and *indirectly* for the rest. Pure computation over bytes: the CLI
//! reads the files and the ELF (`heapsnap-symbolize` finds the roots).

mod report;
mod types;

pub use crate::profile::{is_retention_comment, RETENTION_COMMENT};
pub use report::{partial_answer_warnings, retention_profile, summary};
pub use types::{index, Field, Kind, Type, TypeId, Types, Variant, Variants};

use std::collections::VecDeque;
use std::fmt;

/// One RAM image: raw bytes as a debugger or the firmware dumped them, and the
/// address of their first byte.
#[derive(Clone, Debug)]
pub struct Image {
    /// Where it came from (file name), for messages.
    pub name: String,
    /// Address of `bytes[0]`.
    pub addr: u64,
    pub bytes: Vec<u8>,
}

impl Image {
    fn end(&self) -> u64 {
        self.addr.saturating_add(self.bytes.len() as u64)
    }
}

/// A root range: memory whose words keep objects alive (a static, the rest of a
/// writable section, a stack).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// What it is, as a reader knows it (`app::ROUTER`, `.bss+0x40`, `stack`).
    pub name: String,
    pub start: u64,
    pub size: u64,
}

impl Root {
    fn end(&self) -> u64 {
        self.start.saturating_add(self.size)
    }
}

/// A live heap object from the snapshot's object table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Object {
    pub addr: u64,
    pub size: u64,
    /// The snapshot stack that allocated it.
    pub stack_id: u32,
}

impl Object {
    fn end(&self) -> u64 {
        self.addr.saturating_add(self.size)
    }
}

/// valgrind's leak categories, in the order its summary prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// Unreachable, and no other unreachable object points to it.
    DefinitelyLost,
    /// Unreachable, but pointed to by a definitely (or indirectly) lost object.
    IndirectlyLost,
    /// Reached only through a chain that holds an interior pointer.
    PossiblyLost,
    /// Reached from a root by pointers to objects' first bytes.
    StillReachable,
}

impl Category {
    /// All four, in summary order.
    pub const ALL: [Category; 4] = [
        Category::DefinitelyLost,
        Category::IndirectlyLost,
        Category::PossiblyLost,
        Category::StillReachable,
    ];

    /// valgrind's words for it.
    pub fn name(self) -> &'static str {
        match self {
            Category::DefinitelyLost => "definitely lost",
            Category::IndirectlyLost => "indirectly lost",
            Category::PossiblyLost => "possibly lost",
            Category::StillReachable => "still reachable",
        }
    }

    /// Does it fail a leak check (valgrind's `--errors-for-leak-kinds=definite,indirect`)?
    pub fn is_leak(self) -> bool {
        matches!(self, Category::DefinitelyLost | Category::IndirectlyLost)
    }
}

/// Where the reference that reached an object was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// In root `roots[i]`.
    Root(usize),
    /// In object `objects[i]`.
    Object(usize),
}

/// One reference: the word at `offset` bytes into its holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub holder: Holder,
    pub offset: u64,
}

/// Why a leak check cannot be done with these inputs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeakError {
    /// Two images claim the same address.
    #[error("RAM images {a} ({a_start:#x}..{a_end:#x}) and {b} ({b_start:#x}..{b_end:#x}) overlap: every address must come from one image (check the @ADDR of each --ram)")]
    ImagesOverlap {
        a: String,
        a_start: u64,
        a_end: u64,
        b: String,
        b_start: u64,
        b_end: u64,
    },
    /// An image runs past the end of the address space.
    #[error("RAM image {name} at {addr:#x} ({len} bytes) runs past the end of the {bits}-bit address space")]
    ImageTooLong {
        name: String,
        addr: u64,
        len: u64,
        bits: u32,
    },
    /// No object table: a snapshot written without it.
    #[error("the snapshot has no object table (format version {version}): a leak check needs the live objects' addresses; write the snapshot with `write_snapshot_with_objects` at the moment the RAM image is taken")]
    NoObjectTable { version: u16 },
    /// Two objects of the table overlap.
    #[error("live objects {a:#x} ({a_size} B) and {b:#x} ({b_size} B) overlap: the snapshot's object table is not a heap's (corrupt, or not from this allocator)")]
    ObjectsOverlap {
        a: u64,
        a_size: u64,
        b: u64,
        b_size: u64,
    },
    /// An object is not (wholly) in the images.
    #[error(
        "live object {addr:#x}..{end:#x} ({size} B) is not in the RAM images ({images}){hint}"
    )]
    ObjectNotInImages {
        addr: u64,
        end: u64,
        size: u64,
        images: String,
        hint: String,
    },
    /// A root range is not (wholly) in the images.
    #[error("{name} ({start:#x}..{end:#x}) is not in the RAM images ({images}): the images do not hold the program's static data; dump the RAM that holds .data and .bss, at the addresses the ELF gives, or check the @ADDR of each --ram")]
    RootNotInImages {
        name: String,
        start: u64,
        end: u64,
        images: String,
    },
}

/// The images, sorted and checked not to overlap: reads words by address.
pub struct Memory {
    images: Vec<Image>,
    word: usize,
    big_endian: bool,
}

impl Memory {
    /// Check and sort `images`; `word_size` (2, 4 or 8) and the byte order are the
    /// target's.
    pub fn new(mut images: Vec<Image>, word_size: u8, big_endian: bool) -> Result<Self, LeakError> {
        let bits = u32::from(word_size) * 8;
        let top = if bits >= 64 { u64::MAX } else { 1u64 << bits };
        for i in &images {
            let len = i.bytes.len() as u64;
            if i.addr.checked_add(len).is_none_or(|e| bits < 64 && e > top) {
                return Err(LeakError::ImageTooLong {
                    name: i.name.clone(),
                    addr: i.addr,
                    len,
                    bits,
                });
            }
        }
        images.sort_by_key(|i| i.addr);
        for w in images.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            if b.addr < a.end() && !b.bytes.is_empty() && !a.bytes.is_empty() {
                return Err(LeakError::ImagesOverlap {
                    a: a.name.clone(),
                    a_start: a.addr,
                    a_end: a.end(),
                    b: b.name.clone(),
                    b_start: b.addr,
                    b_end: b.end(),
                });
            }
        }
        Ok(Memory {
            images,
            word: usize::from(word_size.clamp(2, 8)),
            big_endian,
        })
    }

    /// Bytes per word of the target (what a pointer takes).
    pub fn word_size(&self) -> u8 {
        self.word as u8
    }

    /// The word at `addr` in the target's byte order, if an image holds it: what a
    /// stack walk reads (saved registers, return addresses).
    pub fn read_word(&self, addr: u64) -> Option<u64> {
        self.read(addr, self.word as u8)
    }

    /// Register values as roots: they become the words of a pseudo image placed just
    /// past the target's address space (no pointer of the program reaches it, and no
    /// image can be there), one root per register named `name`. Registers are memory
    /// for the scan like any other root, so a pointer held only in a register keeps
    /// its object reachable and the reference path names the register.
    pub fn add_registers(&mut self, regs: &[(String, u64)]) -> Vec<Root> {
        let w = self.word as u64;
        let base = if self.word >= 8 {
            // No room past 64 bits: the last page, which no user program maps.
            !0xfff_u64
        } else {
            1u64 << (self.word * 8)
        };
        let base = self
            .images
            .last()
            .map_or(base, |i| base.max(i.end().div_ceil(w) * w));
        let mut bytes = Vec::with_capacity(regs.len() * self.word);
        let mut roots = Vec::with_capacity(regs.len());
        for (k, (name, v)) in regs.iter().enumerate() {
            let b = v.to_le_bytes();
            let b = &b[..self.word];
            if self.big_endian {
                bytes.extend(b.iter().rev());
            } else {
                bytes.extend_from_slice(b);
            }
            roots.push(Root {
                name: name.clone(),
                start: base + k as u64 * w,
                size: w,
            });
        }
        if !regs.is_empty() {
            self.images.push(Image {
                name: "registers".into(),
                addr: base,
                bytes,
            });
        }
        roots
    }

    /// The image holding `addr`, if any.
    fn image(&self, addr: u64) -> Option<&Image> {
        let i = self.images.partition_point(|i| i.addr <= addr);
        let img = self.images.get(i.checked_sub(1)?)?;
        (addr < img.end()).then_some(img)
    }

    /// The bytes `[start, start + len)` if one image holds them all.
    fn bytes(&self, start: u64, len: u64) -> Option<&[u8]> {
        let img = self.image(start)?;
        let off = usize::try_from(start - img.addr).ok()?;
        let len = usize::try_from(len).ok()?;
        img.bytes.get(off..off.checked_add(len)?)
    }

    /// "a.bin at 0x20000000..0x20010000, …" for messages.
    fn describe(&self) -> String {
        if self.images.is_empty() {
            return "none given".into();
        }
        self.images
            .iter()
            .map(|i| format!("{} at {:#x}..{:#x}", i.name, i.addr, i.end()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The `size`-byte unsigned integer at `addr` (1 to 8 bytes, target byte order).
    fn read(&self, addr: u64, size: u8) -> Option<u64> {
        if !(1..=8).contains(&size) {
            return None;
        }
        let b = self.bytes(addr, u64::from(size))?;
        let mut v = 0u64;
        if self.big_endian {
            for &x in b {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in b.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        }
        Some(v)
    }

    /// Calls `f(offset, value)` for every aligned word of `[start, start + len)`.
    fn words(&self, start: u64, len: u64, mut f: impl FnMut(u64, u64)) {
        let w = self.word as u64;
        let first = start.div_ceil(w) * w;
        let Some(bytes) = self.bytes(start, len) else {
            return;
        };
        let skip = (first - start) as usize;
        let Some(bytes) = bytes.get(skip..) else {
            return;
        };
        for (k, c) in bytes.chunks_exact(self.word).enumerate() {
            let mut v = 0u64;
            if self.big_endian {
                for &b in c {
                    v = (v << 8) | u64::from(b);
                }
            } else {
                for &b in c.iter().rev() {
                    v = (v << 8) | u64::from(b);
                }
            }
            f(skip as u64 + (k * self.word) as u64, v);
        }
    }
}

/// The leak check's answer: every object's category and the reference that reached it.
#[derive(Debug)]
pub struct Leaks {
    /// The objects, sorted by address.
    pub objects: Vec<Object>,
    /// Category of `objects[i]`.
    pub category: Vec<Category>,
    /// The reference that reached `objects[i]` first (breadth first from the roots,
    /// so the path is a shortest one); for an indirectly lost object, the reference
    /// from its group of lost objects; `None` for definitely lost ones.
    pub parent: Vec<Option<Edge>>,
    /// The roots scanned.
    pub roots: Vec<Root>,
    /// Roots left out because heap objects lie in them (the heap arena itself, a
    /// static allocator's pool): scanning them would keep every freed block's stale
    /// pointers alive.
    pub excluded: Vec<Root>,
    /// `labels[i]`: where in its holder the reference in `parent[i]` sits, as an index
    /// into `label_frames` (see [`Leaks::label`]).
    pub labels: Vec<u32>,
    /// The distinct labels: reference-path frames (`seen`, `[10+]`, `Message.body`);
    /// `label_frames[0]` is the empty one (an untyped holder).
    pub label_frames: Vec<Vec<String>>,
    /// `typed[i]`: object `i`'s type is known (reached by a typed pointer from a typed
    /// root), so it is named by the fields and elements that lead to it, not by its
    /// allocation site.
    pub typed: Vec<bool>,
    /// Roots scanned by type (their static's DWARF type is known).
    pub typed_roots: usize,
}

/// One frame of a reference path, root first (see [`Leaks::reference_path`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathFrame<'a> {
    /// The root that holds the chain (a static, the stack).
    Root(&'a Root),
    /// A holding object of unknown type: shown by its allocation site.
    Object(&'a Object),
    /// A field or element of a typed holder.
    Field(&'a str),
}

impl Leaks {
    /// (bytes, blocks) of a category.
    pub fn totals(&self, c: Category) -> (u64, u64) {
        self.objects
            .iter()
            .zip(&self.category)
            .filter(|(_, &k)| k == c)
            .fold((0, 0), |(b, n), (o, _)| (b + o.size, n + 1))
    }

    /// Is anything definitely or indirectly lost (a failed leak check)?
    pub fn has_leaks(&self) -> bool {
        self.category.iter().any(|c| c.is_leak())
    }

    /// The chain of references that reached object `i`, from the root (or the lost
    /// group's first object) to the holder of `i`'s own reference.
    pub fn path(&self, i: usize) -> Vec<Edge> {
        let mut path = Vec::new();
        let mut at = i;
        // Bounded: parents form a tree (each object's parent was set before it was
        // queued), but a corrupt table must not loop.
        for _ in 0..=self.objects.len() {
            let Some(e) = self.parent.get(at).copied().flatten() else {
                break;
            };
            path.push(e);
            match e.holder {
                Holder::Root(_) => break,
                Holder::Object(j) => at = j,
            }
        }
        path.reverse();
        path
    }

    /// Where in its holder the reference that reached object `i` sits: field and
    /// element frames (`seen`, `[10+]`), empty when the holder is untyped.
    pub fn label(&self, i: usize) -> &[String] {
        let k = self.labels.get(i).copied().unwrap_or(0);
        self.label_frames.get(k as usize).map_or(&[], Vec::as_slice)
    }

    /// The reference path to object `i` as frames, root first: the root, then for each
    /// holder the fields and elements the reference sits in (typed holders) or the
    /// holder itself (untyped ones), e.g. `ROUTER`, `seen`, `[10+]`. Empty for a
    /// definitely lost object.
    pub fn reference_path(&self, i: usize) -> Vec<PathFrame<'_>> {
        let path = self.path(i);
        let mut frames = Vec::new();
        for (k, e) in path.iter().enumerate() {
            match e.holder {
                Holder::Root(r) => {
                    if let Some(r) = self.roots.get(r) {
                        frames.push(PathFrame::Root(r));
                    }
                }
                Holder::Object(j) => {
                    if !self.typed.get(j).copied().unwrap_or(false) {
                        frames.push(PathFrame::Object(&self.objects[j]));
                    }
                }
            }
            // The object this edge reaches: the next edge's holder, or `i`.
            let child = match path.get(k + 1).map(|n| n.holder) {
                Some(Holder::Object(c)) => c,
                _ => i,
            };
            frames.extend(self.label(child).iter().map(|s| PathFrame::Field(s)));
        }
        frames
    }
}

/// The snapshot's object table as [`Object`]s, or why there is none.
pub fn objects_of(snap: &sampler_core::decoded::Snapshot) -> Result<Vec<Object>, LeakError> {
    let table = snap.objects.as_ref().ok_or(LeakError::NoObjectTable {
        version: snap.version,
    })?;
    Ok(table
        .iter()
        .map(|o| Object {
            addr: o.addr,
            size: o.size,
            stack_id: o.stack_id,
        })
        .collect())
}

/// Run the leak check: `objects` in `memory`, scanned from `roots`, all untyped (see
/// [`scan_typed`]).
pub fn scan(memory: &Memory, roots: Vec<Root>, objects: Vec<Object>) -> Result<Leaks, LeakError> {
    scan_typed(memory, roots, objects, None)
}

/// Run the leak check: `objects` in `memory`, scanned from `roots`; with `types`,
/// roots whose static has a type are scanned by type first, so the objects they reach
/// by typed pointers (and those objects' own typed pointers) get a type and the
/// reference paths name fields and elements. Reachability is always the conservative
/// scan's: a pointer in an integer field or in untyped memory still counts.
///
/// Roots that contain an object are left out (see [`Leaks::excluded`]). Every object
/// and every remaining root must be wholly in the images. Each object is scanned at
/// most three times (reached as possibly lost, upgraded to reachable, and in the lost
/// pass), so the work is linear in the memory scanned times the lookup's log.
pub fn scan_typed(
    memory: &Memory,
    roots: Vec<Root>,
    mut objects: Vec<Object>,
    types: Option<&Types>,
) -> Result<Leaks, LeakError> {
    objects.sort();
    objects.dedup();
    for w in objects.windows(2) {
        let (a, b) = (w[0], w[1]);
        if b.addr < a.end() || (a.size == 0 && a.addr == b.addr) {
            return Err(LeakError::ObjectsOverlap {
                a: a.addr,
                a_size: a.size,
                b: b.addr,
                b_size: b.size,
            });
        }
    }
    for o in &objects {
        if memory.bytes(o.addr, o.size).is_none() {
            let hint = match memory.image(o.addr) {
                Some(img) => format!(
                    ": image {} ends at {:#x}, inside the object; the image is shorter than the RAM it should hold (a truncated dump?)",
                    img.name,
                    img.end()
                ),
                None => ": the images do not hold the heap; dump the RAM the heap is in, at the right @ADDR".into(),
            };
            return Err(LeakError::ObjectNotInImages {
                addr: o.addr,
                end: o.end(),
                size: o.size,
                images: memory.describe(),
                hint,
            });
        }
    }
    let (mut kept, mut excluded) = (Vec::new(), Vec::new());
    for r in roots {
        let i = objects.partition_point(|o| o.addr < r.start);
        if objects.get(i).is_some_and(|o| o.addr < r.end()) {
            excluded.push(r);
            continue;
        }
        if r.size > 0 && memory.bytes(r.start, r.size).is_none() {
            return Err(LeakError::RootNotInImages {
                end: r.end(),
                name: r.name,
                start: r.start,
                images: memory.describe(),
            });
        }
        kept.push(r);
    }
    let roots = kept;

    let index = AddrIndex::new(&objects);
    // The object a word points into: (index, points at its first byte).
    let find = |p: u64| index.find(&objects, p);

    // Breadth first from the roots: state 0 unreached, 1 possibly lost, 2 still
    // reachable; an object is queued again when its state improves (at most twice).
    let n = objects.len();
    let mut m = Marks {
        state: vec![0u8; n],
        parent: vec![None; n],
        queue: VecDeque::new(),
    };
    for (k, r) in roots.iter().enumerate() {
        memory.words(r.start, r.size, |off, v| {
            m.reach(find(v), Holder::Root(k), 2, off)
        });
    }
    while let Some(i) = m.queue.pop_front() {
        let o = objects[i];
        let bound = m.state[i];
        memory.words(o.addr, o.size, |off, v| {
            m.reach(find(v), Holder::Object(i), bound, off)
        });
    }
    let Marks {
        state, mut parent, ..
    } = m;

    let mut category: Vec<Category> = state
        .iter()
        .map(|&s| match s {
            2 => Category::StillReachable,
            1 => Category::PossiblyLost,
            _ => Category::DefinitelyLost,
        })
        .collect();
    // valgrind's cliques: in address order, each unreached object not yet in a group
    // leads one; what it reaches among unreached objects is indirectly lost (an earlier
    // leader it reaches joins its group).
    let mut grouped = vec![false; n];
    let mut stack = Vec::new();
    for lead in 0..n {
        if state[lead] != 0 || grouped[lead] {
            continue;
        }
        grouped[lead] = true;
        stack.push(lead);
        while let Some(i) = stack.pop() {
            let o = objects[i];
            memory.words(o.addr, o.size, |off, v| {
                let Some((c, _)) = find(v) else { return };
                if c == lead || c == i || state[c] != 0 {
                    return;
                }
                let was_leader =
                    grouped[c] && category[c] == Category::DefinitelyLost && parent[c].is_none();
                if grouped[c] && !was_leader {
                    return;
                }
                category[c] = Category::IndirectlyLost;
                parent[c] = Some(Edge {
                    holder: Holder::Object(i),
                    offset: off,
                });
                if !grouped[c] {
                    grouped[c] = true;
                    stack.push(c);
                }
            });
        }
    }
    let mut labels = vec![0u32; n];
    let mut label_frames = vec![Vec::new()];
    let mut typed = vec![false; n];
    let mut typed_roots = 0;
    if let Some(types) = types {
        let t = typed_pass(memory, &roots, &objects, types, &find);
        typed_roots = t.roots.iter().filter(|r| r.is_some()).count();
        for i in 0..n {
            let Some(e) = t.parent[i] else { continue };
            // Reached from a root by typed pointers to first bytes: the conservative
            // pass reached it too, as still reachable (it scans every word the typed
            // pass read); the typed path names the holders, so it wins.
            parent[i] = Some(e);
            typed[i] = t.ty[i].is_some();
        }
        // Labels are few and shared (`Node.left`): each written once to a scratch
        // string and interned.
        let mut interned: std::collections::HashMap<String, u32> = Default::default();
        interned.insert(String::new(), 0);
        let mut scratch = String::new();
        for i in 0..n {
            let Some(e) = parent[i] else { continue };
            let (base, ty, top) = match e.holder {
                Holder::Root(k) => (roots[k].start, t.roots[k], false),
                Holder::Object(j) => (objects[j].addr, t.ty[j], true),
            };
            let Some((ty, count)) = ty else { continue };
            scratch.clear();
            types.locate(memory, base, ty, count, e.offset, top, &mut scratch);
            labels[i] = match interned.get(&scratch) {
                Some(&k) => k,
                None => {
                    let k = label_frames.len() as u32;
                    label_frames.push(
                        scratch
                            .split_terminator(types::FRAME_END)
                            .map(str::to_owned)
                            .collect(),
                    );
                    interned.insert(scratch.clone(), k);
                    k
                }
            };
        }
    }
    Ok(Leaks {
        objects,
        category,
        parent,
        roots,
        excluded,
        labels,
        label_frames,
        typed,
        typed_roots,
    })
}

/// What the typed pass found: each root's and object's type (and element count), and
/// the typed reference that reached each object first.
struct TypedPass {
    roots: Vec<Option<(TypeId, u64)>>,
    ty: Vec<Option<(TypeId, u64)>>,
    parent: Vec<Option<Edge>>,
}

/// Breadth first from the typed roots along typed pointers to objects' first bytes: an
/// object gets the pointer's target type when it fits in it (else it is reached but
/// untyped, scanned conservatively). Each object is visited once.
fn typed_pass(
    memory: &Memory,
    roots: &[Root],
    objects: &[Object],
    types: &Types,
    find: &impl Fn(u64) -> Option<(usize, bool)>,
) -> TypedPass {
    let n = objects.len();
    let mut p = TypedPass {
        roots: roots
            .iter()
            .map(|r| {
                let t = *types.statics.get(&r.start)?;
                (types.bytes(t, 1)? <= r.size).then_some((t, 1))
            })
            .collect(),
        ty: vec![None; n],
        parent: vec![None; n],
    };
    let mut queue = VecDeque::new();
    let word = memory.word as u8;
    let visit = |holder: Holder,
                 base: u64,
                 p: &mut TypedPass,
                 queue: &mut VecDeque<usize>,
                 (t, count): (TypeId, u64)| {
        types.pointers(memory, base, t, count, &mut |slot, target| {
            let Some(v) = memory.read(slot, word) else {
                return;
            };
            let Some((i, true)) = find(v) else { return };
            if p.parent[i].is_some() || holder == Holder::Object(i) {
                return;
            }
            p.parent[i] = Some(Edge {
                holder,
                offset: slot - base,
            });
            p.ty[i] = target.ty.and_then(|t| {
                let bytes = types.bytes(t, target.count)?;
                (bytes <= objects[i].size).then_some((t, target.count))
            });
            queue.push_back(i);
        });
    };
    for (k, r) in roots.iter().enumerate() {
        if let Some(t) = p.roots[k] {
            visit(Holder::Root(k), r.start, &mut p, &mut queue, t);
        }
    }
    while let Some(i) = queue.pop_front() {
        if let Some(t) = p.ty[i] {
            visit(Holder::Object(i), objects[i].addr, &mut p, &mut queue, t);
        }
    }
    p
}

/// Which object holds an address, in (amortized) constant time: the objects' span cut
/// into about as many buckets as there are objects, each bucket knowing the last object
/// that starts at or before it, so a lookup searches the one to three objects of its
/// bucket (a plain binary search over a million objects made the scan twice as slow).
struct AddrIndex {
    lo: u64,
    hi: u64,
    shift: u32,
    /// `first[b]`: the last object starting at or before bucket `b`'s start (0 when
    /// none), for `b` in `0..=buckets`.
    first: Vec<u32>,
}

impl AddrIndex {
    fn new(objects: &[Object]) -> Self {
        let lo = objects.first().map_or(0, |o| o.addr);
        // A zero-size object still has its address (a pointer to it counts).
        let hi = objects
            .iter()
            .map(|o| o.addr.saturating_add(o.size.max(1)))
            .max()
            .unwrap_or(0)
            .max(lo + 1);
        let span = hi - lo;
        let want = (objects.len() as u64).max(1);
        // The smallest power-of-two bucket size with at most `want` buckets.
        let mut shift = 0;
        while (span >> shift) > want {
            shift += 1;
        }
        let buckets = (span >> shift) + 1;
        let mut first = Vec::with_capacity(buckets as usize + 1);
        let mut i = 0usize;
        for b in 0..=buckets {
            let start = lo.saturating_add(b << shift);
            while i + 1 < objects.len() && objects[i + 1].addr <= start {
                i += 1;
            }
            first.push(i as u32);
        }
        AddrIndex {
            lo,
            hi,
            shift,
            first,
        }
    }

    /// The object `p` points into: (index, `p` is its first byte).
    fn find(&self, objects: &[Object], p: u64) -> Option<(usize, bool)> {
        if p < self.lo || p >= self.hi {
            return None;
        }
        let b = ((p - self.lo) >> self.shift) as usize;
        let from = *self.first.get(b)? as usize;
        let to = (*self.first.get(b + 1)? as usize + 1).min(objects.len());
        let slice = objects.get(from..to)?;
        let i = from + slice.partition_point(|o| o.addr <= p).checked_sub(1)?;
        let o = objects.get(i)?;
        (p == o.addr || p < o.end()).then_some((i, p == o.addr))
    }
}

/// The marking pass's state.
struct Marks {
    state: Vec<u8>,
    parent: Vec<Option<Edge>>,
    queue: VecDeque<usize>,
}

impl Marks {
    /// A word of `holder` at `off` points into object `hit` (index, at its first
    /// byte): mark it with the better of its state and the chain's (`bound`, capped
    /// at possibly lost for an interior pointer).
    fn reach(&mut self, hit: Option<(usize, bool)>, holder: Holder, bound: u8, off: u64) {
        let Some((i, start)) = hit else { return };
        if holder == Holder::Object(i) {
            return;
        }
        let s = bound.min(if start { 2 } else { 1 });
        if s > self.state[i] {
            self.state[i] = s;
            self.parent[i] = Some(Edge {
                holder,
                offset: off,
            });
            self.queue.push_back(i);
        }
    }
}

/// `1234567` → `1,234,567`, as valgrind prints byte and block counts.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
