//! ELF notes, read on the device: the GNU build id a firmware publishes about itself.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

/// `NT_GNU_BUILD_ID`, the note type of a GNU build id.
const NT_GNU_BUILD_ID: u32 = 3;

/// The build id out of one ELF note (little-endian, as on every target this crate
/// supports): `namesz`, `descsz`, `type`, the name `GNU\0` padded to 4 bytes, then the
/// id. `None` for anything else, never a panic: the bytes come from a linker script.
pub(crate) fn gnu_build_id(note: &[u8]) -> Option<&[u8]> {
    let word = |at: usize| -> Option<usize> {
        let b: [u8; 4] = note.get(at..at.checked_add(4)?)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(b)).ok()
    };
    let (namesz, descsz, kind) = (word(0)?, word(4)?, word(8)?);
    if kind != NT_GNU_BUILD_ID as usize || note.get(12..12usize.checked_add(namesz)?)? != b"GNU\0" {
        return None;
    }
    let at = 12usize.checked_add(namesz.checked_next_multiple_of(4)?)?;
    note.get(at..at.checked_add(descsz)?)
}

#[cfg(test)]
mod tests {
    use super::gnu_build_id;

    fn note(namesz: u32, descsz: u32, kind: u32, name: &[u8], desc: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [namesz, descsz, kind] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(name);
        v.extend_from_slice(desc);
        v
    }

    #[test]
    fn reads_the_id_of_a_gnu_build_id_note() {
        let id = [0xabu8; 20];
        assert_eq!(gnu_build_id(&note(4, 20, 3, b"GNU\0", &id)), Some(&id[..]));
    }

    #[test]
    fn anything_else_is_none_never_a_panic() {
        let id = [1u8; 8];
        assert_eq!(
            gnu_build_id(&note(4, 8, 1, b"GNU\0", &id)),
            None,
            "another type"
        );
        assert_eq!(
            gnu_build_id(&note(4, 8, 3, b"XYZ\0", &id)),
            None,
            "another owner"
        );
        assert_eq!(
            gnu_build_id(&note(4, 9, 3, b"GNU\0", &id)),
            None,
            "desc past the end"
        );
        assert_eq!(gnu_build_id(&note(u32::MAX, 8, 3, b"GNU\0", &id)), None);
        assert_eq!(gnu_build_id(&note(4, u32::MAX, 3, b"GNU\0", &id)), None);
        assert_eq!(gnu_build_id(&[]), None);
        assert_eq!(gnu_build_id(&[3, 0, 0]), None);
    }
}
