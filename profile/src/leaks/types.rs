//! Typed scanning: the program's types as far as a leak check needs them (where the
//! pointers are and what they point to, what the fields are called), so a reference
//! path names its holders by field and element (`ROUTER`, `seen`, `[10+]`,
//! `Message.body`) instead of by address. `heapsnap-symbolize` fills a [`Types`] from
//! DWARF; this module walks typed memory with it. Memory no type describes (a `usize`
//! holding a pointer, an object reached through an untyped pointer) is still scanned
//! conservatively by [`super::scan`]: types name references, they never hide one.

use std::collections::BTreeMap;

use super::Memory;

/// Index of a [`Type`] in [`Types::types`].
pub type TypeId = u32;

/// What a leak check knows of the program's types: a table of types and the type of
/// each static, by its address.
#[derive(Clone, Debug, Default)]
pub struct Types {
    pub types: Vec<Type>,
    /// The static data's types by the static's address (a root whose start is here is
    /// scanned by type).
    pub statics: BTreeMap<u64, TypeId>,
    /// `has_ptr[t]`: can a value of type `t` hold a typed pointer (else the typed walk
    /// skips it: a `[u8; 1024]` costs nothing).
    has_ptr: Vec<bool>,
}

/// One type: its size and what is in it.
#[derive(Clone, Debug)]
pub struct Type {
    /// Bytes a value takes (an array's stride).
    pub size: u64,
    pub kind: Kind,
}

/// The shapes a typed scan tells apart.
#[derive(Clone, Debug)]
pub enum Kind {
    /// Nothing the scan follows by type: integers, floats, unions, function pointers,
    /// whatever the reader could not describe. Scanned conservatively.
    Leaf,
    /// A struct (or a Rust enum, with `variants`): members by offset.
    Struct {
        /// The type's short name, shown as `Name.field` when a heap object of this type
        /// holds the reference; `None` for the standard library's wrappers (`Cell`,
        /// `RawVec`, `Option`, …), whose fields are not shown either.
        name: Option<String>,
        fields: Vec<Field>,
        variants: Option<Variants>,
    },
    /// `count` elements of `elem`.
    Array { elem: TypeId, count: u64 },
    /// A thin pointer to one `pointee` (`Box<T>`, `&T`, `*mut T`, `NonNull<T>`, `T *`);
    /// `None` when what it points to is not known (`void *`, a trait object).
    Pointer { pointee: Option<TypeId> },
    /// A pointer and a length (`&[T]`, `Box<[T]>`, `*mut [T]`): `len` elements.
    Slice {
        elem: TypeId,
        ptr_offset: u64,
        len_offset: u64,
    },
    /// `Vec<T>`: a buffer pointer and the number of live elements (the capacity beyond
    /// it holds no live element).
    Vec {
        elem: TypeId,
        ptr_offset: u64,
        len_offset: u64,
    },
}

/// A member of a struct or of an enum's variant.
#[derive(Clone, Debug)]
pub struct Field {
    /// Shown in reference paths; `None` for a field that says nothing to a reader (a
    /// newtype's `__0`, a standard wrapper's internals).
    pub name: Option<String>,
    pub offset: u64,
    pub ty: TypeId,
}

/// A Rust enum's variants and where its discriminant is.
#[derive(Clone, Debug)]
pub struct Variants {
    /// Offset and size (1, 2, 4 or 8 bytes) of the discriminant (or the niche field);
    /// `None`: not readable, no variant's fields are used.
    pub discr: Option<(u64, u8)>,
    pub variants: Vec<Variant>,
}

/// One variant: the discriminant value that selects it (`None`: the default, a niche
/// layout's dataful variant) and its fields, at offsets from the enum's start.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Shown in reference paths (`Event::Msg` → `Msg`); `None` for `Option`'s `Some`.
    pub name: Option<String>,
    pub value: Option<u64>,
    pub fields: Vec<Field>,
}

/// What a typed pointer slot points to: `count` values of `ty`, or something untyped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Target {
    pub ty: Option<TypeId>,
    pub count: u64,
}

/// Deepest nesting of types followed within one value (corrupt or hostile DWARF must
/// not recurse without end).
const MAX_DEPTH: u32 = 64;

impl Types {
    /// The table and the statics' types; works out which types hold pointers. Type ids
    /// out of range are read as leaves.
    pub fn new(types: Vec<Type>, statics: BTreeMap<u64, TypeId>) -> Self {
        let mut t = Types {
            has_ptr: vec![false; types.len()],
            types,
            statics,
        };
        // A fixed point: a struct or array holds pointers when a member does. Each round
        // only turns flags on, so it ends within the table's depth.
        loop {
            let mut changed = false;
            for i in 0..t.types.len() {
                if t.has_ptr[i] {
                    continue;
                }
                let on = match &t.types[i].kind {
                    Kind::Leaf => false,
                    Kind::Pointer { .. } | Kind::Slice { .. } | Kind::Vec { .. } => true,
                    Kind::Array { elem, count } => *count > 0 && t.flag(*elem),
                    Kind::Struct {
                        fields, variants, ..
                    } => {
                        fields.iter().any(|f| t.flag(f.ty))
                            || variants.as_ref().is_some_and(|v| {
                                v.variants
                                    .iter()
                                    .any(|v| v.fields.iter().any(|f| t.flag(f.ty)))
                            })
                    }
                };
                if on {
                    t.has_ptr[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        t
    }

    fn flag(&self, t: TypeId) -> bool {
        self.has_ptr.get(t as usize).copied().unwrap_or(false)
    }

    fn get(&self, t: TypeId) -> Option<&Type> {
        self.types.get(t as usize)
    }

    /// Bytes of `count` values of `t` (`None` if it overflows).
    pub(super) fn bytes(&self, t: TypeId, count: u64) -> Option<u64> {
        self.get(t)?.size.checked_mul(count)
    }

    /// The fields of struct `kind` that apply to the value at `base`: its own, and
    /// those of the variant its discriminant selects (which it returns too).
    fn fields<'a>(
        &'a self,
        mem: &Memory,
        base: u64,
        kind: &'a Kind,
    ) -> (impl Iterator<Item = &'a Field> + 'a, Option<&'a Variant>) {
        let (own, variants): (&[Field], _) = match kind {
            Kind::Struct {
                fields, variants, ..
            } => (fields, variants.as_ref()),
            _ => (&[], None),
        };
        let variant = variants.and_then(|v| {
            let (off, size) = v.discr?;
            let value = mem.read(base.checked_add(off)?, size)?;
            v.variants
                .iter()
                .find(|x| x.value == Some(value))
                .or_else(|| v.variants.iter().find(|x| x.value.is_none()))
        });
        let extra: &[Field] = variant.map_or(&[], |v| &v.fields);
        (own.iter().chain(extra), variant)
    }

    /// Calls `f(slot address, target)` for every typed pointer in the `count` values
    /// of `t` at `base`: what a typed scan follows.
    pub(super) fn pointers(
        &self,
        mem: &Memory,
        base: u64,
        t: TypeId,
        count: u64,
        f: &mut impl FnMut(u64, Target),
    ) {
        self.walk(mem, base, t, count, 0, f);
    }

    fn walk(
        &self,
        mem: &Memory,
        base: u64,
        t: TypeId,
        count: u64,
        depth: u32,
        f: &mut impl FnMut(u64, Target),
    ) {
        if depth > MAX_DEPTH || !self.flag(t) {
            return;
        }
        let Some(ty) = self.get(t) else { return };
        let word = mem.word as u8;
        for k in 0..count {
            let Some(at) = ty.size.checked_mul(k).and_then(|o| base.checked_add(o)) else {
                return;
            };
            match &ty.kind {
                Kind::Leaf => {}
                Kind::Pointer { pointee } => f(
                    at,
                    Target {
                        ty: *pointee,
                        count: 1,
                    },
                ),
                Kind::Slice {
                    elem,
                    ptr_offset,
                    len_offset,
                }
                | Kind::Vec {
                    elem,
                    ptr_offset,
                    len_offset,
                } => {
                    let len = at.checked_add(*len_offset).and_then(|a| mem.read(a, word));
                    if let (Some(len), Some(slot)) = (len, at.checked_add(*ptr_offset)) {
                        f(
                            slot,
                            Target {
                                ty: Some(*elem),
                                count: len,
                            },
                        );
                    }
                }
                Kind::Array { elem, count } => self.walk(mem, at, *elem, *count, depth + 1, f),
                Kind::Struct { .. } => {
                    let (fields, _) = self.fields(mem, at, &ty.kind);
                    for fl in fields {
                        if let Some(a) = at.checked_add(fl.offset) {
                            self.walk(mem, a, fl.ty, 1, depth + 1, f);
                        }
                    }
                }
            }
        }
    }

    /// The names of the place `off` bytes into the `count` values of `t` at `base`, as
    /// reference-path frames (`seen`, `[10+]`, `Message.body`), written to `out`, each
    /// ended by [`FRAME_END`] (no allocation once `out` has grown). `top`: the values
    /// are a heap object (its first named field shows its type: `Message.body`), not a
    /// static (whose name is already the frame before).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn locate(
        &self,
        mem: &Memory,
        base: u64,
        t: TypeId,
        count: u64,
        off: u64,
        top: bool,
        out: &mut String,
    ) {
        use std::fmt::Write as _;
        let (mut t, mut base, mut off, mut top, mut array) = (t, base, off, top, count != 1);
        for _ in 0..MAX_DEPTH {
            let Some(ty) = self.get(t) else { break };
            if array {
                let stride = ty.size;
                if stride == 0 {
                    break;
                }
                let i = off / stride;
                let _ = write!(out, "{}", Index(i));
                out.push(FRAME_END);
                base = base.saturating_add(i * stride);
                off %= stride;
                top = false;
                array = false;
                continue;
            }
            match &ty.kind {
                Kind::Array { elem, .. } => {
                    t = *elem;
                    array = true;
                }
                Kind::Struct { name, .. } => {
                    let (mut fields, variant) = self.fields(mem, base, &ty.kind);
                    let Some(fl) = fields.find(|f| {
                        let size = self.get(f.ty).map_or(0, |x| x.size);
                        off >= f.offset && off - f.offset < size
                    }) else {
                        break;
                    };
                    let vname = variant
                        .filter(|v| v.fields.iter().any(|x| std::ptr::eq(x, fl)))
                        .and_then(|v| v.name.as_deref());
                    let parts = [vname, fl.name.as_deref()];
                    if parts.iter().any(Option::is_some) {
                        if let (Some(tn), true) = (name, top) {
                            out.push_str(tn);
                            out.push('.');
                        }
                        let mut first = true;
                        for p in parts.into_iter().flatten() {
                            if !first {
                                out.push('.');
                            }
                            out.push_str(p);
                            first = false;
                        }
                        out.push(FRAME_END);
                        top = false;
                    }
                    base = base.saturating_add(fl.offset);
                    off -= fl.offset;
                    t = fl.ty;
                }
                Kind::Leaf | Kind::Pointer { .. } | Kind::Slice { .. } | Kind::Vec { .. } => break,
            }
        }
    }
}

/// Ends each frame [`Types::locate`] writes.
pub(super) const FRAME_END: char = '\u{1f}';

/// `[3]`, or `[10+]` for every element from the tenth on.
struct Index(u64);

impl std::fmt::Display for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 < 10 {
            write!(f, "[{}]", self.0)
        } else {
            f.write_str("[10+]")
        }
    }
}

/// `[3]`, or `[10+]` for every element from the tenth on: a long container's elements
/// share one frame, so the flame graph shows the container, not ten thousand rows.
pub fn index(i: u64) -> String {
    Index(i).to_string()
}
