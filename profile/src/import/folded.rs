//! Folded stacks (Brendan Gregg's `flamegraph.pl` input, inferno's and speedscope's):
//! one line per stack, `root;caller;leaf value`. Read into the model as one function
//! and one location per frame name and a single sample type (folded text carries no
//! unit, so it is `samples/count`).

use super::{Format, Input, InputError};
use crate::limits::{Budget, Limits};
use crate::profile::{Builder, Line};
use rustc_hash::FxHashMap as HashMap;

/// How much of a file the sniff looks at.
const SNIFF_BYTES: usize = 8 * 1024;
/// How many of its first lines must be `stack value`.
const SNIFF_LINES: usize = 16;

/// Text whose first lines are all `stack value`.
pub const FOLDED: Format = Format {
    name: "folded stacks",
    sniff,
    read,
};

fn sniff(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // Cut inside a character at the end of the prefix: judge what came before.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    // Text, not binary: no control characters but line ends and tabs. Then the first
    // lines decide (a report whose lines end in numbers passes one line, not sixteen);
    // a bad line further down is the reader's error to report, with its number.
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return false;
    }
    // The last line of a prefix may be cut: only whole lines count.
    let whole = if head.len() < bytes.len() {
        text.rsplit_once('\n').map_or("", |(w, _)| w)
    } else {
        text
    };
    let mut lines = whole
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(SNIFF_LINES)
        .peekable();
    lines.peek().is_some() && lines.all(|l| parse_line(l).is_ok())
}

/// `stack value` → (frames root first, value).
fn parse_line(line: &str) -> Result<(std::str::Split<'_, char>, i64), String> {
    let line = line.trim_end_matches('\r');
    let (stack, value) = line
        .rsplit_once(' ')
        .ok_or_else(|| "expected `frame;frame;… value`".to_owned())?;
    let value: i64 = value
        .parse()
        .map_err(|_| format!("`{value}` is not an integer count"))?;
    if value < 0 {
        return Err(format!("negative count {value}"));
    }
    if stack.is_empty() {
        return Err("empty stack".to_owned());
    }
    Ok((stack.split(';'), value))
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::Folded {
        line: bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&c| c == b'\n')
            .count()
            + 1,
        what: "not UTF-8 text".to_owned(),
    })?;
    let mut b = Builder::new();
    b.sample_type("samples", "count");
    let mut locations: HashMap<&str, u64> = HashMap::default();
    // Each sample is an entry, and each of its frames; each new name four (function,
    // location, line, string).
    let mut budget = Budget::new(limits, bytes.len() as u64);
    let mut samples = 0u64;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (frames, value) =
            parse_line(line).map_err(|what| InputError::Folded { line: n + 1, what })?;
        let at = || format!("line {} of the folded stacks", n + 1);
        budget.charge(2, at)?;
        samples += 1;
        budget.cap("table-entries", samples, || "samples".into(), at)?;
        let mut locs: Vec<u64> = Vec::new();
        for name in frames {
            budget.charge(1, at)?;
            budget.cap(
                "stack-depth",
                locs.len() as u64 + 1,
                || "frames in one stack".into(),
                at,
            )?;
            let id = match locations.get(name) {
                Some(&id) => id,
                None => {
                    budget.charge(4, at)?;
                    budget.cap(
                        "table-entries",
                        locations.len() as u64 + 1,
                        || "locations (distinct frame names)".into(),
                        at,
                    )?;
                    let f = b.function(name, name, "", 0);
                    let line = Line {
                        function_id: f,
                        line: 0,
                        column: 0,
                    };
                    let id = b.location(0, 0, vec![line], false);
                    locations.insert(name, id);
                    id
                }
            };
            locs.push(id);
        }
        // pprof lists a sample's locations leaf first.
        locs.reverse();
        b.sample(locs, vec![value], vec![]);
    }
    Ok(Input::Profile(b.finish()))
}
