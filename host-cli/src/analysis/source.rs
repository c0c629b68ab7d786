//! Per-line values of one function: what `go tool pprof -list` shows next to the code.

use super::{Filter, Index};
use std::collections::BTreeMap;

/// Values attributed to one source line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLine {
    /// 1-based line number (0 = unknown).
    pub line: i64,
    /// Samples whose leaf frame is this line.
    pub flat: i64,
    /// Samples with this line on the stack (once per sample).
    pub cum: i64,
}

/// The source view of one function.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceTable {
    /// Function name.
    pub function: String,
    /// Source file as recorded in the profile ("" when unknown).
    pub file: String,
    /// The function's first line, when the profile records it.
    pub start_line: i64,
    /// Lines with a non-zero value, ascending.
    pub lines: Vec<SourceLine>,
    /// Flat total of the function.
    pub flat: i64,
    /// Cum total of the function (once per sample).
    pub cum: i64,
}

impl Index<'_> {
    /// Per-line flat/cum of function-level node `node` for `sample_index` after `filter`.
    pub fn source(&self, node: u32, sample_index: usize, filter: &Filter) -> SourceTable {
        let kept = self.kept(filter);
        let mut lines: BTreeMap<i64, (i64, i64, usize)> = BTreeMap::new();
        let (mut flat, mut cum) = (0i64, 0i64);
        let mut file_votes: BTreeMap<(&str, i64), i64> = BTreeMap::new();
        let mut seen_lines: Vec<i64> = Vec::new();
        for i in 0..self.sample_count() {
            let v = self.value(i, sample_index);
            if v == 0 || !kept[i] {
                continue;
            }
            seen_lines.clear();
            let mut in_sample = false;
            let mut leaf = None;
            for f in self.root_first(i) {
                leaf = Some(f);
                if f.node != node {
                    continue;
                }
                in_sample = true;
                if f.func != u32::MAX {
                    let func = &self.profile.function[f.func as usize];
                    *file_votes
                        .entry((self.profile.str(func.filename), func.start_line))
                        .or_default() += 1;
                }
                if !seen_lines.contains(&f.line) {
                    seen_lines.push(f.line);
                    let e = lines.entry(f.line).or_default();
                    e.1 = e.1.wrapping_add(v);
                }
            }
            if in_sample {
                cum = cum.wrapping_add(v);
            }
            if let Some(l) = leaf.filter(|l| l.node == node) {
                flat = flat.wrapping_add(v);
                let e = lines.entry(l.line).or_default();
                e.0 = e.0.wrapping_add(v);
            }
        }
        let (file, start_line) = file_votes
            .iter()
            .max_by_key(|(_, &n)| n)
            .map(|((f, s), _)| (f.to_string(), *s))
            .unwrap_or_default();
        SourceTable {
            function: self.names.get(node as usize).cloned().unwrap_or_default(),
            file,
            start_line,
            lines: lines
                .into_iter()
                .map(|(line, (flat, cum, _))| SourceLine { line, flat, cum })
                .collect(),
            flat,
            cum,
        }
    }

    /// The node id of a function name, if the profile has it.
    pub fn node_of(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|n| n == name).map(|i| i as u32)
    }
}
