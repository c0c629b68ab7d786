//! The leak check on handmade RAM images: each case lays out words by hand, so the
//! expected category of every object is known without running a program.

use super::*;

const RAM: u64 = 0x2000_0000;
/// Statics at RAM..RAM+0x100, the heap at HEAP...
const HEAP: u64 = RAM + 0x1000;

/// A 32-bit little-endian RAM image of 8 KiB with `words` (address, value) written.
fn image(words: &[(u64, u32)]) -> Memory {
    let mut bytes = vec![0u8; 0x2000];
    for &(a, v) in words {
        let off = (a - RAM) as usize;
        bytes[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    Memory::new(
        vec![Image {
            name: "ram.bin".into(),
            addr: RAM,
            bytes,
        }],
        4,
        false,
    )
    .unwrap()
}

fn root(name: &str, start: u64, size: u64) -> Root {
    Root {
        name: name.into(),
        start,
        size,
    }
}

fn obj(addr: u64, size: u64) -> Object {
    Object {
        addr,
        size,
        stack_id: 0,
    }
}

fn category_of(l: &Leaks, addr: u64) -> Category {
    let i = l.objects.iter().position(|o| o.addr == addr).unwrap();
    l.category[i]
}

/// `static B: Box<T>` → object: still reachable, held by the static.
#[test]
fn a_box_in_a_static_is_still_reachable() {
    let a = HEAP;
    let m = image(&[(RAM + 8, a as u32)]);
    let l = scan(&m, vec![root("app::B", RAM + 8, 4)], vec![obj(a, 16)]).unwrap();
    assert_eq!(category_of(&l, a), Category::StillReachable);
    assert_eq!(
        l.path(0),
        vec![Edge {
            holder: Holder::Root(0),
            offset: 0
        }]
    );
    assert!(!l.has_leaks());
}

/// A struct with a Box field, whose box holds a Vec of Boxes: the whole tree is
/// reachable, and the path to a leaf goes root → struct → vec buffer → leaf.
#[test]
fn a_vec_of_boxes_under_a_struct_is_reachable_through_its_path() {
    let (s, buf, b1, b2) = (HEAP, HEAP + 0x40, HEAP + 0x80, HEAP + 0xc0);
    let m = image(&[
        (RAM, s as u32),
        // struct: { id, vec ptr, cap, len }
        (s + 4, buf as u32),
        (s + 8, 2),
        (s + 12, 2),
        (buf, b1 as u32),
        (buf + 4, b2 as u32),
    ]);
    let l = scan(
        &m,
        vec![root("app::S", RAM, 4)],
        vec![obj(s, 16), obj(buf, 8), obj(b1, 24), obj(b2, 24)],
    )
    .unwrap();
    assert!(l.category.iter().all(|&c| c == Category::StillReachable));
    let i = l.objects.iter().position(|o| o.addr == b2).unwrap();
    let p = l.path(i);
    assert_eq!(
        p,
        vec![
            Edge {
                holder: Holder::Root(0),
                offset: 0
            },
            Edge {
                holder: Holder::Object(0),
                offset: 4
            },
            Edge {
                holder: Holder::Object(1),
                offset: 4
            },
        ]
    );
    assert_eq!(l.totals(Category::StillReachable), (72, 4));
}

/// Nothing points at it: definitely lost, and the check fails.
#[test]
fn an_object_nothing_points_to_is_definitely_lost() {
    let m = image(&[]);
    let l = scan(&m, vec![root("app::X", RAM, 0x100)], vec![obj(HEAP, 20)]).unwrap();
    assert_eq!(l.category, vec![Category::DefinitelyLost]);
    assert!(l.has_leaks());
    assert_eq!(l.totals(Category::DefinitelyLost), (20, 1));
}

/// Two objects pointing to each other, unreachable from the roots: valgrind's
/// clique, the first definitely lost and the other indirectly.
#[test]
fn an_unreachable_cycle_is_one_definite_and_one_indirect() {
    let (a, b) = (HEAP, HEAP + 0x20);
    let m = image(&[(a, b as u32), (b, a as u32)]);
    let l = scan(
        &m,
        vec![root("app::X", RAM, 0x100)],
        vec![obj(b, 16), obj(a, 16)],
    )
    .unwrap();
    assert_eq!(category_of(&l, a), Category::DefinitelyLost);
    assert_eq!(category_of(&l, b), Category::IndirectlyLost);
    assert_eq!(
        l.path(1),
        vec![Edge {
            holder: Holder::Object(0),
            offset: 0
        }]
    );
}

/// A later leader that reaches an earlier one takes its group: the earlier one
/// becomes indirectly lost (so each group has exactly one definitely lost object).
#[test]
fn a_leader_reached_from_a_later_group_becomes_indirect() {
    let (a, b) = (HEAP, HEAP + 0x20);
    // b → a; a points nowhere. In address order a leads first, then b reaches it.
    let m = image(&[(b + 4, a as u32)]);
    let l = scan(&m, vec![], vec![obj(a, 16), obj(b, 16)]).unwrap();
    assert_eq!(category_of(&l, a), Category::IndirectlyLost);
    assert_eq!(category_of(&l, b), Category::DefinitelyLost);
}

/// Only a pointer into the middle of the object: possibly lost, and what it points to
/// (by its first byte) is possibly lost too, never better than the chain.
#[test]
fn an_interior_pointer_makes_the_chain_possibly_lost() {
    let (a, b) = (HEAP, HEAP + 0x40);
    let m = image(&[(RAM + 0x10, (a + 8) as u32), (a, b as u32)]);
    let l = scan(
        &m,
        vec![root("app::P", RAM + 0x10, 4)],
        vec![obj(a, 32), obj(b, 8)],
    )
    .unwrap();
    assert_eq!(category_of(&l, a), Category::PossiblyLost);
    assert_eq!(category_of(&l, b), Category::PossiblyLost);
    assert!(!l.has_leaks());
    // A start pointer found later upgrades it.
    let m = image(&[
        (RAM + 0x10, (a + 8) as u32),
        (RAM + 0x14, a as u32),
        (a, b as u32),
    ]);
    let l = scan(
        &m,
        vec![root("app::P", RAM + 0x10, 8)],
        vec![obj(a, 32), obj(b, 8)],
    )
    .unwrap();
    assert_eq!(category_of(&l, a), Category::StillReachable);
    assert_eq!(category_of(&l, b), Category::StillReachable);
}

/// A pointer kept in an integer field (a `usize` handle) still counts: the scan is
/// conservative, any aligned word that holds an object's address.
#[test]
fn a_pointer_hidden_in_an_integer_field_keeps_the_object() {
    let (s, t) = (HEAP, HEAP + 0x40);
    // struct { flags: u32 = 7, handle: usize = t as usize, count: u32 }
    let m = image(&[(RAM, s as u32), (s, 7), (s + 4, t as u32), (s + 8, 3)]);
    let l = scan(
        &m,
        vec![root("app::S", RAM, 4)],
        vec![obj(s, 12), obj(t, 4)],
    )
    .unwrap();
    assert_eq!(category_of(&l, t), Category::StillReachable);
    // Unaligned, it is not a pointer (the scan reads aligned words only).
    let mut m = image(&[(RAM, s as u32), (s, 7)]);
    m.images[0].bytes[(s - RAM + 5) as usize..(s - RAM + 9) as usize]
        .copy_from_slice(&(t as u32).to_le_bytes());
    let l = scan(
        &m,
        vec![root("app::S", RAM, 4)],
        vec![obj(s, 12), obj(t, 4)],
    )
    .unwrap();
    assert_eq!(category_of(&l, t), Category::DefinitelyLost);
}

/// An object that points to itself (a list head of one) is no more reachable for
/// it, and the scan terminates.
#[test]
fn a_self_reference_neither_keeps_an_object_nor_loops() {
    let a = HEAP;
    let m = image(&[(a, a as u32), (a + 4, a as u32)]);
    let l = scan(&m, vec![root("app::X", RAM, 0x100)], vec![obj(a, 8)]).unwrap();
    assert_eq!(l.category, vec![Category::DefinitelyLost]);
    let m = image(&[(RAM, a as u32), (a, a as u32)]);
    let l = scan(&m, vec![root("app::X", RAM, 4)], vec![obj(a, 8)]).unwrap();
    assert_eq!(l.category, vec![Category::StillReachable]);
}

/// The heap arena is itself a static: a root that contains objects is left out (its
/// free blocks' stale pointers would keep everything), and said so.
#[test]
fn a_root_holding_heap_objects_is_excluded() {
    let (a, b) = (HEAP, HEAP + 0x40);
    // A freed block in the arena still holds b's address.
    let m = image(&[(HEAP + 0x80, b as u32)]);
    let l = scan(
        &m,
        vec![
            root("app::HEAP_MEM", HEAP, 0x400),
            root("app::X", RAM, 0x100),
        ],
        vec![obj(a, 16), obj(b, 16)],
    )
    .unwrap();
    assert_eq!(l.excluded, vec![root("app::HEAP_MEM", HEAP, 0x400)]);
    assert_eq!(l.roots, vec![root("app::X", RAM, 0x100)]);
    assert_eq!(category_of(&l, b), Category::DefinitelyLost);
}

/// Bad inputs: clear errors that say what and where.
#[test]
fn overlapping_images_are_refused() {
    let img = |name: &str, addr, len| Image {
        name: name.into(),
        addr,
        bytes: vec![0; len],
    };
    let e = Memory::new(
        vec![img("b.bin", RAM + 0x100, 0x100), img("a.bin", RAM, 0x200)],
        4,
        false,
    )
    .err()
    .unwrap();
    let msg = e.to_string();
    assert!(
        msg.contains("a.bin (0x20000000..0x20000200)")
            && msg.contains("b.bin (0x20000100..0x20000200)")
            && msg.contains("overlap"),
        "{msg}"
    );
    let e = Memory::new(vec![img("c.bin", 0xffff_ff00, 0x200)], 4, false)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("past the end of the 32-bit address space"),
        "{e}"
    );
}

#[test]
fn a_short_image_is_named_as_short() {
    let m = Memory::new(
        vec![Image {
            name: "ram.bin".into(),
            addr: RAM,
            bytes: vec![0; 0x1008],
        }],
        4,
        false,
    )
    .unwrap();
    let e = scan(&m, vec![], vec![obj(HEAP, 16)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("0x20001000..0x20001010")
            && e.contains("ram.bin ends at 0x20001008")
            && e.contains("shorter"),
        "{e}"
    );
    let e = scan(&m, vec![], vec![obj(HEAP + 0x4000, 16)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not hold the heap"), "{e}");
}

#[test]
fn roots_outside_the_images_are_refused() {
    let m = image(&[]);
    let e = scan(&m, vec![root(".bss", 0x1000_0000, 0x100)], vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains(".bss (0x10000000..0x10000100) is not in the RAM images (ram.bin at 0x20000000..0x20002000)"), "{e}");
}

#[test]
fn overlapping_objects_are_refused() {
    let m = image(&[]);
    let e = scan(&m, vec![], vec![obj(HEAP, 16), obj(HEAP + 8, 16)]).unwrap_err();
    assert!(matches!(e, LeakError::ObjectsOverlap { .. }), "{e}");
}

#[test]
fn counts_read_like_valgrind() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1234), "1,234");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

/// The frames of object `addr`'s reference path: root names, fields, `<alloc ADDR>`.
fn frames_of(l: &Leaks, addr: u64) -> Vec<String> {
    let i = l.objects.iter().position(|o| o.addr == addr).unwrap();
    l.reference_path(i)
        .into_iter()
        .map(|f| match f {
            PathFrame::Root(r) => r.name.clone(),
            PathFrame::Field(s) => s.to_owned(),
            PathFrame::Object(o) => format!("<alloc {:#x}>", o.addr),
        })
        .collect()
}

fn typed_of(l: &Leaks, addr: u64) -> bool {
    l.typed[l.objects.iter().position(|o| o.addr == addr).unwrap()]
}

fn field(name: Option<&str>, offset: u64, ty: TypeId) -> Field {
    Field {
        name: name.map(Into::into),
        offset,
        ty,
    }
}

/// 32-bit types: 0 `u32`, 1 `*mut Msg`, 2 `struct Msg { id: u32, next: *mut Msg }`.
fn msg_types() -> Vec<Type> {
    vec![
        Type {
            size: 4,
            kind: Kind::Leaf,
        },
        Type {
            size: 4,
            kind: Kind::Pointer { pointee: Some(2) },
        },
        Type {
            size: 8,
            kind: Kind::Struct {
                name: Some("Msg".into()),
                fields: vec![field(Some("id"), 0, 0), field(Some("next"), 4, 1)],
                variants: None,
            },
        },
    ]
}

/// `static SLOTS: [Slot; 2]` with `enum Slot { Empty, Full(*mut Msg), Pair { b: u32 } }`:
/// the discriminant picks the variant whose fields name the path; a pointer in the
/// integer variant field is found conservatively and its object stays untyped; a
/// `Msg` pointing to itself is visited once.
#[test]
fn enum_variants_are_chosen_by_their_discriminant() {
    let (a, b) = (HEAP, HEAP + 0x40);
    let mut types = msg_types();
    types.push(Type {
        size: 8,
        kind: Kind::Struct {
            name: Some("Slot".into()),
            fields: vec![],
            variants: Some(Variants {
                discr: Some((0, 4)),
                variants: vec![
                    Variant {
                        name: Some("Empty".into()),
                        value: Some(0),
                        fields: vec![],
                    },
                    Variant {
                        name: Some("Full".into()),
                        value: Some(1),
                        fields: vec![field(None, 4, 1)],
                    },
                    Variant {
                        name: Some("Pair".into()),
                        value: Some(2),
                        fields: vec![field(Some("b"), 4, 0)],
                    },
                ],
            }),
        },
    });
    types.push(Type {
        size: 16,
        kind: Kind::Array { elem: 3, count: 2 },
    });
    let types = Types::new(types, [(RAM, 4)].into());
    let m = image(&[
        (RAM, 1),
        (RAM + 4, a as u32),
        (RAM + 8, 2),
        (RAM + 12, b as u32),
        (a, 1),
        (a + 4, a as u32),
    ]);
    let l = scan_typed(
        &m,
        vec![root("app::SLOTS", RAM, 16)],
        vec![obj(a, 8), obj(b, 8)],
        Some(&types),
    )
    .unwrap();
    assert_eq!(l.typed_roots, 1);
    assert_eq!(frames_of(&l, a), ["app::SLOTS", "[0]", "Full"]);
    assert!(typed_of(&l, a));
    assert_eq!(frames_of(&l, b), ["app::SLOTS", "[1]", "Pair.b"]);
    assert!(!typed_of(&l, b));
    assert!(!l.has_leaks());
    assert_eq!(category_of(&l, b), Category::StillReachable);
}

/// A typed pointer to an object smaller than its pointee type does not type it (a
/// stale or foreign pointer); the object is reached, untyped.
#[test]
fn a_pointee_type_larger_than_the_object_leaves_it_untyped() {
    let a = HEAP;
    let types = Types::new(msg_types(), [(RAM, 1)].into());
    let m = image(&[(RAM, a as u32)]);
    let l = scan_typed(
        &m,
        vec![root("app::P", RAM, 4)],
        vec![obj(a, 4)],
        Some(&types),
    )
    .unwrap();
    assert!(!typed_of(&l, a));
    assert_eq!(frames_of(&l, a), ["app::P"]);
    assert_eq!(category_of(&l, a), Category::StillReachable);
}

/// `Vec<*mut Msg>` with capacity 3 and length 2: the live elements are typed and named
/// by index; the stale pointer past the length is still followed conservatively (as
/// valgrind would), but its object gets no type from it.
#[test]
fn a_vec_types_its_live_elements_only() {
    let (buf, c, d, e) = (HEAP, HEAP + 0x40, HEAP + 0x80, HEAP + 0xc0);
    let mut types = msg_types();
    types.push(Type {
        size: 12,
        kind: Kind::Vec {
            elem: 1,
            ptr_offset: 0,
            len_offset: 8,
        },
    });
    let types = Types::new(types, [(RAM, 3)].into());
    let m = image(&[
        (RAM, buf as u32),
        (RAM + 4, 3),
        (RAM + 8, 2),
        (buf, c as u32),
        (buf + 4, d as u32),
        (buf + 8, e as u32),
    ]);
    let l = scan_typed(
        &m,
        vec![root("app::V", RAM, 12)],
        vec![obj(buf, 12), obj(c, 8), obj(d, 8), obj(e, 8)],
        Some(&types),
    )
    .unwrap();
    assert_eq!(frames_of(&l, buf), ["app::V"]);
    assert_eq!(frames_of(&l, d), ["app::V", "[1]"]);
    assert!(typed_of(&l, buf) && typed_of(&l, c) && typed_of(&l, d));
    assert!(!typed_of(&l, e));
    assert_eq!(category_of(&l, e), Category::StillReachable);
}

proptest::proptest! {
    /// The bucketed address index answers as a binary search over the objects does,
    /// for any layout (gaps, zero-size objects, huge spans) and any address.
    #[test]
    fn the_address_index_agrees_with_a_binary_search(
        layout in proptest::collection::vec((0u64..5000, 0u64..300), 0..200),
        probes in proptest::collection::vec(0u64..2_000_000, 50),
    ) {
        let mut objects = Vec::new();
        let mut at = 0x1000u64;
        for (gap, size) in layout {
            at += gap;
            objects.push(obj(at, size));
            at += size.max(1);
        }
        let index = AddrIndex::new(&objects);
        let naive = |p: u64| -> Option<(usize, bool)> {
            let i = objects.partition_point(|o| o.addr <= p).checked_sub(1)?;
            let o = objects[i];
            (p == o.addr || p < o.end()).then_some((i, p == o.addr))
        };
        for p in probes.into_iter().chain(objects.iter().flat_map(|o| [o.addr, o.end(), o.addr.wrapping_sub(1)])) {
            proptest::prop_assert_eq!(index.find(&objects, p), naive(p), "at {:#x}", p);
        }
    }
}

/// A pointer held only in a register (given as `r4`): its object is still reachable,
/// held by the register's root; without the register the same object is definitely
/// lost; a register holding an interior pointer makes it possibly lost.
#[test]
fn a_pointer_only_in_a_register_keeps_its_object_reachable() {
    let (a, b) = (HEAP, HEAP + 0x40);
    let objects = vec![obj(a, 16), obj(b, 16)];
    let none = scan(&image(&[]), vec![], objects.clone()).unwrap();
    assert_eq!(category_of(&none, a), Category::DefinitelyLost);

    let mut m = image(&[]);
    let regs = m.add_registers(&[
        ("r4 (main::held)".into(), a),
        ("r5".into(), b + 8),
        ("r6".into(), 0x1234),
    ]);
    assert_eq!(regs.len(), 3);
    // Past the 32-bit address space: no word of the program can point at a register.
    assert!(regs.iter().all(|r| r.start >= 1 << 32));
    let l = scan(&m, regs, objects).unwrap();
    assert_eq!(category_of(&l, a), Category::StillReachable);
    assert_eq!(category_of(&l, b), Category::PossiblyLost);
    let path = l.reference_path(0);
    assert!(
        matches!(path.as_slice(), [PathFrame::Root(r)] if r.name == "r4 (main::held)"),
        "{path:?}"
    );
}

/// The viewer labels a profile by this one check: the mark the CLI writes is recognized,
/// other comments (a heap profile's, a note naming retention) are not.
#[test]
fn the_retention_mark_is_recognized_and_nothing_else() {
    assert!(super::is_retention_comment(super::RETENTION_COMMENT));
    for c in [
        "heap (exact): 6270 bytes in use in 167 objects",
        "warning: PARTIAL ANSWER: the snapshot samples about one allocation per 512 bytes",
        "note: a retention profile (heapsnap retain) is a reference path",
        "",
    ] {
        assert!(!super::is_retention_comment(c), "{c}");
    }
}
