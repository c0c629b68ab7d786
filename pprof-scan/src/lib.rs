//! The hot loops of opening a large profile in the heapsnap viewer, on plain data:
//! the pprof decoder's (top-level protobuf fields, `Sample` messages read without
//! allocating, the table that merges samples by stack: [`Groups`]) and the flame
//! tree's ([`FlameNodes`]). The profile model around them (what merged groups become,
//! prost for everything else, validation, names and ranks) is in heapsnap-profile's
//! `analysis::compact` and `analysis::flame`.
//!
//! A crate of its own so that it can be compiled for speed (`opt-level = 3`) inside the
//! browser bundle, which is otherwise built for size: these loops are most of the time
//! to open a large profile (roughly twice as fast at opt-level 3 in Chromium), while
//! opt-level 3 for all of heapsnap-profile would cost 50 KiB of bundle.

#![forbid(unsafe_code)]

/// Sample groups being merged. A group is keyed by the *raw bytes* of its samples'
/// location ids (packed varints as written), so a repeated stack is hashed and compared
/// as a few machine words and its ids are decoded only once, when its group is made.
/// Equal bytes mean equal stacks; equal stacks written differently (non-canonical
/// varints, packed vs not) merely stay in separate groups, which changes no figure.
///
/// Samples arrive in random stack order, so the cost is cache misses: each group is one
/// contiguous record (hash, values, key) found through a flat open-addressing table,
/// two misses per sample where a `HashMap` of separate arenas took five. Samples are
/// looked up in batches, every table slot and then every record of a batch first read
/// together, so the misses of a batch overlap instead of queueing.
#[derive(Default)]
pub struct Groups {
    m: Merged,
    /// Samples waiting for the next lookup.
    batch: Batch,
}

/// The groups merged so far (apart from [`Groups`]' batch, so that a batch of its
/// own is merged with no move of it).
#[derive(Default)]
struct Merged {
    /// Linear probing over slots of a record's offset + 1 (0 = empty) in the low 32
    /// bits and its hash's high 32 bits in the high ones, so that a probe past other
    /// groups' slots reads no record (most samples of a Go heap profile make a new
    /// group, whose probe ends at an empty slot after one or two taken ones, each a
    /// cache miss into the records when the slot held the offset alone), and the
    /// table grows without reading them ([`Merged::grow`]). A power of two in size.
    table: Vec<u64>,
    /// Records: `[hash, value sign mask, values << 32 | key bytes, string-label set,
    /// values…, key bytes packed little-endian into words…]`. Samples merge only when
    /// hash, signs, value count, label set and key all agree.
    arena: Arena,
    /// Record offset of each group, in order of first appearance. A group's location
    /// ids are decoded from its key when asked for ([`Groups::group`]), not kept
    /// decoded: 8 bytes an id against the 1–3 of its varint (for a profile of millions
    /// of distinct stacks, most of the memory the merge took).
    recs: Vec<u32>,
    /// The largest location id of any group less one, an id 0 counting as the
    /// largest (`u64::MAX`): see [`Groups::ids_below`].
    id_top: u64,
}

/// Samples read but not yet merged into [`Groups`]: each one's record head (its hash
/// among them), key words, values and location bytes. [`Groups::add`] fills one of
/// [`BATCH`] samples and merges it; a reader on one thread can fill larger ones
/// ([`Batch::push`]) for [`Groups::merge`] on another, so that the reading and the
/// merging of a large profile run side by side.
#[derive(Default)]
pub struct Batch {
    pending: Vec<Pending>,
    words: Vec<u64>,
    vals: Vec<i64>,
    locs: Vec<u8>,
}

/// A sample waiting in a [`Batch`]: its record head and where its key words,
/// values and location bytes are.
#[derive(Clone, Copy)]
struct Pending {
    head: [u64; HEAD],
    words: (u32, u32),
    vals: (u32, u32),
    locs: (u32, u32),
}

const HEAD: usize = 4;
const BATCH: usize = 16;

impl Groups {
    /// Adds a sample (its location-id bytes, values and string-label set): summed into
    /// the group with the same key, else a new group, when its batch is looked up.
    /// `None` when a batch holds location bytes that are not valid varints, or the
    /// groups outgrow 32-bit offsets.
    // Not inlined, here and in `read_sample`: V8 starts wasm in a baseline tier and
    // switches to optimized code only on a later *call* (no on-stack replacement), so
    // per-sample work must be a function called per sample to be optimized mid-file
    // (about twice as fast in Chromium). `cargo xtask viewer` keeps wasm-opt from
    // inlining it back.
    #[inline(never)]
    pub fn add(&mut self, locs: &[u8], vals: &[i64], set: u32) -> Option<()> {
        self.batch.push(locs, vals, set)?;
        if self.batch.len() == BATCH {
            return self.flush();
        }
        Some(())
    }

    /// Merges the samples waiting in [`Groups::add`]'s batch.
    #[inline(never)]
    pub fn flush(&mut self) -> Option<()> {
        let ok = self.m.merge_all(&self.batch);
        self.batch.clear();
        ok
    }

    /// Merges every sample of `batch` (emptied, its room kept), as [`Groups::add`]
    /// merges its own batch, [`BATCH`] at a time. `None` as [`Groups::add`].
    #[cfg(not(target_arch = "wasm32"))]
    #[inline(never)]
    pub fn merge(&mut self, batch: &mut Batch) -> Option<()> {
        let ok = self.m.merge_all(batch);
        batch.clear();
        ok
    }

    /// Drops groups `k..` and, with them, the lookup table (no sample is added once
    /// the groups are read). Their memory is given back a chunk at a time as they go,
    /// so that a reader building its samples from the last group back does not hold
    /// the merge's memory and all of the samples' at once (3 million distinct stacks:
    /// 0.3 GB of records).
    pub fn truncate(&mut self, k: usize) {
        self.m.table = Vec::new();
        if let Some(&r) = self.m.recs.get(k) {
            self.m.arena.truncate(r);
        }
        self.m.recs.truncate(k);
    }

    /// Does every location id of every group lie in 1..=n? Where a profile's
    /// locations are the ids 1..=n, its stacks are then valid with no per-sample check.
    pub fn ids_below(&self, n: u64) -> bool {
        self.m.id_top < n
    }

    /// Number of groups (after [`Groups::flush`]).
    pub fn len(&self) -> usize {
        self.m.recs.len()
    }

    /// No groups yet.
    pub fn is_empty(&self) -> bool {
        self.m.recs.is_empty()
    }

    /// Group `k`: (location ids, values, string-label set).
    pub fn group(&self, k: usize) -> (Ids<'_>, impl Iterator<Item = i64> + '_, u32) {
        let rec = self.m.arena.rec(self.m.recs[k]);
        let shape = rec[2];
        let (nv, len) = ((shape >> 32) as usize, (shape & 0xffff_ffff) as usize);
        let key = HEAD + nv;
        let words = &rec[key..key + len.div_ceil(8)];
        (
            Ids { words, len, pos: 0 },
            rec[HEAD..key].iter().map(|&v| v as i64),
            rec[3] as u32,
        )
    }
}

impl Merged {
    /// Merges every sample of `b`, [`BATCH`] at a time (the table first given room
    /// for them all).
    #[inline(always)]
    fn merge_all(&mut self, b: &Batch) -> Option<()> {
        if self.table.len() < 2 * (self.recs.len() + b.len() + 1) {
            self.grow(b.len());
        }
        b.pending
            .chunks(BATCH)
            .all(|run| self.merge_run(run, b).is_some())
            .then_some(())
    }

    /// Merges `run`, [`BATCH`] samples of `b` at most: first each one's table slot and
    /// record head are read (independent loads, whose cache misses overlap), then
    /// each is merged.
    #[inline(always)]
    fn merge_run(&mut self, run: &[Pending], b: &Batch) -> Option<()> {
        let mut first = [0u64; BATCH];
        for (f, p) in first.iter_mut().zip(run) {
            *f = self.table[home(p.head[0], self.table.len())];
        }
        let mut hits = 0u32;
        for (&f, p) in first.iter().zip(run) {
            if f != 0 && tag(f) == tag(p.head[0]) {
                hits += u32::from(self.arena.rec(offset(f))[0] == p.head[0]);
            }
        }
        let _ = std::hint::black_box(hits);
        run.iter()
            .all(|p| self.merge_one(p, b).is_some())
            .then_some(())
    }

    /// Merges one waiting sample of `b` into its group, or makes the group.
    #[inline(always)]
    fn merge_one(&mut self, p: &Pending, b: &Batch) -> Option<()> {
        let words = &b.words[p.words.0 as usize..(p.words.0 + p.words.1) as usize];
        let vals = &b.vals[p.vals.0 as usize..(p.vals.0 + p.vals.1) as usize];
        let mask = self.table.len() - 1;
        let mut slot = home(p.head[0], self.table.len());
        loop {
            let at = self.table[slot];
            if at == 0 {
                break;
            }
            if tag(at) == tag(p.head[0]) {
                let rec = self.arena.rec_mut(offset(at));
                let ks = HEAD + vals.len();
                // A sum past 64 bits would wrap: the sample goes on probing, to a later
                // group of the same stack or a new one (separate groups change no figure).
                if rec[..HEAD] == p.head
                    && same(&rec[ks..ks + words.len()], words)
                    && fits(&rec[HEAD..ks], vals)
                {
                    for (a, b) in rec[HEAD..ks].iter_mut().zip(vals) {
                        *a = (*a as i64).wrapping_add(*b) as u64;
                    }
                    return Some(());
                }
            }
            slot = (slot + 1) & mask;
        }
        // A new group: its ids validated once (decoded again from the key when asked).
        let locs = &b.locs[p.locs.0 as usize..(p.locs.0 + p.locs.1) as usize];
        let mut q = 0;
        let mut top = self.id_top;
        while q < locs.len() {
            top = top.max(varint(locs, &mut q)?.wrapping_sub(1));
        }
        self.id_top = top;
        let r = self.arena.push(&p.head, vals, words)?;
        self.recs.push(r);
        self.table[slot] = slot_of(r, p.head[0]);
        Some(())
    }

    /// Doubles the table (at least 1024 slots, and twice the groups) and moves every
    /// slot over. A slot's
    /// home is its hash's top bits, which the slot holds, so the old table is read in
    /// order and the new one written nearly in order, with no record read: re-inserting
    /// the records by their hashes wrote the new table at random, a quarter of the
    /// merge's time on a 30 MB Go heap profile.
    fn grow(&mut self, waiting: usize) {
        // At least twice the groups and waiting samples (after `truncate`, the table
        // starts again from none).
        let need = 2 * (self.recs.len() + waiting + 1);
        let n = (self.table.len() * 2)
            .max(need.next_power_of_two())
            .max(1024);
        let old = std::mem::replace(&mut self.table, vec![0; n]);
        let mask = n - 1;
        // (A table dropped by `truncate` with groups left: made again from their
        // records, so that a sample added after it still finds its group.)
        let again: &[u32] = if old.is_empty() { &self.recs } else { &[] };
        let made: Vec<u64> = again
            .iter()
            .map(|&r| slot_of(r, self.arena.rec(r)[0]))
            .collect();
        for at in old.into_iter().chain(made) {
            if at != 0 {
                let mut slot = home(at, n);
                while self.table[slot] != 0 {
                    slot = (slot + 1) & mask;
                }
                self.table[slot] = at;
            }
        }
    }
}

impl Batch {
    /// Adds a sample (its location-id bytes, values and string-label set) for the next
    /// [`Groups::merge`]. `None` when its values or bytes pass 32-bit counts.
    #[inline(always)]
    pub fn push(&mut self, locs: &[u8], vals: &[i64], set: u32) -> Option<()> {
        let mut signs = 0u64;
        let mut k = 0;
        while k < vals.len() && k < 64 {
            signs |= u64::from(vals[k] < 0) << k;
            k += 1;
        }
        // Offsets into the batch are 32-bit (a batch of many deep stacks passes them
        // only with limits raised far beyond the defaults).
        if (self.vals.len() + vals.len()) as u64 >= 1 << 32
            || (self.locs.len() as u64 + locs.len() as u64) >= 1 << 32
        {
            return None;
        }
        let shape = (vals.len() as u64) << 32 | locs.len() as u64;
        // The key as words, hashed with its shape.
        let ws = self.words.len();
        let mut h = Fx(signs ^ shape.rotate_left(17) ^ u64::from(set) << 7);
        let mut i = 0;
        while i + 8 <= locs.len() {
            let w = u64::from_le_bytes([
                locs[i],
                locs[i + 1],
                locs[i + 2],
                locs[i + 3],
                locs[i + 4],
                locs[i + 5],
                locs[i + 6],
                locs[i + 7],
            ]);
            h.write_u64(w);
            self.words.push(w);
            i += 8;
        }
        if i < locs.len() {
            let mut w = 0u64;
            let mut s = 0;
            while i < locs.len() {
                w |= u64::from(locs[i]) << s;
                s += 8;
                i += 1;
            }
            h.write_u64(w);
            self.words.push(w);
        }
        let at = |v: usize, n: usize| (v as u32, n as u32);
        self.pending.push(Pending {
            head: [h.finish(), signs, shape, u64::from(set)],
            words: at(ws, self.words.len() - ws),
            vals: at(self.vals.len(), vals.len()),
            locs: at(self.locs.len(), locs.len()),
        });
        self.vals.extend_from_slice(vals);
        self.locs.extend_from_slice(locs);
        Some(())
    }

    /// Samples waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// No sample waiting.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Bytes of location ids waiting.
    pub fn bytes(&self) -> usize {
        self.locs.len()
    }

    fn clear(&mut self) {
        self.pending.clear();
        self.words.clear();
        self.vals.clear();
        self.locs.clear();
    }
}

/// A [`Groups`] table slot: record `r`, whose key hashed to `h`.
#[inline(always)]
fn slot_of(r: u32, h: u64) -> u64 {
    (h & !0xffff_ffff) | u64::from(r + 1)
}

/// Where a key of hash `h` (or a slot, which holds its top bits) goes in a table of
/// `len` slots (a power of two, at least 1024, at most 2^32): the hash's top bits.
#[inline(always)]
fn home(h: u64, len: usize) -> usize {
    (h >> (64 - len.trailing_zeros())) as usize
}

/// The record offset of a taken slot.
#[inline(always)]
fn offset(slot: u64) -> u32 {
    slot as u32 - 1
}

/// [`Groups`]' records in chunks, each record in one chunk, its offset the chunk's
/// index above [`BITS`] bits and where it starts in the chunk below them.
///
/// In the wasm a chunk is [`CHUNK`] words (512 KiB) and never grows (a record longer
/// than that has a chunk of its own): one `Vec` grown by doubling held the old and the
/// new copy at once, and wasm memory never shrinks back (on a 5 MB Go heap profile,
/// 46 MB of records, the page's memory peaked at 136 MB while it decoded; now 60 MB,
/// 75.5 once its samples are built).
/// Natively a chunk grows as a `Vec` does: the allocator moves a large block's pages
/// rather than copy them (`mremap`), and gives them back as the chunk shrinks. Small
/// chunks there were malloc's to keep, not the system's: 0.38 → 0.50 GB for `heapsnap
/// top` on a 30 MB Go heap profile.
#[derive(Default)]
struct Arena {
    chunks: Vec<Vec<u64>>,
}

/// A record offset's chunk and where in it the record starts.
#[inline(always)]
fn place(r: u32) -> (usize, usize) {
    ((r >> BITS) as usize, (r as usize) & (CHUNK - 1))
}

/// Natively a chunk grows (see [`Arena`]). This crate's own tests take the wasm's
/// chunks, which only they can reach (the native ones start a chunk past 2 GiB).
const GROWS: bool = cfg!(not(any(target_arch = "wasm32", test)));

/// Offset bits of where a record starts in its chunk: 16 in the wasm, 28 natively.
const BITS: u32 = if GROWS { 28 } else { 16 };

/// Words in a chunk before the next one is started.
const CHUNK: usize = 1 << BITS;

impl Arena {
    /// Record `r` and whatever follows it in its chunk.
    #[inline(always)]
    fn rec(&self, r: u32) -> &[u64] {
        let (c, at) = place(r);
        &self.chunks[c][at..]
    }

    #[inline(always)]
    fn rec_mut(&mut self, r: u32) -> &mut [u64] {
        let (c, at) = place(r);
        &mut self.chunks[c][at..]
    }

    /// Appends a record: its offset, or `None` once `u32::MAX >> BITS` chunks are in use
    /// (65,535 of 512 KiB in the wasm; 15 natively), so that an offset + 1 fits a slot.
    fn push(&mut self, head: &[u64; HEAD], vals: &[i64], words: &[u64]) -> Option<u32> {
        let len = HEAD + vals.len() + words.len();
        // Room only where the record would start within `BITS` bits.
        let fits = match self.chunks.last() {
            Some(c) => c.len() < CHUNK && (GROWS || c.capacity() - c.len() >= len),
            None => false,
        };
        if !fits {
            if self.chunks.len() >= (u32::MAX >> BITS) as usize {
                return None;
            }
            let size = if GROWS { len } else { CHUNK.max(len) };
            self.chunks.push(Vec::with_capacity(size));
        }
        let at = self.chunks.len() - 1;
        let chunk = &mut self.chunks[at];
        let r = (at as u32) << BITS | chunk.len() as u32;
        chunk.extend_from_slice(head);
        chunk.extend(vals.iter().map(|&v| v as u64));
        chunk.extend_from_slice(words);
        Some(r)
    }

    /// Drops record `r` and every one after it, their chunks given back (natively
    /// the chunk it was in shrunk, a step of an eighth at a time: a `realloc` that
    /// shrinks in place).
    fn truncate(&mut self, r: u32) {
        let (at, start) = place(r);
        self.chunks.truncate(at + 1);
        if let Some(c) = self.chunks.get_mut(at) {
            c.truncate(start);
            if GROWS && c.capacity() - c.len() > c.len() / 8 + (1 << 16) {
                c.shrink_to_fit();
            }
        }
    }
}

/// The hash bits a slot keeps (its high half), of a slot or a hash.
#[inline(always)]
fn tag(x: u64) -> u64 {
    x >> 32
}

/// Byte `i` of bytes packed little-endian into words.
#[inline(always)]
fn byte(words: &[u64], i: usize) -> u8 {
    (words[i / 8] >> (8 * (i % 8))) as u8
}

impl Ids<'_> {
    /// Appends the ids as the varint bytes the file had them in (validated when the
    /// group was made): for a reader that keeps them so, with no decode.
    pub fn varints(&self, out: &mut Vec<u8>) {
        let end = out.len() + self.len;
        for w in self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.truncate(end);
    }
}

/// A group's location ids, decoded from its key (the varint bytes, validated when the
/// group was made), with their exact count (so a `collect` allocates once; counted
/// when asked, not per group: the decoder takes the varints as they are).
pub struct Ids<'a> {
    words: &'a [u64],
    len: usize,
    pos: usize,
}

impl Iterator for Ids<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0u32);
        while self.pos < self.len {
            let b = byte(self.words, self.pos);
            self.pos += 1;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        // Each varint ends in the one byte of it under 0x80.
        let left = (self.pos..self.len)
            .filter(|&i| byte(self.words, i) < 0x80)
            .count();
        (left, Some(left))
    }
}

impl ExactSizeIterator for Ids<'_> {}

/// Can every value be added to its group's sum without leaving 64 bits?
#[inline(always)]
fn fits(sums: &[u64], vals: &[i64]) -> bool {
    let mut ok = true;
    for (a, b) in sums.iter().zip(vals) {
        ok &= (*a as i64).checked_add(*b).is_some();
    }
    ok
}

/// Slice equality as a word loop: `==` on slices becomes `memcmp`, which on wasm32 is
/// a byte loop.
#[inline(always)]
fn same(a: &[u64], b: &[u64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[inline(always)]
pub fn field<'a>(raw: &'a [u8], pos: &mut usize) -> Option<(u64, u64, &'a [u8], &'a [u8])> {
    let start = *pos;
    let key = varint(raw, pos)?;
    let (tag, wire) = (key >> 3, key & 7);
    let body = *pos;
    let end = match wire {
        0 => {
            varint(raw, pos)?;
            *pos
        }
        1 => pos.checked_add(8)?,
        2 => {
            let n = usize::try_from(varint(raw, pos)?).ok()?;
            let b = *pos;
            return {
                let end = b.checked_add(n)?;
                (tag != 0 && end <= raw.len()).then(|| {
                    *pos = end;
                    (tag, wire, &raw[start..end], &raw[b..end])
                })
            };
        }
        5 => pos.checked_add(4)?,
        _ => return None,
    };
    if tag == 0 || end > raw.len() {
        return None;
    }
    *pos = end;
    Some((tag, wire, &raw[start..end], &raw[body..end]))
}

/// One label of a sample as written: `[key, str, num, num_unit]` (string-table
/// indices but `num`), not yet checked against the table.
pub type RawLabel = [i64; 4];

/// Reads one `Sample` message: its values into `vals`, its labels into `labels`, and
/// its location ids as raw varint bytes, returned as a slice of `b` when they are one
/// field (the usual packed case), else concatenated into `scratch` (returned as
/// `None`). `None` when malformed. The one sample reader of both of heapsnap's pprof
/// decoders (the whole-file one and the viewer's merging one).
#[inline(never)] // called per sample: see `Groups::add`
pub fn read_sample<'a>(
    b: &'a [u8],
    scratch: &mut Vec<u8>,
    vals: &mut Vec<i64>,
    labels: &mut Vec<RawLabel>,
) -> Option<Option<&'a [u8]>> {
    vals.clear();
    labels.clear();
    // Location fields seen: 0, 1 (in `one`), or more (concatenated in `scratch`).
    let mut one: Option<&'a [u8]> = None;
    let mut many = false;
    let mut pos = 0;
    while pos < b.len() {
        let (tag, wire, _, body) = field(b, &mut pos)?;
        match (tag, wire) {
            // A varint field's body is the varint's bytes, and packed varints
            // concatenate: either way the bytes are appended as they are.
            (1, 0 | 2) => {
                if many {
                    scratch.extend_from_slice(body);
                } else if let Some(first) = one {
                    scratch.clear();
                    scratch.extend_from_slice(first);
                    scratch.extend_from_slice(body);
                    many = true;
                } else {
                    one = Some(body);
                }
            }
            (2, 0) => vals.push(varint(body, &mut 0)? as i64),
            (2, 2) => {
                let mut p = 0;
                while p < body.len() {
                    vals.push(varint(body, &mut p)? as i64);
                }
            }
            (3, 2) => {
                let mut label = [0i64; 4];
                let mut p = 0;
                while p < body.len() {
                    let (t, w, _, v) = field(body, &mut p)?;
                    if let Some(slot) = label.get_mut((t as usize).wrapping_sub(1)) {
                        if w != 0 {
                            return None;
                        }
                        *slot = varint(v, &mut 0)? as i64;
                    }
                }
                labels.push(label);
            }
            (1..=3, _) => return None,
            _ => {} // unknown field: skipped, as protobuf requires
        }
    }
    if !many {
        scratch.clear();
        if one.is_none() {
            one = Some(&[]);
        }
    }
    Some(if many { None } else { one })
}

/// Appends the position of each id of a stack (`ids`: its varints, as written) that
/// `table` holds (id → position, `u32::MAX` where none; ids past its end are none),
/// skipping the others. The analysis index's lookup, per frame of every sample: here,
/// with the varints decoded in line, at opt-level 3 (in the viewer a call per id to a
/// decoder and one to the lookup took 80 ms of a 5 MB Go heap profile's first flame
/// graph).
#[inline(never)]
pub fn positions(table: &[u32], ids: &[u8], out: &mut Vec<u32>) {
    let mut pos = 0;
    while pos < ids.len() {
        if let Some(i) = position(table, next_id(ids, &mut pos)) {
            out.push(i);
        }
    }
}

/// The first id of a stack (as [`positions`] reads it) that `table` does not hold:
/// validation's check of every sample's locations.
#[inline(never)]
pub fn first_missing(table: &[u32], ids: &[u8]) -> Option<u64> {
    let mut pos = 0;
    while pos < ids.len() {
        let id = next_id(ids, &mut pos);
        if position(table, id).is_none() {
            return Some(id);
        }
    }
    None
}

/// `id`'s position in a dense id table (see [`positions`]).
#[inline(always)]
fn position(table: &[u32], id: u64) -> Option<u32> {
    let i = *table.get(usize::try_from(id).ok()?)?;
    (i != u32::MAX).then_some(i)
}

/// The varint at `*pos` of bytes known to be whole varints (a cut one ends them).
#[inline(always)]
fn next_id(ids: &[u8], pos: &mut usize) -> u64 {
    let (mut v, mut shift) = (0u64, 0u32);
    while *pos < ids.len() {
        let b = ids[*pos];
        *pos += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// Appends the byte runs `bytes[at[i]]` (start, length) of `items` from the last to the
/// first: the analysis index writing a sample's frames root first from its locations'.
/// A byte loop, not `extend_from_slice`: the runs are 1–3 bytes, and a copy of so few
/// is a call to a bulk copy in the wasm.
#[inline(never)]
pub fn append_runs_reversed(out: &mut Vec<u8>, items: &[u32], bytes: &[u8], at: &[(u32, u32)]) {
    for &i in items.iter().rev() {
        let (s, n) = at[i as usize];
        for &b in &bytes[s as usize..(s + n) as usize] {
            out.push(b);
        }
    }
}

/// Bytes that cannot be a protobuf field (the caller falls back to a full decoder
/// for the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

/// Length of the top-level field at the start of `b`: `Ok(None)` when `b` ends before
/// its key and length do, `Err` when it cannot be a valid field.
#[inline(always)]
pub fn field_len(b: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut pos = 0;
    let Some(key) = varint_partial(b, &mut pos)? else {
        return Ok(None);
    };
    if key >> 3 == 0 {
        return Err(Malformed);
    }
    let total = match key & 7 {
        0 => match varint_partial(b, &mut pos)? {
            Some(_) => pos,
            None => return Ok(None),
        },
        1 => pos + 8,
        2 => match varint_partial(b, &mut pos)? {
            Some(n) => usize::try_from(n)
                .ok()
                .and_then(|n| n.checked_add(pos))
                .ok_or(Malformed)?,
            None => return Ok(None),
        },
        5 => pos + 4,
        _ => return Err(Malformed),
    };
    Ok(Some(total))
}

/// [`varint`] that tells "ends too early" (`Ok(None)`) from "malformed" (`Err`).
#[inline(always)]
fn varint_partial(b: &[u8], pos: &mut usize) -> Result<Option<u64>, Malformed> {
    let start = *pos;
    match varint(b, pos) {
        Some(v) => Ok(Some(v)),
        // Ran off the end of `b` (fewer than 10 bytes, no overflow): more may come.
        None if b.len() - start < 10 && b[start..].iter().all(|&x| x >= 0x80) => {
            *pos = start;
            Ok(None)
        }
        None => Err(Malformed),
    }
}

#[inline(always)]
pub fn varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    // One byte in line (keys, lengths, small ids and counts: most varints); longer
    // ones out of line, where the loop is not copied, unrolled, into every caller
    // (`read_sample` was 5.2 KiB of the bundle).
    let byte = *b.get(*pos)?;
    if byte < 0x80 {
        *pos += 1;
        return Some(u64::from(byte));
    }
    varint_long(b, pos)
}

/// [`varint`] of more than one byte.
#[inline(never)]
fn varint_long(b: &[u8], pos: &mut usize) -> Option<u64> {
    // A plain loop: iterator adapters are not inlined in the size-optimized wasm build.
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None; // overflows 64 bits (prost rejects it too)
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// FxHash (rustc's hasher) over the words of a merge key, with a final mix (the table
/// picks slots from the top bits and compares the top half; the mix spreads every word
/// into both halves).
#[derive(Clone, Copy)]
struct Fx(u64);

impl Fx {
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }
}

/// One box of the flame graph (heapsnap-profile's `analysis::FlameTree` holds them in
/// pre-order; the tree is built here, at full speed, by [`FlameNodes`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlameNode {
    /// Function-level node id (an index into heapsnap-profile's `FlameTree::names`); the root is `u32::MAX`.
    pub name: u32,
    /// Depth: 0 for the root, 1 for outermost callers.
    pub depth: u32,
    /// This frame was inlined into its parent (drawn marked).
    pub inlined: bool,
    /// Net value of the samples through this path (new − base in a diff).
    pub value: i64,
    /// Width in value units: the sum of |sample values| (= `value` for ordinary
    /// profiles; new + base in a diff, where `width - shrank()` is the new share). A
    /// node's children lie side by side from its left edge, in order, and its own
    /// value right of them, so left edges are not kept (8 bytes a node: 7 MB of the
    /// first flame tree of a 5 MB Go heap profile): they are summed as a walk goes.
    pub width: i64,
    /// Index one past this node's last descendant (pre-order), for skipping subtrees.
    pub end: u32,
}

impl FlameNode {
    /// Sum of |negative| sample values through this node: the base's share in a diff.
    /// (Width counts them once, value takes them off once: `width - value` is twice.)
    pub fn shrank(&self) -> i64 {
        self.width.wrapping_sub(self.value) / 2
    }
}

/// Stacks' frames as symbols, `rank << 1 | inlined` where `rank` is the function's
/// alphabetical rank, each held in `width` bytes, big-endian: one byte a frame where the
/// profile has at most 128 functions, two up to 32,768, four past that. Byte order
/// is then symbol order, so stacks compare as byte strings. A `u32` a frame was most of
/// the viewer's memory on a Go heap profile of 105 functions (its 17.6 million frames,
/// 70 MB, for a stack sort that needs 17.6 MB).
#[derive(Clone, Debug)]
pub struct Symbols {
    bytes: Vec<u8>,
    width: usize,
}

impl Default for Symbols {
    /// None, one byte each (never width 0, which would hold none).
    fn default() -> Self {
        Symbols::below(0)
    }
}

impl Symbols {
    /// Room for symbols below `count`, none held yet.
    pub fn below(count: usize) -> Self {
        let width = match count {
            0..=0x100 => 1,
            0x101..=0x1_0000 => 2,
            _ => 4,
        };
        Symbols {
            bytes: Vec::new(),
            width,
        }
    }

    /// Empty, with the width of `other` (so that its symbols can be copied in).
    pub fn like(other: &Symbols) -> Self {
        Symbols {
            bytes: Vec::new(),
            width: other.width,
        }
    }

    /// Room for `n` more symbols, exactly.
    pub fn reserve(&mut self, n: usize) {
        self.bytes.reserve_exact(n * self.width);
    }

    /// Appends a symbol, which must be below the count this was made for.
    #[inline]
    pub fn push(&mut self, s: u32) {
        debug_assert!(self.width == 4 || s >> (8 * self.width) == 0);
        match self.width {
            1 => self.bytes.push(s as u8),
            2 => self.bytes.extend_from_slice(&(s as u16).to_be_bytes()),
            _ => self.bytes.extend_from_slice(&s.to_be_bytes()),
        }
    }

    /// The number of symbols held.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    /// No symbol held.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Keeps the first `n` symbols.
    pub fn truncate(&mut self, n: usize) {
        self.bytes.truncate(n * self.width);
    }

    /// Appends symbols `range` of `other` (nothing of a range past its end), which has
    /// this one's width.
    pub fn extend_from(&mut self, other: &Symbols, range: std::ops::Range<usize>) {
        debug_assert_eq!(self.width, other.width);
        self.bytes.extend_from_slice(other.get(range));
    }

    /// Symbols `range` as their bytes (none for a range past the end).
    fn get(&self, range: std::ops::Range<usize>) -> &[u8] {
        let w = self.width;
        self.bytes
            .get(range.start * w..range.end * w)
            .unwrap_or(&[])
    }

    /// The symbol at `i`, if there is one.
    pub fn at(&self, i: usize) -> Option<u32> {
        let b = self.get(i..i + 1);
        (!b.is_empty()).then(|| symbol(b))
    }
}

/// A symbol from its big-endian bytes.
#[inline]
fn symbol(b: &[u8]) -> u32 {
    b.iter().fold(0, |v, &x| v << 8 | u32::from(x))
}

/// Stacks being sorted, given as spans `(start, len, value)` of `seq` (in symbols),
/// each a root-first sequence of [`Symbols`]: lexicographically, a stack that is a
/// prefix of another after it (so a node's self value lands right of its children).
/// Sorted a slice at a time ([`StackSort::step`]), so that a caller with an event loop
/// to serve (the viewer) can let it run between slices.
///
/// An LCP merge sort (Ng and Kakehi): each stack carries the length of its common
/// prefix with the one before it, so a comparison starts past what two stacks are
/// known to share. Stacks of a real program share long prefixes (main, the runtime,
/// the framework), and a plain merge sort compared those again at every level: half
/// the time of a 2-million-node tree. The prefixes the sort leaves are also what a
/// tree needs (the nodes a stack opens). O(n log n) comparisons whatever the input: a
/// crafted profile cannot make it quadratic. A bottom-up merge (its runs merged in
/// pairs, widths 1, 2, 4…); no `sort_unstable_by`, whose code would be kilobytes more
/// of the viewer's bundle.
pub struct StackSort {
    seq: Symbols,
    spans: Vec<(u32, u32, i64)>,
    /// Per span: the length of its common prefix with the span before it in its sorted
    /// run (a run's first: 0).
    lcp: Vec<u32>,
    /// Spans are sorted in runs of this width (the whole of them once sorted), the next
    /// pair of runs to merge at `at`.
    run: usize,
    at: usize,
    /// The left run of a merge, and its prefixes.
    tmp: Vec<(u32, u32, i64)>,
    tmp_lcp: Vec<u32>,
    /// A merge left at the end of a slice, to go on with: its [`Cursor`].
    cursor: Option<Cursor>,
}

/// Where a merge stands: the next stack of the left run (in `tmp`) and of the right
/// run (in place), and each one's common prefix with the stack merged last.
type Cursor = (usize, usize, u32, u32);

impl StackSort {
    /// The stacks to sort; nothing is done yet.
    pub fn new(seq: Symbols, spans: Vec<(u32, u32, i64)>) -> Self {
        StackSort {
            seq,
            lcp: vec![0; spans.len()],
            spans,
            run: 1,
            at: 0,
            tmp: Vec::new(),
            tmp_lcp: Vec::new(),
            cursor: None,
        }
    }

    /// Merges runs until about `n` stacks are moved (a merge left mid-way when its
    /// slice is up, so that no slice is the whole last merge): true when all are sorted.
    #[inline(never)]
    pub fn step(&mut self, n: usize) -> bool {
        let len = self.spans.len();
        let mut moved = 0;
        while moved < n && self.run < len {
            let (at, w) = (self.at, self.run);
            let end = len.min(at + 2 * w);
            if w < end - at {
                let (part, lcp) = (&mut self.spans[at..end], &mut self.lcp[at..end]);
                let from = match self.cursor.take() {
                    Some(c) => c,
                    None => {
                        // The left run aside; the merged stacks fill `part` from its
                        // start.
                        self.tmp.clear();
                        self.tmp.extend_from_slice(&part[..w]);
                        self.tmp_lcp.clear();
                        self.tmp_lcp.extend_from_slice(&lcp[..w]);
                        (0, w, 0, 0)
                    }
                };
                let left = (&self.tmp[..], &self.tmp_lcp[..]);
                self.cursor = merge(&self.seq, (part, lcp), w, left, from, n - moved);
                if self.cursor.is_some() {
                    return false;
                }
            }
            moved += end - at;
            self.at = end;
            if end == len {
                (self.at, self.run) = (0, 2 * w);
            }
        }
        self.run >= len
    }

    /// The stacks in order, front-coded (the rest of the sort done in one go): per
    /// stack `(n, lcp, value)`, its stack being the one before cut to `lcp` frames,
    /// then its next `n` frames of the returned tails.
    pub fn finish(mut self) -> (Symbols, Vec<(u32, u32, i64)>) {
        self.step(usize::MAX);
        let mut tails = Symbols::like(&self.seq);
        for (sp, &l) in self.spans.iter_mut().zip(&self.lcp) {
            let (start, end) = ((sp.0 + l) as usize, (sp.0 + sp.1) as usize);
            tails.extend_from(&self.seq, start..end);
            *sp = (sp.1 - l, l, sp.2);
        }
        (tails, self.spans)
    }
}

/// The nodes of a flame tree being built, pre-order, from stacks (see [`StackSort`]
/// for their form): sorted here ([`FlameNodes::new`]), or in order already with
/// only the frames past each one's common prefix with the one before
/// ([`FlameNodes::sorted`]: the viewer sorts a profile's samples once and builds every
/// tree after from that). `by_rank[rank]` is a rank's name id. Built a slice of
/// stacks at a time ([`FlameNodes::step`]); [`FlameNodes::finish`] builds what is left
/// in one go.
///
/// Built without hashing: in sorted order each stack opens only the nodes past its
/// common prefix with the one before. The per-stack work is in functions called per
/// stack: V8 switches a wasm function to optimized code only on a later call.
pub struct FlameNodes {
    sort: StackSort,
    /// Once sorted: `sort`'s spans cut to their frames past the common prefix.
    cut: bool,
    by_rank: Vec<u32>,
    nodes: Vec<FlameNode>,
    /// The nodes from the root to the last stack's leaf.
    path: Vec<usize>,
    /// The next span to add.
    next: usize,
}

impl FlameNodes {
    /// The stacks to sort and build from; nothing is done yet.
    pub fn new(seq: Symbols, spans: Vec<(u32, u32, i64)>, by_rank: Vec<u32>) -> Self {
        Self::with(StackSort::new(seq, spans), false, by_rank)
    }

    /// Stacks in sorted order, each span holding only its frames past `lcp` (its
    /// common prefix with the stack before); nothing is built yet.
    pub fn sorted(
        seq: Symbols,
        spans: Vec<(u32, u32, i64)>,
        lcp: Vec<u32>,
        by_rank: Vec<u32>,
    ) -> Self {
        let sort = StackSort {
            seq,
            spans,
            lcp,
            run: usize::MAX,
            at: 0,
            tmp: Vec::new(),
            tmp_lcp: Vec::new(),
            cursor: None,
        };
        Self::with(sort, true, by_rank)
    }

    fn with(sort: StackSort, cut: bool, by_rank: Vec<u32>) -> Self {
        FlameNodes {
            sort,
            cut,
            by_rank,
            nodes: Vec::new(),
            path: vec![0],
            next: 0,
        }
    }

    /// Sorts or adds the next `n` stacks, about (a run sorted, or a pair of runs merged,
    /// at a time): true when every stack is in.
    pub fn step(&mut self, n: usize) -> bool {
        if !self.cut {
            if !self.sort.step(n) {
                return false;
            }
            for (sp, &l) in self.sort.spans.iter_mut().zip(&self.sort.lcp) {
                (sp.0, sp.1) = (sp.0 + l, sp.1.saturating_sub(l));
            }
            self.cut = true;
        }
        let StackSort {
            seq, spans, lcp, ..
        } = &self.sort;
        if self.nodes.is_empty() {
            // The root, and room for every node: the exact count first, as growing a
            // Vec of a million nodes by doubling would hold two copies at once (wasm
            // memory never shrinks back).
            let count = spans.iter().map(|sp| sp.1 as usize).sum::<usize>();
            self.nodes.reserve_exact(count + 1);
            self.nodes.push(FlameNode {
                name: u32::MAX,
                depth: 0,
                inlined: false,
                value: 0,
                width: 0,
                end: 0,
            });
        }
        let end = spans.len().min(self.next.saturating_add(n));
        for (sp, &l) in spans[self.next..end].iter().zip(&lcp[self.next..end]) {
            add_stack(
                &mut self.nodes,
                &mut self.path,
                seq.get(sp.0 as usize..(sp.0 + sp.1) as usize),
                seq.width,
                l as usize,
                sp.2,
                &self.by_rank,
            );
        }
        self.next = end;
        let done = end == spans.len();
        if done {
            // Every node still open ends with the tree.
            while self.path.len() > 1 {
                close(&mut self.nodes, &mut self.path);
            }
            self.nodes[0].end = self.nodes.len() as u32;
        }
        done
    }

    /// The nodes, pre-order, with the stacks not yet added.
    pub fn finish(mut self) -> Vec<FlameNode> {
        while !self.step(usize::MAX) {}
        self.nodes
    }
}

/// Merges the sorted runs `part[..w]` and `part[w..]` of `spans` (with their prefix
/// lengths, `lcp`) into one, in place, the left run set aside in `left`, from `at`
/// for at most `budget` stacks: where it stopped, or `None` once merged. LCP merge:
/// `ha` and `hb` are each run head's common prefix with the stack merged last; the
/// head sharing more with it is the smaller, and only when they share the same does a
/// comparison read the stacks, from there on.
#[inline(never)]
fn merge(
    seq: &Symbols,
    (part, lcp): (&mut [(u32, u32, i64)], &mut [u32]),
    w: usize,
    (tmp, tmp_lcp): (&[(u32, u32, i64)], &[u32]),
    at: Cursor,
    budget: usize,
) -> Option<Cursor> {
    let key = |s: &(u32, u32, i64)| seq.get(s.0 as usize..(s.0 + s.1) as usize);
    let width = seq.width;
    let len = part.len();
    let (mut i, mut j, mut ha, mut hb) = at;
    let stop = i.saturating_add(j).saturating_add(budget);
    // The merged stacks fill `part` from its start, never past the right run's next
    // unread stack (nor its prefix length, read only once the stack before is out).
    while i < w && j < len {
        if i + j >= stop {
            return Some((i, j, ha, hb));
        }
        let o = i + j - w;
        let right = if ha == hb {
            let (a, b) = (key(&tmp[i]), key(&part[j]));
            // In bytes: the first that differs orders the symbols it is in.
            let k = lcp_from(a, b, ha as usize * width);
            // Past the common prefix: a stack that ends there sorts last.
            let end = |s: &[u8]| s.get(k).map_or(256, |&x| u16::from(x));
            let right = end(b) < end(a);
            *if right { &mut ha } else { &mut hb } = (k / width) as u32;
            right
        } else {
            hb > ha
        };
        if right {
            (part[o], lcp[o]) = (part[j], hb);
            j += 1;
            hb = lcp.get(j).copied().unwrap_or(0);
        } else {
            (part[o], lcp[o]) = (tmp[i], ha);
            i += 1;
            ha = tmp_lcp.get(i).copied().unwrap_or(0);
        }
    }
    if i < w {
        let o = i + j - w;
        part[o..].copy_from_slice(&tmp[i..]);
        lcp[o..].copy_from_slice(&tmp_lcp[i..]);
        lcp[o] = ha;
    } else if j < len {
        lcp[j] = hb;
    }
    None
}

/// Length of the common prefix of two stacks' bytes, known to share their first `h`.
#[inline(never)]
fn lcp_from(a: &[u8], b: &[u8], h: usize) -> usize {
    let (a, b) = (a.get(h..).unwrap_or(&[]), b.get(h..).unwrap_or(&[]));
    h + a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Adds one stack (root first, in sorted order, sharing its first `lcp` frames with the
/// stack before; `new` its frames after those, [`Symbols`] of `width` bytes) of value
/// `v`: closes the nodes of `path` past the common prefix, opens new ones, adds `v` to
/// the leaf.
#[inline(never)]
fn add_stack(
    nodes: &mut Vec<FlameNode>,
    path: &mut Vec<usize>,
    new: &[u8],
    width: usize,
    lcp: usize,
    v: i64,
    by_rank: &[u32],
) {
    while path.len() > lcp + 1 {
        close(nodes, path);
    }
    for key in new.chunks_exact(width).map(symbol) {
        path.push(nodes.len());
        nodes.push(FlameNode {
            name: by_rank[(key >> 1) as usize],
            depth: path.len() as u32 - 1,
            inlined: key & 1 == 1,
            value: 0,
            width: 0,
            end: 0,
        });
    }
    // The value goes on the leaf; its ancestors get it when their children close, so
    // a stack costs the nodes it opens and closes, not its depth.
    let leaf = &mut nodes[*path.last().unwrap_or(&0)];
    leaf.value = leaf.value.wrapping_add(v);
    leaf.width = leaf.width.wrapping_add(v.wrapping_abs());
}

/// Closes the last node of `path`: its subtree ends here, and its value and width go
/// to its parent (whose next child starts right of it).
fn close(nodes: &mut [FlameNode], path: &mut Vec<usize>) {
    let o = path.pop().unwrap_or(0);
    let (len, n) = (nodes.len() as u32, nodes[o]);
    nodes[o].end = len;
    let p = &mut nodes[*path.last().unwrap_or(&0)];
    p.value = p.value.wrapping_add(n.value);
    p.width = p.width.wrapping_add(n.width);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One-byte varints in line, longer ones out of line: the same values, positions
    /// and refusals as protobuf's decoding, at every length.
    #[test]
    fn varints_of_every_length_read_as_protobuf_reads_them() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            1 << 35,
            u64::MAX >> 1,
            u64::MAX,
        ] {
            let mut b = vec![9u8];
            let mut x = v;
            while x >= 0x80 {
                b.push(x as u8 | 0x80);
                x >>= 7;
            }
            b.push(x as u8);
            b.push(5);
            let mut pos = 1;
            assert_eq!(varint(&b, &mut pos), Some(v), "{v}");
            assert_eq!(pos, b.len() - 1, "{v}");
            // Cut inside: no value.
            let mut pos = 1;
            assert_eq!(varint(&b[..b.len() - 2], &mut pos), None, "{v} cut");
        }
        // Past 64 bits: a tenth byte over 1, or an eleventh byte.
        let mut pos = 0;
        assert_eq!(
            varint(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut pos
            ),
            None
        );
        let mut pos = 0;
        assert_eq!(varint(&[0x80; 11], &mut pos), None);
        let mut pos = 0;
        assert_eq!(varint(&[], &mut pos), None);
    }

    #[test]
    fn field_len_tells_incomplete_from_malformed() {
        // Field 2, length-delimited, 3 bytes of body.
        assert_eq!(field_len(&[0x12, 3, 1, 2, 3]), Ok(Some(5)));
        assert_eq!(
            field_len(&[0x12, 3, 1]),
            Ok(Some(5)),
            "length known, body to come"
        );
        assert_eq!(field_len(&[0x12]), Ok(None), "length still to come");
        assert_eq!(
            field_len(&[0x12, 0x80]),
            Ok(None),
            "length varint to continue"
        );
        assert_eq!(field_len(&[]), Ok(None));
        assert_eq!(field_len(&[0x08, 0x96, 0x01]), Ok(Some(3)), "varint field");
        assert_eq!(field_len(&[0x02, 0]), Err(Malformed), "tag 0");
        assert_eq!(field_len(&[0x0f]), Err(Malformed), "wire type 7");
        assert_eq!(
            field_len(
                &[0x12; 1]
                    .iter()
                    .chain(&[0xff; 10])
                    .copied()
                    .collect::<Vec<_>>()
            ),
            Err(Malformed),
            "length longer than 64 bits"
        );
    }

    #[test]
    fn groups_merge_equal_stacks_and_keep_different_ones_apart() {
        let mut g = Groups::default();
        let (a, b) = ([1u8, 2, 3], [1u8, 2, 4]);
        for _ in 0..40 {
            // More than a batch, so several flushes happen.
            g.add(&a, &[1, 10], 0).unwrap();
            g.add(&b, &[2, 20], 0).unwrap();
        }
        g.add(&a, &[-1, -10], 0).unwrap(); // other signs: its own group
        g.add(&a, &[5, 50], 7).unwrap(); // other label set: its own group
        g.flush().unwrap();
        assert_eq!(g.len(), 4);
        let groups: Vec<(Vec<u64>, Vec<i64>, u32)> = (0..g.len())
            .map(|k| {
                let (ids, vals, set) = g.group(k);
                (ids.collect(), vals.collect(), set)
            })
            .collect();
        assert_eq!(
            groups,
            [
                (vec![1, 2, 3], vec![40, 400], 0),
                (vec![1, 2, 4], vec![80, 800], 0),
                (vec![1, 2, 3], vec![-1, -10], 0),
                (vec![1, 2, 3], vec![5, 50], 7),
            ]
        );
        // Location bytes that are not varints are refused when their batch is merged.
        let mut bad = Groups::default();
        bad.add(&[0x80], &[1], 0).unwrap();
        assert_eq!(bad.flush(), None);
    }

    /// A stack's location bytes: id `i + 1` (as a varint), then `n - 1` ids 1.
    fn id_stack(i: u64, n: usize) -> Vec<u8> {
        let mut b = Vec::new();
        let mut x = i + 1;
        while x >= 0x80 {
            b.push(x as u8 | 0x80);
            x >>= 7;
        }
        b.push(x as u8);
        b.resize(b.len() + n - 1, 1);
        b
    }

    /// The table doubles by moving its slots; after `truncate` drops it, groups left
    /// are found again by a later sample (the table made again from their records).
    #[test]
    fn groups_are_found_across_growth_and_after_truncation() {
        let stack = |i: u64| id_stack(i, 1);
        let mut g = Groups::default();
        for round in 0..2 {
            for i in 0..5_000u64 {
                g.add(&stack(i), &[round + 1], 0).unwrap();
            }
        }
        g.flush().unwrap();
        assert_eq!(g.len(), 5_000);
        for k in [0, 1_234, 4_999] {
            let (ids, vals, _) = g.group(k);
            assert_eq!(ids.collect::<Vec<_>>(), [k as u64 + 1]);
            assert_eq!(vals.collect::<Vec<_>>(), [3]);
        }
        g.truncate(3_000);
        g.add(&stack(7), &[10], 0).unwrap();
        g.add(&stack(4_000), &[10], 0).unwrap();
        g.flush().unwrap();
        assert_eq!(g.len(), 3_001, "stack 7 merged, stack 4000 a new group");
        assert_eq!(g.group(7).1.collect::<Vec<_>>(), [13]);
        // Ids 1..=5000 seen (the range is of every group made, truncated or not).
        assert!(g.ids_below(5_000) && !g.ids_below(4_999));
    }

    #[test]
    fn records_fill_chunks_and_a_long_one_has_its_own() {
        let stack = id_stack;
        // 40,000 groups (about 400,000 words: several chunks);
        // four of them 600,000 frames long, longer than a chunk.
        let len = |i: u64| {
            if i % 10_000 == 5 {
                600_000
            } else {
                1 + i as usize % 50
            }
        };
        let mut g = Groups::default();
        for round in 1..=2 {
            for i in 0..40_000u64 {
                g.add(&stack(i, len(i)), &[round, -(i as i64)], 0).unwrap();
            }
        }
        g.flush().unwrap();
        assert_eq!(g.len(), 40_000);
        let check = |g: &Groups, k: usize, sum: i64| {
            let (ids, vals, _) = g.group(k);
            let ids: Vec<u64> = ids.collect();
            assert_eq!(ids.len(), len(k as u64), "group {k}");
            assert_eq!(ids[0], k as u64 + 1, "group {k}");
            assert!(ids[1..].iter().all(|&id| id == 1), "group {k}");
            assert_eq!(vals.collect::<Vec<_>>(), [sum, -2 * k as i64], "group {k}");
        };
        for k in (0..40_000)
            .step_by(997)
            .chain([5, 6, 10_004, 10_005, 39_999])
        {
            check(&g, k, 3);
        }
        let chunks = &g.m.arena.chunks;
        assert!(chunks.len() > 8, "{} chunks", chunks.len());
        assert_eq!(chunks.iter().filter(|c| c.len() > CHUNK).count(), 4);
        // Truncated mid-chunk: the groups before are whole, the chunks after given
        // back, and a sample after finds its group or makes one.
        let before = chunks.len();
        g.truncate(20_003);
        assert!(g.m.arena.chunks.len() < before);
        for k in [0, 5, 10_005, 20_002] {
            check(&g, k, 3);
        }
        // (Values of the same signs, or the sample would make a group of its own.)
        g.add(&stack(10_005, len(10_005)), &[4, -1], 0).unwrap();
        g.add(&stack(30_000, 3), &[4, 0], 0).unwrap();
        g.flush().unwrap();
        assert_eq!(g.len(), 20_004);
        assert_eq!(g.group(10_005).1.collect::<Vec<_>>(), [7, -20_011]);
        assert_eq!(g.group(20_003).0.count(), 3);
        // Truncated at a long record: its chunk, past CHUNK words of room, is the
        // last, emptied; then more than a chunk of small records, which may fill it
        // only as far as a record can start within 16 bits.
        g.truncate(10_005);
        for i in 0..12_000u64 {
            g.add(&stack(50_000 + i, 20), &[1, 0], 0).unwrap();
        }
        g.flush().unwrap();
        assert_eq!(g.len(), 22_005);
        check(&g, 10_004, 3);
        for k in [10_005, 16_000, 17_500, 22_004] {
            let ids: Vec<u64> = g.group(k).0.collect();
            assert_eq!(ids[0], 50_000 + (k - 10_005) as u64 + 1, "group {k}");
            assert_eq!(ids.len(), 20, "group {k}");
            assert_eq!(g.group(k).1.collect::<Vec<_>>(), [1, 0], "group {k}");
        }
    }

    #[test]
    fn a_groups_ids_decode_from_its_key_across_words() {
        // Varints of 1 to 10 bytes, so they straddle the key's 8-byte words.
        let ids = [
            1u64,
            300,
            70_000,
            5,
            1 << 40,
            u64::MAX,
            127,
            128,
            0,
            1 << 21,
        ];
        let mut key = Vec::new();
        for &id in &ids {
            let mut v = id;
            while v >= 0x80 {
                key.push(v as u8 | 0x80);
                v >>= 7;
            }
            key.push(v as u8);
        }
        let mut g = Groups::default();
        g.add(&key, &[7], 0).unwrap();
        g.add(&key[..key.len() - 3], &[1], 0).unwrap(); // the last id cut short: bad
        assert!(g.flush().is_none(), "a key ending mid-varint is refused");
        let mut g = Groups::default();
        g.add(&key, &[7], 0).unwrap();
        g.add(&key, &[8], 0).unwrap();
        g.flush().unwrap();
        let (got, vals, _) = g.group(0);
        assert_eq!(got.len(), ids.len(), "exact size before decoding");
        assert_eq!(got.collect::<Vec<_>>(), ids);
        assert_eq!(vals.collect::<Vec<_>>(), [15]);
    }

    /// Lexicographic order of two stacks, a stack that is a prefix of another after it.
    fn cmp_stacks(a: &[u32], b: &[u32]) -> std::cmp::Ordering {
        a.iter()
            .zip(b)
            .map(|(x, y)| x.cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or_else(|| b.len().cmp(&a.len()))
    }

    /// Sorts `spans` of `seq` in slices of about `slice` stacks, checking against a
    /// whole sort: the order, that each stack is there once, and each stack's common
    /// prefix with the one before. Returns the number of slices.
    fn check_sort(seq: Vec<u32>, spans: Vec<(u32, u32, i64)>, slice: usize) -> usize {
        check_sort_as(seq, spans, slice, 0)
    }

    /// [`check_sort`] with symbols as wide as for `count` (see [`symbols`]).
    fn check_sort_as(
        seq: Vec<u32>,
        spans: Vec<(u32, u32, i64)>,
        slice: usize,
        count: usize,
    ) -> usize {
        let key = |s: &(u32, u32, i64)| seq[s.0 as usize..(s.0 + s.1) as usize].to_vec();
        let mut whole = spans.clone();
        whole.sort_by(|a, b| cmp_stacks(&key(a), &key(b)));
        let n = spans.len();
        let mut b = StackSort::new(symbols(&seq, count), spans);
        let mut steps = 1;
        while !b.step(slice) {
            steps += 1;
        }
        let got: Vec<_> = b.spans.iter().map(key).collect();
        let want: Vec<_> = whole.iter().map(key).collect();
        assert_eq!(got, want);
        let mut values: Vec<i64> = b.spans.iter().map(|s| s.2).collect();
        values.sort_unstable();
        assert_eq!(values, (0..n as i64).collect::<Vec<_>>());
        let mut prev: Vec<u32> = Vec::new();
        for (k, (s, &l)) in got.iter().zip(&b.lcp).enumerate() {
            let want = s.iter().zip(&prev).take_while(|(x, y)| x == y).count();
            assert_eq!(l as usize, want, "common prefix of stack {k}");
            prev = s.clone();
        }
        steps
    }

    /// `n` stacks of 1 to `depth` frames, each frame `frame(x, pick)` of the stack's
    /// random word and a pick of four from it: the sequence and the spans, valued by
    /// their index.
    #[allow(clippy::type_complexity)]
    fn random_stacks(
        n: i64,
        seed: u32,
        depth: u32,
        frame: impl Fn(u32, u32) -> u32,
    ) -> (Vec<u32>, Vec<(u32, u32, i64)>) {
        let (mut seq, mut spans, mut x) = (Vec::new(), Vec::new(), seed);
        for v in 0..n {
            let start = seq.len() as u32;
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            for d in 0..1 + (x >> 16) % depth {
                seq.push(frame(x, (x >> (2 * d + 3)) & 3));
            }
            spans.push((start, seq.len() as u32 - start, v));
        }
        (seq, spans)
    }

    /// `seq` as [`Symbols`] of the width for symbols below `count`, or of the least
    /// width that holds them.
    fn symbols(seq: &[u32], count: usize) -> Symbols {
        let top = seq.iter().map(|&x| x as usize + 1).max().unwrap_or(0);
        let mut s = Symbols::below(count.max(top));
        for &x in seq {
            s.push(x);
        }
        assert_eq!(s.len(), seq.len());
        s
    }

    #[test]
    fn symbols_are_as_wide_as_their_count_needs_and_sort_as_numbers() {
        for (count, width) in [(0, 1), (256, 1), (257, 2), (65_536, 2), (65_537, 4)] {
            assert_eq!(Symbols::below(count).width, width, "{count}");
        }
        // Every width keeps the symbols, and byte order is their order.
        for (count, xs) in [
            (256, vec![0, 1, 127, 128, 255]),
            (65_536, vec![0, 255, 256, 511, 65_535]),
            (1 << 31, vec![0, 65_535, 65_536, 1 << 24, u32::MAX >> 1]),
        ] {
            let s = symbols(&xs, count);
            let got: Vec<u32> = (0..s.len()).filter_map(|i| s.at(i)).collect();
            assert_eq!(got, xs);
            for (i, x) in xs.iter().enumerate().skip(1) {
                assert!(s.get(i - 1..i) < s.get(i..i + 1), "{count}: {x}");
            }
        }
    }

    #[test]
    fn stacks_sort_alike_at_every_symbol_width() {
        // Stacks whose symbols differ in their low byte only, their high one only, or
        // both, at each width: the order and the common prefixes are the symbols'.
        let (seq, spans) = random_stacks(800, 3, 5, |x, pick| {
            [0, 1, 256, 257][pick as usize] * (1 + (x >> 30))
        });
        // One byte a frame, at its top values: a stack that ends sorts after one that
        // goes on with 255.
        let (mut seq1, mut spans1) = (Vec::new(), Vec::new());
        for (v, st) in [
            &[255u32][..],
            &[255, 255],
            &[254, 255],
            &[255, 254],
            &[0],
            &[],
        ]
        .iter()
        .enumerate()
        {
            let start = seq1.len() as u32;
            seq1.extend_from_slice(st);
            spans1.push((start, st.len() as u32, v as i64));
        }
        assert_eq!(symbols(&seq1, 0).width, 1);
        check_sort(seq1, spans1, 1);
        for count in [0, 1 << 20] {
            check_sort_as(seq.clone(), spans.clone(), 50, count);
        }
    }

    #[test]
    fn the_sliced_merge_sort_orders_stacks_as_a_whole_sort_does() {
        // 5000 stacks (several runs, an odd last one) of 1 to 6 frames over 4 names,
        // many equal or prefixes of each other.
        let (seq, spans) = random_stacks(5000, 7, 6, |_, pick| pick);
        let steps = check_sort(seq, spans, 700);
        assert!(steps > 5, "sorted in slices ({steps})");
    }

    #[test]
    fn the_merge_sort_skips_long_shared_prefixes_and_keeps_their_lengths() {
        // Deep stacks as a real program has them: a long common trunk (main, the
        // runtime), a few branches, and leaves that differ late or not at all.
        let (mut seq, mut spans, mut x) = (Vec::new(), Vec::new(), 11u32);
        for v in 0..3000 {
            let start = seq.len() as u32;
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            seq.extend(0..40u32);
            seq.extend(std::iter::repeat_n((x >> 8) % 3, ((x >> 12) % 50) as usize));
            if x >> 20 & 1 == 1 {
                seq.push((x >> 21) % 5);
            }
            spans.push((start, seq.len() as u32 - start, v));
        }
        check_sort(seq.clone(), spans.clone(), 1);
        // No slice does much more than asked, the last merges (of 2048 and 3000 stacks)
        // included: 12 levels of 3000 stacks moved, 100 at a time, is 360 slices (a
        // merge per slice, however large, is 209).
        let steps = check_sort(seq.clone(), spans.clone(), 100);
        assert!(steps >= 340, "{steps} slices");
        check_sort(seq, spans, usize::MAX);
        // Nothing, one stack, an empty stack.
        check_sort(vec![], vec![], 1);
        check_sort(vec![3], vec![(0, 1, 0)], 1);
        check_sort(vec![3], vec![(0, 1, 0), (0, 0, 1), (0, 1, 2)], 1);
    }

    #[test]
    fn flame_nodes_are_preorder_with_sorted_children() {
        // Stacks (root first, ranks << 1): [0,1] 5, [0,2] 3, [0] 2; ranks are names.
        let seq = vec![0 << 1, 2 << 1, 0 << 1, 1 << 1, 0 << 1];
        let spans = vec![(0, 2, 3), (2, 2, 5), (4, 1, 2)];
        let nodes = FlameNodes::new(symbols(&seq, 0), spans.clone(), vec![10, 11, 12]).finish();
        // The same, a stack at a time, and with wider symbols.
        for count in [0, 1000, 1 << 20] {
            let mut b = FlameNodes::new(symbols(&seq, count), spans.clone(), vec![10, 11, 12]);
            while !b.step(1) {}
            assert_eq!(b.finish(), nodes);
        }
        // The same stacks in order, given only past their common prefixes.
        let cut = vec![0 << 1, 1 << 1, 2 << 1];
        let (spans, lcp) = (vec![(0, 2, 5), (2, 1, 3), (3, 0, 2)], vec![0, 1, 1]);
        for count in [0, 1000] {
            let cut = symbols(&cut, count);
            let sorted =
                FlameNodes::sorted(cut, spans.clone(), lcp.clone(), vec![10, 11, 12]).finish();
            assert_eq!(sorted, nodes);
        }
        let got: Vec<(u32, u32, i64, i64, u32)> = nodes
            .iter()
            .map(|n| (n.name, n.depth, n.value, n.width, n.end))
            .collect();
        assert_eq!(
            got,
            [
                (u32::MAX, 0, 10, 10, 4), // root
                (10, 1, 10, 10, 4),       // 0: children 1 then 2, its own 2 to the right
                (11, 2, 5, 5, 3),
                (12, 2, 3, 3, 4),
            ]
        );
    }
}
