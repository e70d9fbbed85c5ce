//! Grep's output (docs/host.md "Grep"): the files with a match arrive in path order and are shown until `limit`
//! matches (content) or files (other modes), or the 50 KiB budget, are reached; one more match then proves the list
//! was cut. What was shown is recorded in the snapshot store (matched, unclipped lines as seen).

use super::search::{FileHits, Row};
use super::{
    GrepArgs, GrepCount, GrepMatch, GrepResult, OutputMode, Total, MAX_FAILED_SHOWN, MAX_LIMIT, MAX_OUTPUT_BYTES,
};
use crate::host::paths::Resolved;
use crate::host::snapshot::{LineSet, Recorder, Seen};
use crate::host::tag::{self, Normalized};
use std::collections::BTreeMap;

/// The result being built, file by file in path order.
pub(super) struct Render<'a> {
    a: &'a GrepArgs,
    limit: u64,
    shown_root: String,
    pub(super) out: GrepResult,
    blocks: Vec<String>,
    shown_matches: u64,
    used: usize,
    budget_hit: bool,
    /// Nothing more will be shown (the limit or the output budget was reached); a further match only proves the
    /// list was cut.
    pub(super) full: bool,
    /// Every file was searched.
    pub(super) complete: bool,
    total: Total,
}

impl<'a> Render<'a> {
    pub(super) fn new(target: &Resolved, a: &'a GrepArgs, limit: u64) -> Self {
        Render {
            a,
            limit,
            shown_root: target.shown.clone(),
            out: GrepResult {
                path: target.shown.clone(),
                root: target.root,
                mode: a.output_mode,
                matches: Vec::new(),
                files: Vec::new(),
                counts: Vec::new(),
                tags: BTreeMap::new(),
                truncated: false,
                total: None,
                complete: false,
                searched: 0,
                binary_skipped: 0,
                unsearched: Vec::new(),
                text: String::new(),
            },
            blocks: Vec::new(),
            shown_matches: 0,
            used: 0,
            budget_hit: false,
            full: false,
            complete: false,
            total: Total::default(),
        }
    }

    /// Takes the next file with a match (`shown` as results name it): shown when there is room (`h` then carries its
    /// detail search: rows and tag from one read), else it proves the list was cut. Returns true once the shown
    /// answer is settled: nothing more fits and the list is known to be cut, so the walk may stop (unless the call
    /// counts every match).
    pub(super) fn add(&mut self, shown: String, h: FileHits, store: &mut impl Recorder) -> bool {
        self.total.files += 1;
        self.total.matches += h.probe_count;
        if self.full {
            self.out.truncated = true;
            return true;
        }
        self.show(shown, h, store);
        self.full |= match self.a.output_mode {
            OutputMode::Content => self.shown_matches == self.limit || self.budget_hit,
            _ => self.out.files.len() as u64 == self.limit,
        };
        self.full && self.out.truncated
    }

    fn show(&mut self, shown: String, h: FileHits, store: &mut impl Recorder) {
        let Some((tagged, text)) = h.tagged else { return };
        let (a, limit) = (self.a, self.limit);
        let header = tag::header(&tag::escape_name(&shown), &tagged.tag);
        let mut seen = LineSet::new();
        match a.output_mode {
            OutputMode::FilesWithMatches => self.blocks.push(header),
            OutputMode::Count => {
                self.blocks.push(format!(
                    "{header} {} matching line{}",
                    h.count,
                    if h.count == 1 { "" } else { "s" }
                ));
                self.out.counts.push(GrepCount {
                    path: shown.clone(),
                    count: h.count,
                });
            }
            OutputMode::Content => {
                let mut block = header;
                let mut rows = 0usize;
                let mut last_line: Option<u64> = None;
                let mut last_match: Option<u64> = None;
                for row in &h.rows {
                    let (n, clipped, was_clipped, is_match) = match row {
                        Row::Match(n, t, c) => (*n, t, *c, true),
                        Row::Context(n, t, c) => (*n, t, *c, false),
                    };
                    if is_match && self.shown_matches == limit {
                        self.out.truncated = true;
                        break;
                    }
                    if !is_match && self.shown_matches == limit && last_match.is_some_and(|m| n > m + a.context) {
                        break;
                    }
                    let gap = last_line.is_some_and(|l| n > l + 1);
                    let cost = clipped.len() + 2 + n.to_string().len() + if gap { 3 } else { 0 };
                    if self.shown_matches > 0 && self.used + block.len() + cost > MAX_OUTPUT_BYTES {
                        self.out.truncated = true;
                        self.budget_hit = true;
                        break;
                    }
                    if gap {
                        block.push_str("\n--");
                    }
                    last_line = Some(n);
                    rows += 1;
                    block.push('\n');
                    if is_match {
                        self.shown_matches += 1;
                        last_match = Some(n);
                        if !was_clipped {
                            seen.insert(n as u32);
                        }
                        tag::row(&mut block, n as usize, clipped);
                        self.out.matches.push(GrepMatch {
                            path: shown.clone(),
                            line: n,
                            text: clipped.clone(),
                        });
                    } else {
                        block.push_str(&format!("{n}-{clipped}"));
                    }
                }
                if rows == 0 {
                    // Not even its first row fitted the budget: the file is not shown.
                    return;
                }
                self.used += block.len() + 2;
                self.blocks.push(block);
            }
        }
        match text {
            Some(text) => {
                let norm = Normalized {
                    text,
                    tag: tagged.tag.clone(),
                    digest: tagged.digest,
                    fp: tagged.fp,
                };
                store.record(&h.path, &norm, Seen::Lines(seen));
            }
            None => store.record_tagged(&h.path, &tagged, Seen::Lines(seen)),
        }
        self.out.tags.insert(shown.clone(), tagged.tag.clone());
        self.out.files.push(shown);
    }

    /// The result and its text: the blocks, the notice of a cut list, the binary files skipped and the files that
    /// could not be searched.
    pub(super) fn finish(self) -> GrepResult {
        let notice = if self.out.truncated {
            self.cut_notice()
        } else {
            String::new()
        };
        let Render {
            a,
            shown_root,
            mut out,
            blocks,
            complete,
            total,
            ..
        } = self;
        out.complete = complete;
        if a.total {
            out.total = Some(total);
        }
        let escaped_root = tag::escape_name(&shown_root);
        let mut text = if out.files.is_empty() {
            if out.unsearched.is_empty() {
                format!("No matches for '{}' in '{escaped_root}'.", a.pattern)
            } else {
                format!(
                    "No matches for '{}' in the files of '{escaped_root}' that could be searched.",
                    a.pattern
                )
            }
        } else {
            blocks.join(if a.output_mode == OutputMode::Content {
                "\n\n"
            } else {
                "\n"
            })
        };
        text.push_str(&notice);
        if out.binary_skipped > 0 {
            let before_stop = if out.complete { "" } else { " before the search stopped" };
            text.push_str(&format!(
                "\n[{} binary file(s) skipped{before_stop}.]",
                out.binary_skipped
            ));
        }
        if !out.unsearched.is_empty() {
            text.push_str(&format!(
                "\n[{} file(s) could not be searched, so matches in them are unknown:",
                out.unsearched.len()
            ));
            for (p, why) in out.unsearched.iter().take(MAX_FAILED_SHOWN) {
                text.push_str(&format!("\n  {}: {why}", tag::escape_name(p)));
            }
            if out.unsearched.len() > MAX_FAILED_SHOWN {
                text.push_str(&format!("\n  … and {} more", out.unsearched.len() - MAX_FAILED_SHOWN));
            }
            text.push_str("\nSearch such a file in windows with Read, or with Bash (e.g. grep -n on a part of it).]");
        }
        out.text = text;
        out
    }

    /// The notice of a cut list: how many are shown, of how many (`N+` unless the call counted them all), and what
    /// to do next.
    fn cut_notice(&self) -> String {
        let content = self.a.output_mode == OutputMode::Content;
        let what = if content { "matches" } else { "files" };
        let shown = if content {
            self.shown_matches
        } else {
            self.out.files.len() as u64
        };
        let of = match (self.a.total, content) {
            (true, true) => format!(" of {} matches in {} files", self.total.matches, self.total.files),
            (true, false) => format!(" of {} files", self.total.files),
            (false, _) if self.budget_hit => format!(" {what}"),
            (false, _) => format!(" of {shown}+ {what}"),
        };
        let count_hint = if self.a.total || self.budget_hit {
            ""
        } else {
            ", or pass total: true to count them all"
        };
        if self.budget_hit {
            format!(
                "\n\n[Showing the first {shown}{of} ({} KiB output limit). Narrow the pattern, path or glob, or use less \
                 context{count_hint}.]",
                MAX_OUTPUT_BYTES / 1024
            )
        } else {
            format!(
                "\n\n[Showing the first {shown}{of}. Narrow the pattern, path or glob, raise limit (at most \
                 {MAX_LIMIT}){count_hint}.]"
            )
        }
    }
}
