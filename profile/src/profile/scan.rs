//! A pass over pprof's wire bytes before prost decodes them: every field is checked as
//! prost would check it (keys, wire types, varints, lengths, UTF-8), so a malformed
//! file is reported with its byte offset and field path, and every entry prost would
//! materialize is counted against the [`Budget`], so an amplifying file (millions of
//! empty samples, locations or strings, 2 bytes each) is refused before prost
//! allocates anything for it. Allocates nothing itself.

use super::ProfileError;
use crate::limits::{over_cap, Budget};

/// How a field of a message is read.
#[derive(Clone, Copy)]
enum Kind {
    /// A single varint scalar (int64, uint64, bool).
    Varint,
    /// A repeated varint scalar, packed or not; each element an entry.
    Varints,
    /// A string (repeated: each an entry).
    Str,
    /// An embedded message (repeated: each an entry).
    Msg(&'static [Field]),
}

/// What a field's elements count towards, besides the entry budget.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Count {
    /// A table of the profile (`table-entries`).
    Table,
    /// A sample's location ids (`stack-depth`).
    Depth,
    /// A sample's labels (`labels-per-sample`).
    Labels,
    /// A location's lines (`lines-per-location`).
    Lines,
    /// Entries only (values, a singular message).
    None,
}

struct Field {
    tag: u32,
    name: &'static str,
    kind: Kind,
    /// Repeated: each element is an entry of its own.
    repeated: bool,
    count: Count,
}

const fn f(tag: u32, name: &'static str, kind: Kind) -> Field {
    Field {
        tag,
        name,
        kind,
        repeated: false,
        count: Count::None,
    }
}

const fn r(tag: u32, name: &'static str, kind: Kind, count: Count) -> Field {
    Field {
        tag,
        name,
        kind,
        repeated: true,
        count,
    }
}

use Kind::{Msg, Str, Varint, Varints};

const VALUE_TYPE: &[Field] = &[f(1, "type", Varint), f(2, "unit", Varint)];
const LABEL: &[Field] = &[
    f(1, "key", Varint),
    f(2, "str", Varint),
    f(3, "num", Varint),
    f(4, "num_unit", Varint),
];
const SAMPLE: &[Field] = &[
    r(1, "location_id", Varints, Count::Depth),
    r(2, "value", Varints, Count::None),
    r(3, "label", Msg(LABEL), Count::Labels),
];
const MAPPING: &[Field] = &[
    f(1, "id", Varint),
    f(2, "memory_start", Varint),
    f(3, "memory_limit", Varint),
    f(4, "file_offset", Varint),
    f(5, "filename", Varint),
    f(6, "build_id", Varint),
    f(7, "has_functions", Varint),
    f(8, "has_filenames", Varint),
    f(9, "has_line_numbers", Varint),
    f(10, "has_inline_frames", Varint),
];
const LINE: &[Field] = &[
    f(1, "function_id", Varint),
    f(2, "line", Varint),
    f(3, "column", Varint),
];
const LOCATION: &[Field] = &[
    f(1, "id", Varint),
    f(2, "mapping_id", Varint),
    f(3, "address", Varint),
    r(4, "line", Msg(LINE), Count::Lines),
    f(5, "is_folded", Varint),
];
const FUNCTION: &[Field] = &[
    f(1, "id", Varint),
    f(2, "name", Varint),
    f(3, "system_name", Varint),
    f(4, "filename", Varint),
    f(5, "start_line", Varint),
];
const PROFILE: &[Field] = &[
    r(1, "sample_type", Msg(VALUE_TYPE), Count::Table),
    r(2, "sample", Msg(SAMPLE), Count::Table),
    r(3, "mapping", Msg(MAPPING), Count::Table),
    r(4, "location", Msg(LOCATION), Count::Table),
    r(5, "function", Msg(FUNCTION), Count::Table),
    r(6, "string_table", Str, Count::Table),
    f(7, "drop_frames", Varint),
    f(8, "keep_frames", Varint),
    f(9, "time_nanos", Varint),
    f(10, "duration_nanos", Varint),
    f(11, "period_type", Msg(VALUE_TYPE)),
    f(12, "period", Varint),
    r(13, "comment", Varints, Count::Table),
    f(14, "default_sample_type", Varint),
    f(15, "doc_url", Varint),
];

/// prost's limit on nested messages and groups.
const RECURSION_LIMIT: u32 = 100;

/// The scan of one profile's bytes, fed whole top-level fields as they become
/// available (so an inflating reader can stop early).
pub(crate) struct Scan {
    budget: Budget,
    /// Elements seen per top-level tag (for paths and table caps).
    tables: [u64; 16],
    /// Where the next top-level field starts.
    pos: usize,
    /// The bytes are an inflated gzip stream (said in offsets).
    inflated: bool,
}

/// A field path (`sample[3].location_id`), spelled out only for an error.
#[derive(Clone, Copy)]
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    name: &'static str,
    index: Option<u64>,
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = self.parent {
            write!(f, "{p}.")?;
        }
        f.write_str(self.name)?;
        match self.index {
            Some(i) => write!(f, "[{i}]"),
            None => Ok(()),
        }
    }
}

const ROOT: Path<'static> = Path {
    parent: None,
    name: "profile",
    index: None,
};

/// The bytes being scanned, for error positions.
struct Ctx<'a> {
    raw: &'a [u8],
    inflated: bool,
    /// Where `raw` starts in the stream (offsets in errors are the stream's).
    base: usize,
}

impl Ctx<'_> {
    #[inline(never)]
    fn at(&self, offset: usize, path: &Path<'_>) -> String {
        let of = if self.inflated {
            " of the inflated data"
        } else {
            ""
        };
        format!("byte {}{of} ({path})", self.base + offset)
    }

    /// The one constructor of a wire error (not inlined into every check).
    #[cold]
    #[inline(never)]
    fn wire(&self, offset: usize, path: &Path<'_>, what: &dyn std::fmt::Display) -> ProfileError {
        ProfileError::Wire {
            offset: self.base + offset,
            inflated: self.inflated,
            path: path.to_string(),
            what: what.to_string(),
        }
    }

    /// A count past one of the per-item caps.
    #[cold]
    #[inline(never)]
    fn over_cap(
        &self,
        at: usize,
        path: &Path<'_>,
        fd: &Field,
        count: u64,
        limit: u64,
    ) -> ProfileError {
        let (name, what) = match fd.count {
            Count::Depth => ("stack-depth", "location ids in one sample's stack"),
            Count::Labels => ("labels-per-sample", "labels in one sample"),
            Count::Lines => ("lines-per-location", "lines in one location"),
            _ => ("table-entries", "entries in one table"),
        };
        let what = format!("{what} ({})", fd.name);
        over_cap(name, limit, count, what, self.at(at, path)).into()
    }
}

impl Scan {
    pub(crate) fn new(budget: Budget, inflated: bool) -> Self {
        Scan {
            budget,
            tables: [0; 16],
            pos: 0,
            inflated,
        }
    }

    /// The scanned bytes are an inflated gzip stream (said in error offsets).
    pub(crate) fn set_inflated(&mut self) {
        self.inflated = true;
    }

    /// The limits scanned against.
    pub(crate) fn limits(&self) -> &crate::limits::Limits {
        &self.budget.limits
    }

    /// Scans the whole top-level fields of `raw` (everything read so far) not yet
    /// scanned; an incomplete last field waits for more bytes.
    pub(crate) fn feed(&mut self, raw: &[u8]) -> Result<(), ProfileError> {
        while self.pos < raw.len() {
            match self.top_field(raw, self.pos, 0, false)? {
                Some(end) => self.pos = end,
                // (Only the native inflater scans while it inflates: the viewer's
                // streaming decoder makes the same check itself.)
                #[cfg(feature = "gzip")]
                None if self.inflated => return self.declared_past_cap(raw),
                None => break,
            }
        }
        Ok(())
    }

    /// A field of an inflating stream, incomplete so far, declared to end past the
    /// inflated-size cap: refused now, before its bytes are inflated into memory.
    #[cfg(feature = "gzip")]
    #[inline(never)]
    fn declared_past_cap(&self, raw: &[u8]) -> Result<(), ProfileError> {
        let cap = self.budget.limits.inflated_cap();
        match pprof_scan::field_len(&raw[self.pos..]) {
            Ok(Some(n)) if self.pos.saturating_add(n) > cap => {
                Err(ProfileError::TooLarge { limit: cap })
            }
            _ => Ok(()),
        }
    }

    /// The end of the input: a field left incomplete is a truncated file.
    pub(crate) fn finish(&mut self, raw: &[u8]) -> Result<(), ProfileError> {
        self.feed(raw)?;
        if self.pos < raw.len() {
            self.top_field(raw, self.pos, 0, true)?;
        }
        Ok(())
    }

    /// [`Self::field_at`] for bytes that may continue past `whole`: an error only when
    /// the field is wrong whatever follows.
    pub(crate) fn field_starting(
        &mut self,
        whole: &[u8],
        offset: usize,
    ) -> Result<(), ProfileError> {
        self.top_field(whole, 0, offset, false).map(|_| ())
    }

    /// Scans one top-level field given as its own bytes (the streaming decoder's
    /// pieces) that starts at `offset` of the stream.
    pub(crate) fn field_at(&mut self, whole: &[u8], offset: usize) -> Result<(), ProfileError> {
        self.top_field(whole, 0, offset, true).map(|_| ())
    }

    /// The top-level field at `raw[start..]` (`raw` starting at `base` of the stream):
    /// its end, or `None` when it continues past the bytes read so far (an error
    /// instead when `last`).
    fn top_field(
        &mut self,
        raw: &[u8],
        start: usize,
        base: usize,
        last: bool,
    ) -> Result<Option<usize>, ProfileError> {
        if !last && !complete(&raw[start..]) {
            return Ok(None);
        }
        let cx = Ctx {
            raw,
            inflated: self.inflated,
            base,
        };
        let mut pos = start;
        one_field(
            &cx,
            &mut self.budget,
            &mut pos,
            PROFILE,
            &ROOT,
            true,
            0,
            &mut self.tables,
        )?;
        Ok(Some(pos))
    }
}

/// Are the bytes of a whole field there (key, length and body)? Malformed bytes count
/// as complete: the scan then reports them.
fn complete(b: &[u8]) -> bool {
    let mut pos = 0;
    match varint(b, &mut pos) {
        Ok(k) => {
            let rest = &b[pos..];
            let mut p = 0;
            match k & 7 {
                0 => !matches!(varint(rest, &mut p), Err(Bad::Short)),
                1 => rest.len() >= 8,
                5 => rest.len() >= 4,
                2 => match varint(rest, &mut p) {
                    Ok(n) => n <= (rest.len() - p) as u64,
                    Err(e) => !matches!(e, Bad::Short),
                },
                // A group's end is known only by scanning it: wait for the input's end.
                3 => false,
                _ => true,
            }
        }
        Err(e) => !matches!(e, Bad::Short),
    }
}

/// One field (key and value) of a message described by `fields` at `*pos`: checked,
/// and its elements counted in `counts` (by tag: the running count of each field in
/// its message: table size, stack depth, labels, lines). `path` is the message's;
/// `top`: it is the profile itself (whose fields' paths start without `profile.`).
#[allow(clippy::too_many_arguments)]
fn one_field(
    cx: &Ctx<'_>,
    budget: &mut Budget,
    pos: &mut usize,
    fields: &'static [Field],
    path: &Path<'_>,
    top: bool,
    depth: u32,
    counts: &mut [u64; 16],
) -> Result<(), ProfileError> {
    let at = *pos;
    let (tag, wire) = key(cx.raw, pos).map_err(|e| e.at(cx, at, path, "field key"))?;
    let Some(fd) = fields.iter().find(|f| f.tag == tag) else {
        return skip(cx, pos, tag, wire, path, depth);
    };
    let count = &mut counts[fd.tag as usize];
    let sub_path = Path {
        parent: if top { None } else { Some(path) },
        name: fd.name,
        index: (fd.repeated && !matches!(fd.kind, Varints)).then_some(*count),
    };
    value(cx, budget, pos, at, wire, fd, &sub_path, depth, count)
}

/// Reads the value of a field whose key was read (`pos` after the key), checks it
/// against its description, and counts its elements in `count`.
#[allow(clippy::too_many_arguments)]
fn value(
    cx: &Ctx<'_>,
    budget: &mut Budget,
    pos: &mut usize,
    at: usize,
    wire: u8,
    fd: &Field,
    path: &Path<'_>,
    depth: u32,
    count: &mut u64,
) -> Result<(), ProfileError> {
    let n = match (fd.kind, wire) {
        (Varint | Varints, 0) => {
            varint(cx.raw, pos).map_err(|e| e.at(cx, at, path, "varint"))?;
            1
        }
        (Varints, 2) => {
            let body = bytes(cx, pos, path)?;
            packed(cx, body, at, path)?
        }
        (Str, 2) => {
            // Not UTF-8 is read lossily (`codec::lossy_strings`), as pprof reads it.
            bytes(cx, pos, path)?;
            1
        }
        (Msg(fields), 2) => {
            if depth >= RECURSION_LIMIT {
                return Err(cx.wire(at, path, &"recursion limit reached"));
            }
            let body = bytes(cx, pos, path)?;
            // The usual sample in one loop, else field by field.
            // (By its field, not by `fields`: the address of a `const` table is not
            // guaranteed to be one.)
            let plain = fd.tag == 2 && fd.name == "sample" && plain_sample(budget, body);
            let end = *pos;
            let sub = Ctx {
                raw: &cx.raw[..end],
                inflated: cx.inflated,
                base: cx.base,
            };
            let mut p = if plain { end } else { end - body.len() };
            // Per field of this message (by tag): elements so far.
            let mut counts = [0u64; 16];
            while p < end {
                one_field(
                    &sub,
                    budget,
                    &mut p,
                    fields,
                    path,
                    false,
                    depth + 1,
                    &mut counts,
                )?;
            }
            1
        }
        _ => {
            let expected = match fd.kind {
                Varint => "0 (varint)",
                Varints => "0 (varint) or 2 (packed)",
                _ => "2 (length-delimited)",
            };
            return Err(cx.wire(
                at,
                path,
                &format_args!(
                    "invalid wire type {wire} ({}), expected {expected}",
                    wire_name(wire)
                ),
            ));
        }
    };
    if !fd.repeated {
        return Ok(());
    }
    *count += n;
    budget.charge(n, || cx.at(at, path))?;
    let l = &budget.limits;
    let limit = match fd.count {
        Count::Table => l.table_entries,
        Count::Depth => l.stack_depth,
        Count::Labels => l.labels_per_sample,
        Count::Lines => l.lines_per_location,
        Count::None => return Ok(()),
    };
    if *count > limit {
        return Err(cx.over_cap(at, path, fd, *count, limit));
    }
    Ok(())
}

/// A sample in the usual layout (location ids and values as varints, packed or not;
/// labels of known varint fields), checked and charged in one loop: most of a large
/// profile's bytes, which the field-by-field walk of [`one_field`] reads at a third of
/// the speed. It accepts only what that walk accepts, and charges what it charges
/// (entries, and the depth and label limits on the totals, which only grow). `false`,
/// with nothing charged, for anything else (another layout, a malformed byte, a limit
/// passed): the walk then reads the sample and says what is wrong, and where.
fn plain_sample(budget: &mut Budget, b: &[u8]) -> bool {
    let (mut ids, mut vals, mut labels) = (0u64, 0u64, 0u64);
    let mut p = 0;
    while let Some(&k) = b.get(p) {
        p += 1;
        let ok = match k {
            // location_id, value: one varint.
            0x08 | 0x10 => {
                *(if k == 0x08 { &mut ids } else { &mut vals }) += 1;
                varint(b, &mut p).is_ok()
            }
            // location_id, value: packed.
            0x0a | 0x12 => match plain_body(b, &mut p).and_then(plain_packed) {
                Some(n) => {
                    *(if k == 0x0a { &mut ids } else { &mut vals }) += n;
                    true
                }
                None => false,
            },
            // label: key, str, num, num_unit.
            0x1a => {
                labels += 1;
                plain_body(b, &mut p).is_some_and(|l| {
                    let mut q = 0;
                    while let Some(&lk) = l.get(q) {
                        q += 1;
                        if !matches!(lk, 0x08 | 0x10 | 0x18 | 0x20) || varint(l, &mut q).is_err() {
                            return false;
                        }
                    }
                    true
                })
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    let l = &budget.limits;
    ids <= l.stack_depth
        && labels <= l.labels_per_sample
        && budget.charge_within(ids + vals + labels)
}

/// A length-delimited body for [`plain_sample`] (its length a valid varint, its bytes
/// all there).
fn plain_body<'a>(b: &'a [u8], p: &mut usize) -> Option<&'a [u8]> {
    let n = varint(b, p).ok()?;
    let body = b.get(*p..)?.get(..usize::try_from(n).ok()?)?;
    *p += body.len();
    Some(body)
}

/// The number of varints of a packed body for [`plain_sample`], as [`packed`] counts
/// and checks them: eight bytes at a time, each byte's top bit (more to come) taken
/// into a mask. A varint of ten bytes or more (a negative value) is a run of nine
/// continuation bytes, which spans two words: the bytes are then counted one by one,
/// and the tenth checked.
fn plain_packed(body: &[u8]) -> Option<u64> {
    let mut words = body.chunks_exact(8);
    let (mut n, mut run) = (0u64, 0u32);
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // Bit i of `m`: byte i continues its varint.
        let m =
            (((w >> 7) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8;
        n += u64::from(8 - m.count_ones());
        if m == 0xff {
            run += 8;
        } else {
            if run + m.trailing_ones() >= 9 {
                return packed_slowly(body);
            }
            run = m.leading_ones();
        }
        if run >= 9 {
            return packed_slowly(body);
        }
    }
    for &b in words.remainder() {
        if b < 0x80 {
            n += 1;
            run = 0;
        } else {
            run += 1;
            if run >= 9 {
                return packed_slowly(body);
            }
        }
    }
    (run == 0).then_some(n)
}

/// [`plain_packed`] a byte at a time, the tenth byte of a varint checked.
fn packed_slowly(body: &[u8]) -> Option<u64> {
    let (mut n, mut run) = (0u64, 0u32);
    for &b in body {
        run += 1;
        if run == 10 && b > 1 {
            return None;
        }
        if b < 0x80 {
            n += 1;
            run = 0;
        }
    }
    (run == 0).then_some(n)
}

/// Skips a field prost does not know, as prost does (groups included).
fn skip(
    cx: &Ctx<'_>,
    pos: &mut usize,
    tag: u32,
    wire: u8,
    path: &Path<'_>,
    depth: u32,
) -> Result<(), ProfileError> {
    let at = *pos;
    match wire {
        0 => varint(cx.raw, pos)
            .map(|_| ())
            .map_err(|e| e.at(cx, at, path, "varint")),
        1 | 5 => {
            let n = if wire == 1 { 8 } else { 4 };
            if cx.raw.len() - *pos < n {
                return Err(Bad::Short.at(cx, at, path, "fixed-size field"));
            }
            *pos += n;
            Ok(())
        }
        2 => bytes(cx, pos, path).map(|_| ()),
        3 => {
            if depth >= RECURSION_LIMIT {
                return Err(cx.wire(at, path, &"recursion limit reached"));
            }
            loop {
                let k = *pos;
                let (t, w) = key(cx.raw, pos).map_err(|e| e.at(cx, k, path, "group"))?;
                if w == 4 {
                    if t != tag {
                        return Err(cx.wire(k, path, &"unexpected end group tag"));
                    }
                    return Ok(());
                }
                skip(cx, pos, t, w, path, depth + 1)?;
            }
        }
        _ => Err(cx.wire(
            at,
            path,
            &format_args!("invalid wire type {wire} ({})", wire_name(wire)),
        )),
    }
}

fn wire_name(wire: u8) -> &'static str {
    match wire {
        0 => "varint",
        1 => "64-bit",
        2 => "length-delimited",
        3 => "start group",
        4 => "end group",
        5 => "32-bit",
        _ => "no such wire type",
    }
}

/// A read that failed before it knows where: the input ends, or the bytes are
/// malformed.
enum Bad {
    Short,
    Malformed(&'static str),
}

impl Bad {
    fn at(self, cx: &Ctx<'_>, offset: usize, path: &Path<'_>, what: &str) -> ProfileError {
        match self {
            Bad::Short => cx.wire(
                offset,
                path,
                &format_args!("the input ends inside a {what} (truncated?)"),
            ),
            Bad::Malformed(m) => cx.wire(offset, path, &m),
        }
    }
}

/// A field key: (tag, wire type), checked as prost checks it.
fn key(raw: &[u8], pos: &mut usize) -> Result<(u32, u8), Bad> {
    let k = varint(raw, pos)?;
    if k > u64::from(u32::MAX) {
        return Err(Bad::Malformed("invalid key value (over 32 bits)"));
    }
    let (tag, wire) = ((k >> 3) as u32, (k & 7) as u8);
    if wire > 5 {
        return Err(Bad::Malformed("invalid wire type (6 or 7)"));
    }
    if tag == 0 {
        return Err(Bad::Malformed("invalid field number 0"));
    }
    Ok((tag, wire))
}

/// A varint as prost reads it (at most 10 bytes, the 10th at most 1).
fn varint(raw: &[u8], pos: &mut usize) -> Result<u64, Bad> {
    let mut v = 0u64;
    for i in 0..10 {
        let Some(&b) = raw.get(*pos + i) else {
            return Err(Bad::Short);
        };
        if i == 9 && b > 1 {
            return Err(Bad::Malformed("invalid varint (over 64 bits)"));
        }
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            *pos += i + 1;
            return Ok(v);
        }
    }
    Err(Bad::Malformed("invalid varint (over 64 bits)"))
}

/// A length-delimited body.
fn bytes<'a>(cx: &Ctx<'a>, pos: &mut usize, path: &Path<'_>) -> Result<&'a [u8], ProfileError> {
    let at = *pos;
    let n = varint(cx.raw, pos).map_err(|e| e.at(cx, at, path, "length"))?;
    let left = (cx.raw.len() - *pos) as u64;
    if n > left {
        return Err(cx.wire(
            at,
            path,
            &format_args!(
                "length {n} runs past the end of its message ({left} bytes left; truncated?)"
            ),
        ));
    }
    let body = &cx.raw[*pos..*pos + n as usize];
    *pos += n as usize;
    Ok(body)
}

/// The number of varints in a packed body, each checked.
fn packed(cx: &Ctx<'_>, body: &[u8], at: usize, path: &Path<'_>) -> Result<u64, ProfileError> {
    let mut n = 0u64;
    let mut run = 0u32;
    for &b in body {
        run += 1;
        if run == 10 && b > 1 {
            return Err(cx.wire(
                at,
                path,
                &"packed field holds an invalid varint (over 64 bits)",
            ));
        }
        if b < 0x80 {
            n += 1;
            run = 0;
        }
    }
    if run != 0 {
        return Err(cx.wire(at, path, &"packed field ends inside a varint"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use proptest::prelude::*;

    /// The field-by-field walk of a sample's body (what [`plain_sample`] stands in
    /// for): its answer and the entries it charged.
    fn walked(limits: &Limits, body: &[u8]) -> (bool, u64) {
        let mut budget = Budget::new(limits, body.len() as u64);
        let before = budget.left();
        let cx = Ctx {
            raw: body,
            inflated: false,
            base: 0,
        };
        let path = Path {
            parent: None,
            name: "sample",
            index: Some(0),
        };
        let mut counts = [0u64; 16];
        let mut p = 0;
        let mut ok = true;
        while ok && p < body.len() {
            ok = one_field(
                &cx,
                &mut budget,
                &mut p,
                SAMPLE,
                &path,
                false,
                1,
                &mut counts,
            )
            .is_ok();
        }
        (ok, before - budget.left())
    }

    fn plain(limits: &Limits, body: &[u8]) -> (bool, u64) {
        let mut budget = Budget::new(limits, body.len() as u64);
        let before = budget.left();
        let ok = plain_sample(&mut budget, body);
        (ok, before - budget.left())
    }

    fn varint_bytes(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn delimited(key: u8, body: &[u8], out: &mut Vec<u8>) {
        out.push(key);
        varint_bytes(body.len() as u64, out);
        out.extend_from_slice(body);
    }

    /// A sample body as producers write it: packed or one-by-one ids and values
    /// (negative values: ten-byte varints), labels of varint fields.
    fn sample_body() -> impl Strategy<Value = Vec<u8>> {
        let ids = prop::collection::vec(prop_oneof![1u64..200, 1u64..1 << 40], 0..40);
        let vals = prop::collection::vec(prop_oneof![0i64..1000, any::<i64>()], 0..5);
        let labels =
            prop::collection::vec(prop::collection::vec((1u8..5, any::<u64>()), 0..5), 0..4);
        (ids, vals, labels, any::<bool>(), any::<bool>()).prop_map(
            |(ids, vals, labels, pack_ids, pack_vals)| {
                let mut b = Vec::new();
                if pack_ids {
                    let mut body = Vec::new();
                    ids.iter().for_each(|&i| varint_bytes(i, &mut body));
                    delimited(0x0a, &body, &mut b);
                } else {
                    for &i in &ids {
                        b.push(0x08);
                        varint_bytes(i, &mut b);
                    }
                }
                if pack_vals {
                    let mut body = Vec::new();
                    vals.iter().for_each(|&v| varint_bytes(v as u64, &mut body));
                    delimited(0x12, &body, &mut b);
                } else {
                    for &v in &vals {
                        b.push(0x10);
                        varint_bytes(v as u64, &mut b);
                    }
                }
                for l in &labels {
                    let mut body = Vec::new();
                    for &(t, v) in l {
                        body.push(t << 3);
                        varint_bytes(v, &mut body);
                    }
                    delimited(0x1a, &body, &mut b);
                }
                b
            },
        )
    }

    /// Bytes changed as a hostile file would: flipped, cut, inserted.
    fn damaged() -> impl Strategy<Value = Vec<u8>> {
        (
            sample_body(),
            prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
        )
            .prop_map(|(mut b, edits)| {
                for (at, byte, how) in edits {
                    if b.is_empty() {
                        b.push(byte);
                        continue;
                    }
                    let i = at.index(b.len());
                    match how {
                        0 => b[i] = byte,
                        1 => b.truncate(i),
                        _ => b.insert(i, byte),
                    }
                }
                b
            })
    }

    proptest! {
        /// A well-formed sample takes the fast path, which charges what the walk does.
        #[test]
        fn plain_samples_are_read_as_the_walk_reads_them(body in sample_body()) {
            let limits = Limits::default();
            prop_assert_eq!(plain(&limits, &body), walked(&limits, &body));
            prop_assert!(plain(&limits, &body).0);
        }

        /// Whatever the bytes, the fast path never accepts what the walk refuses, and
        /// charges what it does when it accepts; over a limit, it leaves the sample to
        /// the walk (which names the limit).
        #[test]
        fn the_fast_path_accepts_nothing_the_walk_refuses(body in damaged(), depth in 0u64..50, labels in 0u64..5) {
            for limits in [Limits::default(), Limits { stack_depth: depth, labels_per_sample: labels, ..Limits::default() }] {
                let (fast, charged) = plain(&limits, &body);
                if fast {
                    prop_assert_eq!((true, charged), walked(&limits, &body));
                } else {
                    prop_assert_eq!(charged, 0);
                }
            }
        }
    }

    #[test]
    fn long_varints_are_checked_at_their_tenth_byte() {
        // -1 as a varint (ten bytes, the tenth 1), at every alignment.
        for lead in 0..9 {
            let mut body = vec![1u8; lead];
            varint_bytes(u64::MAX, &mut body);
            body.push(5);
            assert_eq!(plain_packed(&body), Some(lead as u64 + 2), "lead {lead}");
            assert_eq!(packed_slowly(&body), Some(lead as u64 + 2));
            // The tenth byte past 1: over 64 bits.
            let tenth = lead + 9;
            body[tenth] = 2;
            assert_eq!(plain_packed(&body), None, "lead {lead}");
            // Ends inside a varint.
            assert_eq!(plain_packed(&body[..tenth]), None, "lead {lead}");
        }
        // Short varints, the last one cut, at every length (the word loop's end and
        // its remainder's).
        for n in 1..20 {
            let mut body = vec![1u8; n];
            assert_eq!(plain_packed(&body), Some(n as u64));
            body[n - 1] = 0x81;
            assert_eq!(plain_packed(&body), None, "length {n}");
            assert_eq!(packed_slowly(&body), None, "length {n}");
        }
    }
}
