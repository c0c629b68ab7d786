//! The process's executable mappings (Linux hosts, feature `std`), so a PIE program's
//! return addresses can be symbolized later against the right file and build id.
//!
//! Host-side and allocating: call it from normal code before writing a snapshot, never
//! from the allocation path.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use crate::decoded::Mapping;
use crate::snapshot::MappingRef;

/// Executable file-backed mappings of this process (`r-xp` lines of
/// `/proc/self/maps`), each with the GNU build id of its file when it has one.
pub fn current() -> io::Result<Vec<Mapping>> {
    let text = std::fs::read_to_string("/proc/self/maps")?;
    let exe = std::fs::read_link("/proc/self/exe").ok();
    let mut ids: HashMap<String, Vec<u8>> = HashMap::new();
    let mut out: Vec<Mapping> = parse(&text);
    // The main executable first: pprof treats the first mapping as the main binary.
    if let Some(exe) = exe.as_deref().and_then(Path::to_str) {
        if let Some(i) = out.iter().position(|m| m.name == exe) {
            let m = out.remove(i);
            out.insert(0, m);
        }
    }
    for m in &mut out {
        let id = ids
            .entry(m.name.clone())
            .or_insert_with(|| build_id(Path::new(&m.name)).unwrap_or_default());
        m.build_id = id.clone();
    }
    Ok(out)
}

/// Parse `/proc/<pid>/maps` text: executable mappings of real files only (no
/// `[vdso]`, anonymous JIT regions or deleted files).
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_ascii_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let offset = f.next()?;
            let _dev = f.next()?;
            let _inode = f.next()?;
            let name = f.collect::<Vec<_>>().join(" ");
            if !perms.contains('x') || !name.starts_with('/') || name.ends_with("(deleted)") {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                name,
                build_id: Vec::new(),
            })
        })
        .collect()
}

/// The GNU build id (`NT_GNU_BUILD_ID` note) of an ELF file, if it has one.
pub fn build_id(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// Borrow owned mappings for the encoder.
pub fn as_refs(maps: &[Mapping]) -> Vec<MappingRef<'_>> {
    maps.iter()
        .map(|m| MappingRef {
            start: m.start,
            end: m.end,
            offset: m.offset,
            name: &m.name,
            build_id: &m.build_id,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_executable_file_mappings_only() {
        let text = "\
55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 123 /usr/bin/prog
55d0c0a21000-55d0c0b00000 r-xp 00021000 08:01 123 /usr/bin/prog
7f0000000000-7f0000001000 rw-p 00000000 00:00 0
7ffd1c3f0000-7ffd1c3f2000 r-xp 00000000 00:00 0 [vdso]
7f1000000000-7f1000100000 r-xp 00028000 08:01 77 /lib/x86_64-linux-gnu/libc.so.6
";
        let m = parse(text);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].start, m[0].end, m[0].offset),
            (0x55d0c0a21000, 0x55d0c0b00000, 0x21000)
        );
        assert_eq!(m[0].name, "/usr/bin/prog");
        assert_eq!(m[1].name, "/lib/x86_64-linux-gnu/libc.so.6");
    }

    #[test]
    fn this_test_binary_is_mapped_first_with_its_build_id() {
        let maps = current().unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(Path::new(&maps[0].name), exe);
        // Rust on Linux links with --build-id by default.
        assert!(
            !maps[0].build_id.is_empty(),
            "no build id for {}",
            maps[0].name
        );
        let here = this_test_binary_is_mapped_first_with_its_build_id as *const () as usize as u64;
        assert!(maps
            .iter()
            .any(|m| m.start <= here && here < m.end && m.name == maps[0].name));
    }
}
