//! The statics' types from DWARF, as the leak check's typed scan needs them
//! ([`heapsnap_profile::leaks::Types`]): struct members by name and offset, Rust enums
//! with their discriminant, arrays, thin pointers (`Box<T>`, `&T`, `*mut T`, `T *`),
//! Rust's (pointer, length) pairs (`Box<[T]>`, `&[T]`) and `Vec<T>` (buffer pointer and
//! length, the element type from its `T`). Only the types the statics reach are
//! converted.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use gimli::{constants as dw, AttributeValue, EndianArcSlice, RunTimeEndian};
use heapsnap_profile::leaks::{Field, Kind, Type, TypeId, Types, Variant, Variants};
use object::{Object, ObjectSection};

pub(crate) type Reader = EndianArcSlice<RunTimeEndian>;

/// The parts of a DIE the conversion reads. Keyed by `.debug_info` offset.
struct Die {
    tag: gimli::DwTag,
    name: Option<String>,
    size: Option<u64>,
    /// `DW_AT_type`.
    ty: Option<u64>,
    /// `DW_AT_data_member_location` (a constant).
    member_offset: Option<u64>,
    /// A subrange's element count (`DW_AT_count`, or bounds).
    count: Option<u64>,
    /// A variant part's `DW_AT_discr` (the member holding the discriminant).
    discr: Option<u64>,
    discr_value: Option<u64>,
    declaration: bool,
    /// Declared in the Rust standard library (`core`, `alloc`, `std`).
    std: bool,
    children: Vec<u64>,
}

/// The ELF's DWARF sections, owned (what the type reader and the stack walk's local
/// lookup read), or why there are none.
pub(crate) fn load_dwarf(file: &object::File) -> Result<gimli::Dwarf<Reader>, String> {
    if file
        .section_by_name(".debug_info")
        .is_none_or(|s| s.size() == 0)
    {
        return Err("no DWARF (.debug_info is missing)".into());
    }
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Reader, object::Error> {
        let data = match file.section_by_name(id.name()) {
            Some(s) => s.uncompressed_data()?,
            None => Cow::Borrowed(&[][..]),
        };
        Ok(EndianArcSlice::new(Arc::from(&*data), endian))
    };
    gimli::Dwarf::load(load).map_err(|e| e.to_string())
}

/// The statics' types of the ELF `data`, or why there are none (no DWARF, or DWARF the
/// reader could not walk).
pub fn types_from_dwarf(data: &[u8]) -> Result<Types, String> {
    let file = object::File::parse(data).map_err(|e| e.to_string())?;
    let dwarf = load_dwarf(&file)?;
    let word = if file.is_64() { 8 } else { 4 };
    let (dies, statics) = read_dies(&dwarf).map_err(|e| format!("corrupt DWARF: {e}"))?;
    let mut c = Conv {
        dies,
        types: Vec::new(),
        memo: HashMap::new(),
        word,
    };
    let mut by_addr = BTreeMap::new();
    for (addr, ty) in statics {
        let t = c.conv(ty, 0);
        by_addr.entry(addr).or_insert(t);
    }
    Ok(Types::new(c.types, by_addr))
}

/// Every DIE's relevant attributes, and the statics (`DW_OP_addr` locations) with their
/// type DIEs.
#[allow(clippy::type_complexity)]
fn read_dies(dwarf: &gimli::Dwarf<Reader>) -> gimli::Result<(HashMap<u64, Die>, Vec<(u64, u64)>)> {
    let mut dies: HashMap<u64, Die> = HashMap::new();
    let mut statics = Vec::new();
    let mut headers = dwarf.units();
    while let Some(header) = headers.next()? {
        let unit = dwarf.unit(header)?;
        // `.debug_info` units only (`units()`): Rust and C firmware use no type units.
        let base = unit.header.offset().0 as u64;
        let key = |v: AttributeValue<Reader>| -> Option<u64> {
            match v {
                AttributeValue::UnitRef(o) => Some(base + o.0 as u64),
                AttributeValue::DebugInfoRef(o) => Some(o.0 as u64),
                _ => None,
            }
        };
        // (depth, key, namespace-is-std) of the open ancestors.
        let mut stack: Vec<(isize, u64, Option<bool>)> = Vec::new();
        let mut cursor = unit.entries();
        while let Some(e) = cursor.next_dfs()? {
            let depth = e.depth();
            while stack.last().is_some_and(|s| s.0 >= depth) {
                stack.pop();
            }
            let k = base + e.offset().0 as u64;
            let tag = e.tag();
            let name = match e.attr_value(dw::DW_AT_name) {
                Some(v) => dwarf
                    .attr_string(&unit, v)
                    .ok()
                    .map(|s| String::from_utf8_lossy(&s).into_owned()),
                None => None,
            };
            let outer_ns = stack.iter().find_map(|s| s.2);
            let std_name = matches!(name.as_deref(), Some("core" | "alloc" | "std"));
            let ns = (tag == dw::DW_TAG_namespace).then_some(outer_ns.unwrap_or(std_name));
            if tag == dw::DW_TAG_variable {
                if let (Some(ty), Some(addr)) = (
                    e.attr_value(dw::DW_AT_type).and_then(key),
                    e.attr_value(dw::DW_AT_location)
                        .and_then(|v| static_addr(v, unit.encoding())),
                ) {
                    statics.push((addr, ty));
                }
            }
            let interesting = matches!(
                tag,
                dw::DW_TAG_structure_type
                    | dw::DW_TAG_class_type
                    | dw::DW_TAG_union_type
                    | dw::DW_TAG_member
                    | dw::DW_TAG_array_type
                    | dw::DW_TAG_subrange_type
                    | dw::DW_TAG_variant_part
                    | dw::DW_TAG_variant
                    | dw::DW_TAG_template_type_parameter
                    | dw::DW_TAG_pointer_type
                    | dw::DW_TAG_reference_type
                    | dw::DW_TAG_rvalue_reference_type
                    | dw::DW_TAG_base_type
                    | dw::DW_TAG_enumeration_type
                    | dw::DW_TAG_typedef
                    | dw::DW_TAG_const_type
                    | dw::DW_TAG_volatile_type
                    | dw::DW_TAG_restrict_type
                    | dw::DW_TAG_atomic_type
                    | dw::DW_TAG_subroutine_type
            );
            if interesting {
                let count = match e.attr_value(dw::DW_AT_count).and_then(|v| v.udata_value()) {
                    Some(c) => Some(c),
                    None => e
                        .attr_value(dw::DW_AT_upper_bound)
                        .and_then(|v| v.udata_value())
                        .map(|u| {
                            let lo = e
                                .attr_value(dw::DW_AT_lower_bound)
                                .and_then(|v| v.udata_value())
                                .unwrap_or(0);
                            u.saturating_sub(lo).saturating_add(1)
                        }),
                };
                let d = Die {
                    tag,
                    name,
                    size: e
                        .attr_value(dw::DW_AT_byte_size)
                        .and_then(|v| v.udata_value()),
                    ty: e.attr_value(dw::DW_AT_type).and_then(key),
                    member_offset: e
                        .attr_value(dw::DW_AT_data_member_location)
                        .and_then(|v| v.udata_value()),
                    count,
                    discr: e.attr_value(dw::DW_AT_discr).and_then(key),
                    discr_value: e
                        .attr_value(dw::DW_AT_discr_value)
                        .and_then(|v| v.udata_value().or(v.sdata_value().map(|s| s as u64))),
                    declaration: matches!(
                        e.attr_value(dw::DW_AT_declaration),
                        Some(AttributeValue::Flag(true))
                    ),
                    std: outer_ns.unwrap_or(false),
                    children: Vec::new(),
                };
                if let Some(parent) = stack.last().and_then(|s| dies.get_mut(&s.1)) {
                    parent.children.push(k);
                }
                dies.insert(k, d);
            }
            stack.push((depth, k, ns));
        }
    }
    Ok((dies, statics))
}

/// A location that is exactly `DW_OP_addr A`: a static at `A`.
fn static_addr(v: AttributeValue<Reader>, enc: gimli::Encoding) -> Option<u64> {
    let AttributeValue::Exprloc(expr) = v else {
        return None;
    };
    let mut ops = expr.operations(enc);
    let first = ops.next().ok()??;
    if ops.next().ok()?.is_some() {
        return None;
    }
    match first {
        gimli::Operation::Address { address } => Some(address),
        _ => None,
    }
}

/// The conversion of DIEs to the scan's types, each type once.
struct Conv {
    dies: HashMap<u64, Die>,
    types: Vec<Type>,
    memo: HashMap<u64, TypeId>,
    word: u64,
}

/// Deepest chain of nested types converted (hostile DWARF must not recurse forever).
const MAX_DEPTH: u32 = 100;

impl Conv {
    /// Through typedefs and qualifiers to the type that has a shape.
    fn resolve(&self, mut k: u64) -> Option<u64> {
        for _ in 0..32 {
            let d = self.dies.get(&k)?;
            match d.tag {
                dw::DW_TAG_typedef
                | dw::DW_TAG_const_type
                | dw::DW_TAG_volatile_type
                | dw::DW_TAG_restrict_type
                | dw::DW_TAG_atomic_type => k = d.ty?,
                _ => return Some(k),
            }
        }
        None
    }

    fn leaf(&mut self, size: u64) -> TypeId {
        self.push(Type {
            size,
            kind: Kind::Leaf,
        })
    }

    fn push(&mut self, t: Type) -> TypeId {
        self.types.push(t);
        (self.types.len() - 1) as TypeId
    }

    /// The type of DIE `k`.
    fn conv(&mut self, k: u64, depth: u32) -> TypeId {
        let Some(k) = self.resolve(k) else {
            return self.leaf(0);
        };
        if let Some(&t) = self.memo.get(&k) {
            return t;
        }
        // Reserved first, so a type that points to itself (a list node) ends here.
        let id = self.leaf(0);
        self.memo.insert(k, id);
        let t = if depth > MAX_DEPTH {
            Type {
                size: 0,
                kind: Kind::Leaf,
            }
        } else {
            self.shape(k, depth)
        };
        self.types[id as usize] = t;
        id
    }

    fn shape(&mut self, k: u64, depth: u32) -> Type {
        let d = &self.dies[&k];
        let size = d.size;
        let (tag, ty, declaration) = (d.tag, d.ty, d.declaration);
        match tag {
            dw::DW_TAG_pointer_type
            | dw::DW_TAG_reference_type
            | dw::DW_TAG_rvalue_reference_type => {
                let pointee = ty
                    .filter(|&p| self.has_size(p))
                    .map(|p| self.conv(p, depth + 1));
                Type {
                    size: size.unwrap_or(self.word),
                    kind: Kind::Pointer { pointee },
                }
            }
            dw::DW_TAG_array_type => {
                let counts: Vec<u64> = d
                    .children
                    .iter()
                    .filter_map(|c| self.dies.get(c))
                    .filter(|c| c.tag == dw::DW_TAG_subrange_type)
                    .map(|c| c.count.unwrap_or(0))
                    .collect();
                let Some(elem) = ty else {
                    return Type {
                        size: size.unwrap_or(0),
                        kind: Kind::Leaf,
                    };
                };
                let mut t = self.conv(elem, depth + 1);
                // The last subrange varies fastest: the innermost array.
                for (n, &count) in counts.iter().enumerate().rev() {
                    let stride = self.types[t as usize].size;
                    let arr = Type {
                        size: stride.saturating_mul(count),
                        kind: Kind::Array { elem: t, count },
                    };
                    if n == 0 {
                        return Type {
                            size: size.unwrap_or(arr.size),
                            ..arr
                        };
                    }
                    t = self.push(arr);
                }
                Type {
                    size: size.unwrap_or(0),
                    kind: Kind::Leaf,
                }
            }
            dw::DW_TAG_structure_type | dw::DW_TAG_class_type if !declaration => {
                self.structure(k, size.unwrap_or(0), depth)
            }
            _ => Type {
                size: size.unwrap_or(0),
                kind: Kind::Leaf,
            },
        }
    }

    /// Does the type behind `k` take bytes (not `void`, `()`, a function or a trait
    /// object's unsized data)?
    fn has_size(&self, k: u64) -> bool {
        let Some(d) = self.resolve(k).and_then(|k| self.dies.get(&k)) else {
            return false;
        };
        d.tag != dw::DW_TAG_subroutine_type && d.size != Some(0) && !d.declaration
    }

    /// The members (tag `DW_TAG_member` with an offset) of struct `k`: (name, offset,
    /// type DIE).
    fn members(&self, k: u64) -> Vec<(Option<String>, u64, u64)> {
        let Some(d) = self.dies.get(&k) else {
            return Vec::new();
        };
        d.children
            .iter()
            .filter_map(|c| self.dies.get(c))
            .filter(|c| c.tag == dw::DW_TAG_member)
            .filter_map(|c| Some((c.name.clone(), c.member_offset?, c.ty?)))
            .collect()
    }

    fn structure(&mut self, k: u64, size: u64, depth: u32) -> Type {
        let d = &self.dies[&k];
        let std = d.std;
        let name = d.name.clone();
        let children = d.children.clone();
        let members = self.members(k);
        let member = |n: &str| members.iter().find(|m| m.0.as_deref() == Some(n));
        // Rust's fat pointers: `&[T]`, `Box<[T]>`, `*mut [T]` (a trait object's
        // `pointer` + `vtable` is a plain struct whose pointer has no sized pointee).
        if let (Some(p), Some(l), 2) = (member("data_ptr"), member("length"), members.len()) {
            let (ptr_offset, len_offset) = (p.1, l.1);
            let elem = self
                .resolve(p.2)
                .and_then(|pk| self.dies.get(&pk))
                .filter(|pd| pd.tag == dw::DW_TAG_pointer_type)
                .and_then(|pd| pd.ty)
                .filter(|&e| self.has_size(e));
            if let Some(e) = elem {
                let elem = self.conv(e, depth + 1);
                return Type {
                    size,
                    kind: Kind::Slice {
                        elem,
                        ptr_offset,
                        len_offset,
                    },
                };
            }
        }
        // `Vec<T>`: `buf` (RawVec, whose pointer is untyped) and `len`; T from the
        // template parameter.
        if std && name.as_deref().is_some_and(|n| n.starts_with("Vec<")) {
            let t = children
                .iter()
                .filter_map(|c| self.dies.get(c))
                .find(|c| {
                    c.tag == dw::DW_TAG_template_type_parameter && c.name.as_deref() == Some("T")
                })
                .and_then(|c| c.ty);
            let buf = member("buf").cloned();
            let len = member("len").map(|m| m.1);
            if let (Some(t), Some(buf), Some(len_offset)) = (t, buf, len) {
                if let Some(p) = self.first_pointer(buf.2, 0) {
                    let elem = self.conv(t, depth + 1);
                    return Type {
                        size,
                        kind: Kind::Vec {
                            elem,
                            ptr_offset: buf.1 + p,
                            len_offset,
                        },
                    };
                }
            }
        }
        let newtype = members.len() == 1;
        let fields = self.fields(&members, std, newtype, 0, depth);
        // A Rust enum: a variant part with the discriminant member and the variants.
        let mut variants = None;
        for c in &children {
            let Some(vp) = self
                .dies
                .get(c)
                .filter(|x| x.tag == dw::DW_TAG_variant_part)
            else {
                continue;
            };
            let discr = vp.discr.and_then(|dk| {
                let m = self.dies.get(&dk)?;
                let size = self.resolve(m.ty?).and_then(|t| self.dies.get(&t)?.size)?;
                matches!(size, 1 | 2 | 4 | 8).then_some((m.member_offset?, size as u8))
            });
            let vchildren = vp.children.clone();
            let mut out = Vec::new();
            for v in vchildren {
                let Some(vd) = self.dies.get(&v).filter(|x| x.tag == dw::DW_TAG_variant) else {
                    continue;
                };
                let value = vd.discr_value.map(|x| match discr {
                    Some((_, s)) if s < 8 => x & ((1u64 << (u32::from(s) * 8)) - 1),
                    _ => x,
                });
                // The variant's one member: its name and its struct of fields.
                let Some((vname, voff, vty)) = self.members(v).into_iter().next() else {
                    continue;
                };
                let Some(vk) = self.resolve(vty) else {
                    continue;
                };
                let vstd = self.dies.get(&vk).is_some_and(|x| x.std) || std;
                let vmembers = self.members(vk);
                let vfields = self.fields(&vmembers, vstd, vmembers.len() == 1, voff, depth);
                out.push(Variant {
                    name: if std { None } else { vname },
                    value,
                    fields: vfields,
                });
            }
            variants = Some(Variants {
                discr,
                variants: out,
            });
        }
        Type {
            size,
            kind: Kind::Struct {
                name: if std {
                    None
                } else {
                    name.map(|n| short_name(&n))
                },
                fields,
                variants,
            },
        }
    }

    /// Fields from members, named as reference paths show them: none for the standard
    /// library's internals and a newtype's `__0`, `0` for a tuple's `__0`.
    fn fields(
        &mut self,
        members: &[(Option<String>, u64, u64)],
        std: bool,
        newtype: bool,
        base: u64,
        depth: u32,
    ) -> Vec<Field> {
        let mut fields = Vec::new();
        for (n, off, ty) in members {
            let tuple = n
                .as_deref()
                .and_then(|n| n.strip_prefix("__"))
                .filter(|r| r.bytes().all(|b| b.is_ascii_digit()));
            let name = match (std, tuple) {
                (true, _) => None,
                (false, Some(_)) if newtype => None,
                (false, Some(i)) => Some(i.to_owned()),
                (false, None) => n.clone(),
            };
            let ty = self.conv(*ty, depth + 1);
            fields.push(Field {
                name,
                offset: base + off,
                ty,
            });
        }
        fields
    }

    /// Offset of the first pointer inside the type behind `k` (RawVec's buffer
    /// pointer, under `inner`, `ptr`, `Unique`, `NonNull`).
    fn first_pointer(&self, k: u64, depth: u32) -> Option<u64> {
        if depth > 16 {
            return None;
        }
        let k = self.resolve(k)?;
        let d = self.dies.get(&k)?;
        if d.tag == dw::DW_TAG_pointer_type {
            return Some(0);
        }
        self.members(k)
            .into_iter()
            .find_map(|(_, off, ty)| Some(off + self.first_pointer(ty, depth + 1)?))
    }
}

/// `Vec<app::Msg, alloc::alloc::Global>` → `Vec`, `Message` → `Message`: the name
/// without generic arguments, for `Message.body` frames.
fn short_name(n: &str) -> String {
    n.split('<').next().unwrap_or(n).to_owned()
}
