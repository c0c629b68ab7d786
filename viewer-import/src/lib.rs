//! The viewer's importer: a second, lazily loaded wasm module that reads every input
//! format of the profile library ([`heapsnap_profile::import::guess`]: snapshots,
//! serial captures, gperftools, jemalloc and Go text, folded stacks) and symbolizes
//! snapshots with the ELFs dropped beside them ([`heapsnap_symbolize`], the CLI's own
//! symbolizer), handing the viewer back a pprof profile.
//!
//! Why a module of its own: the viewer's first paint of a pprof file must not pay for
//! an ELF/DWARF reader and half a dozen text parsers it will not use (the main bundle's
//! budget). It runs in a worker (`www/import-worker.js`) that is ended after each
//! file, so the memory a large snapshot, capture or ELF took is returned to the
//! browser, and the page keeps answering while it works.

mod series;

pub use series::SeriesReader;

use heapsnap_profile::import::{self, Input};
use heapsnap_profile::limits::Limits;
use heapsnap_symbolize::{snapshot_profile, Elf};
use prost::Message;
use wasm_bindgen::prelude::wasm_bindgen;

/// How much of a file [`Importer::format`] needs to tell pprof from the other formats
/// (the text sniffs look at 8 KiB; a serial capture shows the snapshot magic in its
/// first frame).
#[wasm_bindgen]
pub fn sniff_len() -> u32 {
    64 << 10
}

/// Reads one dropped file (with any ELFs dropped beside it) into a pprof profile.
#[wasm_bindgen]
pub struct Importer {
    elves: Vec<Elf>,
    limits: Limits,
}

impl Default for Importer {
    fn default() -> Self {
        Importer::new()
    }
}

#[wasm_bindgen]
impl Importer {
    /// An importer with the CLI's default limits.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Importer {
        Importer {
            elves: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// The largest input read, in bytes (the CLI's `input-size` limit): the worker
    /// refuses a larger file before reading it.
    pub fn input_limit(&self) -> f64 {
        self.limits.input_size as f64
    }

    /// The largest ELF read, in bytes (the CLI's `elf-size` limit).
    pub fn elf_limit(&self) -> f64 {
        self.limits.elf_size as f64
    }

    /// Parses an ELF to symbolize snapshots with (its bytes are not kept: [`Elf`]
    /// copies the sections it needs).
    pub fn add_elf(&mut self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let elf = Elf::parse(name, bytes).map_err(|e| e.to_string())?;
        self.elves.push(elf);
        Ok(())
    }

    /// The name of the format `head` (a file's first [`sniff_len`] bytes) reads as: a
    /// name starting with "pprof" means the viewer's own decoder, and its message,
    /// has the last word on the file.
    pub fn format(head: &[u8]) -> String {
        import::guess_format(head)
            .unwrap_or("pprof (protobuf)")
            .to_owned()
    }

    /// The file as a pprof protobuf (not gzipped: the viewer decodes it as it is).
    /// Snapshots are symbolized with the ELFs added; what the viewer should say about
    /// the input (a capture's bad frames, an ELF that was not used) rides along as the
    /// profile's warnings.
    pub fn convert(&mut self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        self.profile(bytes).map(|p| p.encode_to_vec())
    }
}

impl Importer {
    /// [`Importer::convert`] before encoding (what the native tests check).
    pub fn profile(&mut self, bytes: &[u8]) -> Result<heapsnap_profile::profile::Profile, String> {
        let limits = self.limits;
        if bytes.len() as u64 > limits.input_size {
            return Err(format!(
                "{} bytes, over the input-size limit of {} bytes",
                bytes.len(),
                limits.input_size
            ));
        }
        match import::guess_limited(bytes, &limits).map_err(|e| e.to_string())? {
            Input::Snapshot {
                snapshot,
                bad_frames,
                frames,
            } => {
                let elves = std::mem::take(&mut self.elves);
                let mut p = snapshot_profile(
                    &snapshot,
                    bytes.len() as u64,
                    elves,
                    None,
                    false,
                    &limits,
                    &mut |_, _| {},
                )
                .map_err(|e| e.to_string())?;
                if frames > 0 {
                    p.add_warning(&format!(
                        "serial capture with {frames} frame(s), {bad_frames} bad: showing the last good snapshot"
                    ));
                }
                Ok(p)
            }
            Input::Profile(mut p) => {
                if !self.elves.is_empty() {
                    p.add_warning("the ELF dropped with this profile was not used: a profile carries the symbols it was written with; an ELF symbolizes heapsnap snapshots");
                }
                Ok(p)
            }
        }
    }
}
