//! gperftools CPU profiles, the binary file `CPUPROFILE=` (libprofiler) writes, read
//! as pprof's `parseCPU` reads them: words of 32 or 64 bits, little- or big-endian
//! (whichever makes the header read as one):
//!
//! ```text
//! header   0, 3, 0, period (µs), 0
//! record   count, depth, depth addresses (the sampled PC, then return addresses)
//! …
//! trailer  0, 1, 0
//! text     MAPPED_LIBRARIES: or /proc/self/maps lines
//! ```
//!
//! Two sample types, `samples` (`count`) and `cpu` (`nanoseconds`, count × period).
//! As pprof does: the leaf is a PC and the others return addresses; a second frame
//! shared by nearly every sample (the signal handler's) is dropped, twice at most; a
//! second frame equal to the leaf (the handler saw it twice) is dropped. The leaf is
//! stored as PC + 1, a return address like the others, so the symbolizer (which looks
//! up one byte before a return address) finds the sampled instruction itself.

use super::gperftools::{origin_of, Kind, Records};
use super::{Format, Input, InputError};
use crate::limits::Limits;

/// The binary header in one of the four word encodings.
pub const GPERFTOOLS_CPU: Format = Format {
    name: "gperftools CPU profile",
    sniff: |b| encoding(b).is_some(),
    read,
};

/// A word encoding: (bytes per word, big-endian).
type Encoding = (usize, bool);

/// pprof's order: 32-bit little, 32-bit big, 64-bit little, 64-bit big.
const ENCODINGS: [Encoding; 4] = [(4, false), (4, true), (8, false), (8, true)];

fn word(b: &[u8], (size, big): Encoding) -> u64 {
    b.iter().take(size).enumerate().fold(0u64, |v, (i, &x)| {
        let shift = if big { (size - 1 - i) * 8 } else { i * 8 };
        v | u64::from(x) << shift
    })
}

/// The encoding whose header reads `0, 3, 0|1, period > 0, 0`, and whether it is a
/// Java profile (third word 1).
fn header(b: &[u8]) -> Option<(Encoding, u64, bool)> {
    ENCODINGS.into_iter().find_map(|e| {
        if b.len() < 5 * e.0 {
            return None;
        }
        let w: Vec<u64> = (0..5).map(|i| word(&b[i * e.0..], e)).collect();
        (w[0] == 0 && w[1] == 3 && w[2] <= 1 && w[3] > 0 && w[4] == 0).then_some((
            e,
            w[3],
            w[2] == 1,
        ))
    })
}

fn encoding(b: &[u8]) -> Option<Encoding> {
    header(b).map(|(e, _, _)| e)
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    const F: &str = GPERFTOOLS_CPU.name;
    let at_byte = |offset: usize, what: String| InputError::LegacyBinary {
        format: F,
        offset,
        what,
    };
    let (e, period_us, java) =
        header(bytes).ok_or_else(|| at_byte(0, "not a CPU profile header".into()))?;
    if java {
        return Err(at_byte(
            2 * e.0,
            "a Java CPU profile (third header word 1): not supported".into(),
        ));
    }
    let period = period_us
        .checked_mul(1000)
        .filter(|&p| i64::try_from(p).is_ok())
        .ok_or_else(|| {
            at_byte(
                3 * e.0,
                format!("sampling period {period_us} µs is too large"),
            )
        })?;
    let mut pos = 5 * e.0;
    let mut samples: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let mut rest = &bytes[bytes.len()..];
    while pos < bytes.len() {
        let start = pos;
        if bytes.len() - pos < 2 * e.0 {
            return Err(at_byte(
                pos,
                "a record's count and depth are cut off".into(),
            ));
        }
        let count = word(&bytes[pos..], e);
        let depth = word(&bytes[pos + e.0..], e);
        pos += 2 * e.0;
        let left = (bytes.len() - pos) / e.0;
        if depth > left as u64 {
            return Err(at_byte(
                start,
                format!("a record of {depth} addresses, and only {left} words are left"),
            ));
        }
        let addrs: Vec<u64> = (0..depth as usize)
            .map(|i| word(&bytes[pos + i * e.0..], e))
            .collect();
        pos += depth as usize * e.0;
        if count == 0 && depth == 1 && addrs[0] == 0 {
            rest = &bytes[pos..];
            break;
        }
        // pprof's addresses: the leaf as is, the others one before the return address.
        let adjusted = addrs
            .iter()
            .enumerate()
            .map(|(i, &a)| if i > 0 { a.wrapping_sub(1) } else { a })
            .collect();
        samples.push((start, count, adjusted));
    }
    strip_handler_frames(&mut samples);
    let mut r = Records::new(F, limits, bytes.len(), period);
    for (start, count, mut frames) in samples {
        // pprof's cleanupDuplicateLocations.
        if frames.len() > 1 && frames[0] == frames[1].wrapping_add(1) {
            frames.remove(1);
        }
        // Back to return addresses (see the module's comment).
        for a in &mut frames {
            *a = a.wrapping_add(1);
        }
        let cpu = count
            .checked_mul(period)
            .filter(|&v| i64::try_from(v).is_ok());
        let cpu =
            cpu.ok_or_else(|| at_byte(start, format!("{count} samples × {period} ns overflows")))?;
        let at = || format!("byte offset {start} of the {F}");
        r.values(&at, [count, cpu], frames)?;
    }
    // The maps text after the trailer (pprof reads its lines whatever the bytes).
    let text = String::from_utf8_lossy(rest);
    r.maps(1, text.lines())?;
    Ok(r.finish(origin_of(Kind::Cpu)))
}

/// pprof's `cpuProfile`: a second frame that all samples but one in 32 share is an
/// artifact of the signal handler and is removed from every sample; twice at most.
fn strip_handler_frames(samples: &mut [(usize, u64, Vec<u64>)]) {
    let margin = samples.len() / 32;
    for _ in 0..2 {
        let mut counts: rustc_hash::FxHashMap<u64, usize> = Default::default();
        for (_, _, s) in samples.iter() {
            if let Some(&a) = s.get(1) {
                *counts.entry(a).or_default() += 1;
            }
        }
        let Some((&common, _)) = counts.iter().find(|&(_, &c)| c >= samples.len() - margin) else {
            continue;
        };
        for (_, _, s) in samples.iter_mut() {
            if s.len() > 1 && s[1] == common {
                s.remove(1);
            }
        }
    }
}
