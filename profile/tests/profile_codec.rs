//! The pprof codec: round trips, gzip sniffing, the gzip-bomb cap, and the validation
//! errors (each naming what and where).

use heapsnap_profile::profile::{self, Builder, Invalid, Line, Mapping, Profile, ProfileError};
use prost::Message;
use std::io::Write;

/// A small heap-like profile with a mapping, inlined lines and labels.
fn sample_profile() -> Profile {
    let mut b = Builder::new();
    b.sample_type("alloc_objects", "count");
    b.sample_type("inuse_space", "bytes");
    b.period("space", "bytes", 512);
    b.comment("hello");
    let (m, _) = b.mapping(
        &Mapping {
            memory_start: 0x1000,
            memory_limit: 0x9000,
            ..Default::default()
        },
        "/bin/x",
        "abcd",
    );
    let f1 = b.function("inner", "_ZN5inner", "src/a.rs", 3);
    let f2 = b.function("outer", "outer", "src/b.rs", 10);
    let l1 = b.location(
        m,
        0x1234,
        vec![
            Line {
                function_id: f1,
                line: 4,
                column: 0,
            },
            Line {
                function_id: f2,
                line: 12,
                column: 0,
            },
        ],
        false,
    );
    let l2 = b.location(
        m,
        0x2000,
        vec![Line {
            function_id: f2,
            line: 20,
            column: 0,
        }],
        false,
    );
    let lab = b.num_label("bytes", 64, "bytes");
    b.sample(vec![l1, l2], vec![1, 64], vec![lab]);
    b.sample(vec![l2], vec![2, 128], vec![]);
    b.sample(vec![l1, l2], vec![1, 64], vec![lab]); // merged into the first
    b.finish()
}

#[test]
fn round_trip_gzip_and_raw() {
    let p = sample_profile();
    assert_eq!(p.sample.len(), 2);
    assert_eq!(p.sample[0].value[..], [2, 128]);
    p.check_valid().unwrap();
    let gz = profile::encode(&p);
    assert!(profile::is_gzip(&gz));
    assert_eq!(profile::decode(&gz).unwrap(), p);
    assert_eq!(profile::decode(&p.encode_to_vec()).unwrap(), p);
    assert_eq!(profile::encode(&p), gz, "encoding is deterministic");
}

#[test]
fn accessors() {
    let p = sample_profile();
    assert_eq!(
        p.sample_types(),
        vec![("alloc_objects", "count"), ("inuse_space", "bytes")]
    );
    assert_eq!(
        p.default_sample_index(),
        1,
        "no default_sample_type: the last one"
    );
    assert_eq!(p.sample_index("alloc_objects"), Ok(0));
    assert_eq!(
        p.sample_index("space"),
        Err("sample index \"space\" must be one of: alloc_objects, inuse_space".into())
    );
    assert_eq!(p.sample_index("0"), Ok(0));
    assert!(p
        .sample_index("2")
        .unwrap_err()
        .contains("outside the range [0..1]"));
    assert_eq!(
        p.sample_index(""),
        Err("sample index \"\" must be one of: alloc_objects, inuse_space".into()),
        "none asked for is default_sample_index(), not a name"
    );
    assert_eq!(p.comments(), vec!["hello"]);
    assert_eq!(p.str(9999), "");
    let mut q = p.clone();
    q.default_sample_type = q
        .string_table
        .iter()
        .position(|s| s == "alloc_objects")
        .unwrap() as i64;
    assert_eq!(q.default_sample_index(), 0);
}

#[test]
fn empty_and_garbage() {
    assert!(matches!(profile::decode(&[]), Err(ProfileError::Empty)));
    // Malformed wire bytes: found by the scan, with the byte offset and field path.
    let e = profile::decode(&[0xff, 0xff, 0xff]).unwrap_err();
    assert!(matches!(e, ProfileError::Wire { offset: 0, .. }), "{e}");
    assert!(e.to_string().contains("at byte 0 (profile)"), "{e}");
    let mut p = sample_profile().encode_to_vec();
    let at = p.len();
    p.extend_from_slice(&[0x12, 0x03, 0x0a, 0x01, 0x80]); // a sample's id cut inside
    let e = profile::decode(&p).unwrap_err().to_string();
    assert!(
        e.contains(&format!("at byte {} (sample[2].location_id)", at + 2)),
        "{e}"
    );
    // A truncated gzip stream.
    let gz = profile::encode(&sample_profile());
    let e = profile::decode(&gz[..gz.len() / 2]).unwrap_err();
    assert!(matches!(e, ProfileError::Gzip(_)), "{e}");
}

#[test]
fn gzip_bomb_is_an_error() {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // One unknown field 8 MiB long: well-formed, so only the inflated cap stops it.
    enc.write_all(&[0xa2, 0x06, 0x80, 0x80, 0x80, 0x04])
        .unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..8 {
        enc.write_all(&zeros).unwrap();
    }
    let bomb = enc.finish().unwrap();
    let e = profile::decode_with_limit(&bomb, 4 << 20).unwrap_err();
    assert!(
        matches!(e, ProfileError::TooLarge { limit } if limit == 4 << 20),
        "{e}"
    );
    assert!(e.to_string().contains("gzip bomb"));
}

fn invalid(p: &Profile) -> Invalid {
    match profile::decode(&p.encode_to_vec()) {
        Err(ProfileError::Invalid(i)) => i,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn validation_names_what_and_where() {
    let good = sample_profile();

    let mut p = good.clone();
    p.sample[1].location_id.extend([999]);
    assert_eq!(
        invalid(&p).to_string(),
        "sample 1 refers to location 999, which does not exist"
    );

    let mut p = good.clone();
    p.location[0].line[1].function_id = 77;
    assert_eq!(
        invalid(&p).to_string(),
        "location 1 refers to function 77, which does not exist"
    );

    let mut p = good.clone();
    p.location[1].mapping_id = 5;
    assert_eq!(
        invalid(&p).to_string(),
        "location 2 refers to mapping 5, which does not exist"
    );
    p.location[1].mapping_id = 0; // "no mapping" is allowed
    profile::decode(&p.encode_to_vec()).unwrap();

    let mut p = good.clone();
    let v = &p.sample[0].value;
    p.sample[0].value = v[..v.len() - 1].to_vec().into();
    assert_eq!(
        invalid(&p).to_string(),
        "sample 0 has 1 values but the profile has 2 sample types"
    );

    let mut p = good.clone();
    p.function[1].id = 1;
    assert_eq!(
        invalid(&p),
        Invalid::DuplicateId {
            kind: "function",
            id: 1
        }
    );

    let mut p = good.clone();
    p.location[0].id = 0;
    assert_eq!(
        invalid(&p),
        Invalid::ZeroId {
            kind: "location",
            index: 0
        }
    );

    let mut p = good.clone();
    p.function[0].name = 1000;
    assert_eq!(
        invalid(&p).to_string(),
        format!(
            "function 1 name is string index 1000, outside the string table (length {})",
            good.string_table.len()
        )
    );

    let mut p = good.clone();
    p.string_table[0] = "x".into();
    assert_eq!(invalid(&p), Invalid::StringTableStart("x".into()));

    let mut p = good.clone();
    p.sample_type.clear();
    assert_eq!(invalid(&p), Invalid::NoSampleTypes { samples: 2 });
}

/// A large profile's samples are checked by halves on two threads: still the first
/// bad sample is the one named, in either half, with its own index.
#[test]
fn the_first_bad_sample_of_many_is_named() {
    let mut p = sample_profile();
    let one = p.sample[0].clone();
    p.sample = vec![one; 40_000];
    p.check_valid().unwrap();
    let dangling = |p: &mut Profile, i: usize| {
        p.sample[i].location_id = vec![1, 77].into();
    };
    let mut late = p.clone();
    dangling(&mut late, 30_000);
    assert_eq!(
        invalid(&late),
        Invalid::DanglingLocation {
            sample: 30_000,
            location: 77
        }
    );
    dangling(&mut late, 25_000);
    let v = &late.sample[39_999].value;
    late.sample[39_999].value = v[..1].to_vec().into();
    assert_eq!(
        invalid(&late),
        Invalid::DanglingLocation {
            sample: 25_000,
            location: 77
        }
    );
    dangling(&mut late, 3);
    assert_eq!(
        invalid(&late),
        Invalid::DanglingLocation {
            sample: 3,
            location: 77
        }
    );
}

#[test]
fn diff_is_new_minus_base_with_pprof_base_label() {
    let base = sample_profile();
    let mut new = sample_profile();
    new.sample[0].value = vec![5, 320].into();
    let d = profile::diff(&base, &new).unwrap();
    d.check_valid().unwrap();
    // Net per stack = new - base.
    let mut net: std::collections::BTreeMap<Vec<u64>, Vec<i64>> = Default::default();
    for s in &d.sample {
        let e = net.entry(s.location_id.to_vec()).or_insert(vec![0, 0]);
        for (a, b) in e.iter_mut().zip(&s.value) {
            *a += b;
        }
    }
    let nets: Vec<Vec<i64>> = net.into_values().collect();
    assert!(nets.contains(&vec![3, 192]), "{nets:?}");
    assert!(nets.contains(&vec![0, 0]), "{nets:?}");
    let base_key = d
        .string_table
        .iter()
        .position(|s| s == "pprof::base")
        .unwrap() as i64;
    let based: Vec<_> = d
        .sample
        .iter()
        .filter(|s| s.label.iter().any(|l| l.key == base_key))
        .collect();
    assert_eq!(based.len(), 2);
    assert!(based.iter().all(|s| s.value.iter().all(|&v| v <= 0)));
    // Mismatched sample types are refused.
    let mut other = sample_profile();
    other.sample_type.pop();
    for s in &mut other.sample {
        s.value = s.value[..s.value.len() - 1].to_vec().into();
    }
    assert!(matches!(
        profile::diff(&base, &other),
        Err(ProfileError::Incompatible(_))
    ));
}

/// Each per-item limit stops the decode with its name, the count and the field, in
/// the full decoder and the viewer's compact one alike; raised, the profile decodes.
#[test]
fn limits_name_the_limit_count_and_field() {
    use heapsnap_profile::analysis::decode_compact_limited;
    use heapsnap_profile::limits::Limits;
    let p = sample_profile();
    let bytes = p.encode_to_vec();
    let deepest = p.sample.iter().map(|s| s.location_id.len()).max().unwrap() as u64;
    let lines = p.location.iter().map(|l| l.line.len()).max().unwrap() as u64;
    let cases = [
        (
            "stack-depth",
            deepest - 1,
            "location ids in one sample's stack",
        ),
        ("lines-per-location", lines - 1, "lines in one location"),
        ("table-entries", 1, "entries in one table"),
        ("entries-per-byte", 0, "decoded entries"),
    ];
    for (name, value, what) in cases {
        let mut limits = Limits::default();
        limits.set(&format!("{name}={value}")).unwrap();
        if name == "entries-per-byte" {
            limits.set("entries-base=3").unwrap();
        }
        for e in [
            profile::decode_limited(&bytes, &limits).unwrap_err(),
            decode_compact_limited(&bytes, &limits).unwrap_err(),
        ] {
            assert!(matches!(e, ProfileError::Limit(_)), "{name}: {e}");
            let e = e.to_string();
            assert!(e.contains(&format!("too many {what}")), "{name}: {e}");
            assert!(e.contains(&format!("--limit {name}=N")), "{name}: {e}");
            assert!(e.contains(" at byte "), "{name}: {e}");
        }
        assert_eq!(
            profile::decode_limited(&bytes, &Limits::unlimited()).unwrap(),
            p
        );
    }
}

/// The library's decoders read samples with their own reader (`pprof_scan`, shared by
/// the whole-file and the viewer's merging decoder) and everything else field by
/// field: on every encoding protobuf allows (values and ids unpacked or split over
/// fields, fields in any order, unknown fields, top-level fields interleaved), they
/// must read what prost's derived decoder reads.
#[test]
fn decoders_read_every_encoding_as_prost_does() {
    use prost::encoding::{encode_key, encode_varint, WireType};
    fn varint_field(tag: u32, v: u64, out: &mut Vec<u8>) {
        encode_key(tag, WireType::Varint, out);
        encode_varint(v, out);
    }
    fn bytes_field(tag: u32, body: &[u8], out: &mut Vec<u8>) {
        encode_key(tag, WireType::LengthDelimited, out);
        encode_varint(body.len() as u64, out);
        out.extend_from_slice(body);
    }
    let p = sample_profile();
    let mut raw = Vec::new();
    // The tables, each field on its own, with samples interleaved among them.
    let tables = {
        let mut t = p.clone();
        t.sample.clear();
        t.encode_to_vec()
    };
    let mut pos = 0;
    let mut fields = Vec::new();
    while pos < tables.len() {
        let start = pos;
        let key = prost::encoding::decode_varint(&mut &tables[pos..]).unwrap();
        pos += prost::encoding::encoded_len_varint(key);
        pos += match key & 7 {
            0 => {
                let v = prost::encoding::decode_varint(&mut &tables[pos..]).unwrap();
                prost::encoding::encoded_len_varint(v)
            }
            2 => {
                let n = prost::encoding::decode_varint(&mut &tables[pos..]).unwrap();
                prost::encoding::encoded_len_varint(n) + n as usize
            }
            w => panic!("wire type {w} in a profile"),
        };
        fields.push(&tables[start..pos]);
    }
    for (i, s) in p.sample.iter().enumerate() {
        let mut body = Vec::new();
        // Labels first, one with an unknown field; then an unknown field.
        for l in &s.label {
            let mut lb = Vec::new();
            varint_field(4, l.num_unit as u64, &mut lb);
            varint_field(9, 77, &mut lb);
            varint_field(1, l.key as u64, &mut lb);
            varint_field(3, l.num as u64, &mut lb);
            bytes_field(3, &lb, &mut body);
        }
        bytes_field(15, b"skip me", &mut body);
        // Values unpacked; ids split: the first unpacked, the rest packed.
        for &v in &s.value {
            varint_field(2, v as u64, &mut body);
        }
        let ids = s.location_id.to_vec();
        varint_field(1, ids[0], &mut body);
        let mut packed = Vec::new();
        for &id in &ids[1..] {
            encode_varint(id, &mut packed);
        }
        bytes_field(1, &packed, &mut body);
        raw.extend_from_slice(fields[i.min(fields.len() - 1)]);
        bytes_field(2, &body, &mut raw);
    }
    for f in &fields[p.sample.len().min(fields.len())..] {
        raw.extend_from_slice(f);
    }
    let by_prost = Profile::decode(raw.as_slice()).unwrap();
    assert_eq!(by_prost.sample.len(), p.sample.len());
    assert_eq!(profile::decode(&raw).unwrap(), by_prost);
    // The merging decoder drops numeric labels and may reorder nothing here (each
    // stack once): its samples are prost's without them.
    let merged = heapsnap_profile::analysis::decode_compact(&raw).unwrap();
    let mut want = by_prost.clone();
    for s in &mut want.sample {
        s.label = s.label.iter().filter(|l| l.str != 0).copied().collect();
    }
    assert_eq!(merged, want);
}
