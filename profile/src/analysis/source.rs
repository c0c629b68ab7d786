//! Per-line values of one function: what `go tool pprof -list` shows next to the code.

use super::{Filter, Index};

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
    /// Per-line flat/cum of function-level node `node` for `sample_index` after `filter`
    /// (exact when [`Index::total`] is `Ok` for this sample index).
    pub fn source(&self, node: u32, sample_index: usize, filter: &Filter) -> SourceTable {
        let kept = self.kept(filter);
        // (line, flat, cum): a function has few lines, a Vec beats a map.
        let mut lines: Vec<(i64, i64, i64)> = Vec::new();
        let entry = |lines: &mut Vec<(i64, i64, i64)>, line: i64| -> usize {
            match lines.iter().position(|e| e.0 == line) {
                Some(k) => k,
                None => {
                    lines.push((line, 0, 0));
                    lines.len() - 1
                }
            }
        };
        let (mut flat, mut cum) = (0i64, 0i64);
        // (function index, votes): which of the same-named functions supplies the file.
        let mut file_votes: Vec<(u32, i64)> = Vec::new();
        let mut seen_lines: Vec<i64> = Vec::new();
        for (i, &keep) in kept.iter().enumerate() {
            let v = self.value(i, sample_index);
            if v == 0 || !keep {
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
                    match file_votes.iter_mut().find(|e| e.0 == f.func) {
                        Some(e) => e.1 += 1,
                        None => file_votes.push((f.func, 1)),
                    }
                }
                if !seen_lines.contains(&f.line) {
                    seen_lines.push(f.line);
                    let k = entry(&mut lines, f.line);
                    lines[k].2 = lines[k].2.wrapping_add(v);
                }
            }
            if in_sample {
                cum = cum.wrapping_add(v);
            }
            if let Some(l) = leaf.filter(|l| l.node == node) {
                flat = flat.wrapping_add(v);
                let k = entry(&mut lines, l.line);
                lines[k].1 = lines[k].1.wrapping_add(v);
            }
        }
        let (file, start_line) = file_votes
            .iter()
            .max_by_key(|e| e.1)
            .map(|e| {
                let func = &self.profile.function[e.0 as usize];
                (self.profile.str(func.filename).to_owned(), func.start_line)
            })
            .unwrap_or_default();
        let order = super::sorted_order(lines.len(), &|a, b| lines[a].0.cmp(&lines[b].0));
        let lines = super::permute(lines, &order);
        SourceTable {
            function: self.names.get(node as usize).cloned().unwrap_or_default(),
            file,
            start_line,
            lines: lines
                .into_iter()
                .map(|(line, flat, cum)| SourceLine { line, flat, cum })
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
