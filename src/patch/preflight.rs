//! Preflight: everything that can be checked before the first write, for the whole patch. A patch that passes
//! becomes a [`Plan`] holding every new file content; a patch that fails changes nothing.

use super::error::PatchError;
use super::matcher;
use super::parser::{Hunk, Patch};
use super::paths::{self, Found, PatchPath};
use super::text::{self, Style};
use crate::errno::code as errno_name;
use std::path::Path;

/// The identity (device, inode) of an existing source, to tell after a failure whether it was replaced.
pub type FileId = (u64, u64);

/// One operation ready to commit, with the source identity it expects on disk (for re-checking after a failure).
#[derive(Debug)]
pub enum Step {
    Add {
        path: PatchPath,
        content: Vec<u8>,
    },
    Update {
        path: PatchPath,
        content: Vec<u8>,
        source: FileId,
        mode: u32,
    },
    Move {
        from: PatchPath,
        to: PatchPath,
        content: Vec<u8>,
        source: FileId,
        mode: u32,
    },
    Delete {
        path: PatchPath,
        source: FileId,
    },
}

impl Step {
    /// `- add p` style line of the result text (without the dash).
    pub fn describe(&self) -> String {
        match self {
            Step::Add { path, .. } => format!("add {}", path.rel),
            Step::Update { path, .. } => format!("update {}", path.rel),
            Step::Move { from, to, .. } => format!("move {} -> {}", from.rel, to.rel),
            Step::Delete { path, .. } => format!("delete {}", path.rel),
        }
    }
}

/// The whole patch, checked, with every new content computed.
#[derive(Debug)]
pub struct Plan {
    pub steps: Vec<Step>,
}

/// Validates every path of a parsed patch (syntax only), in patch order.
pub fn validate_paths(cwd: &Path, patch: &Patch<'_>) -> Result<Vec<Vec<PatchPath>>, PatchError> {
    patch
        .hunks
        .iter()
        .map(|h| h.raw_paths().into_iter().map(|raw| paths::validate(cwd, raw)).collect())
        .collect()
}

fn read_source(p: &PatchPath) -> Result<Vec<u8>, PatchError> {
    std::fs::read(&p.abs).map_err(|e| {
        PatchError::no_change(
            "read-failed",
            format!(
                "source could not be read ({}): '{}'",
                errno_name(&e),
                paths::shown(&p.rel)
            ),
        )
    })
}

fn must_be_source(p: &PatchPath, found: Found) -> Result<(u64, u64, u32), PatchError> {
    match found {
        Found::File { dev, ino, mode } => Ok((dev, ino, mode)),
        Found::Missing => Err(PatchError::no_change(
            "source-missing",
            format!(
                "source does not exist. '{}' was not found: re-read the workspace; use Add File to create a new file.",
                paths::shown(&p.rel)
            ),
        )),
        Found::Other => Err(PatchError::no_change(
            "source-not-regular",
            format!(
                "source is not a regular file. '{}' is not a regular file: this tool edits regular files only.",
                paths::shown(&p.rel)
            ),
        )),
    }
}

fn must_be_absent(p: &PatchPath, found: Found) -> Result<(), PatchError> {
    match found {
        Found::Missing => Ok(()),
        _ => Err(PatchError::no_change(
            "destination-exists",
            format!(
                "destination already exists. '{}' exists: use Update File to change it, or delete it in an earlier patch.",
                paths::shown(&p.rel)
            ),
        )),
    }
}

/// New content of an Update/Move source.
fn updated(p: &PatchPath, original: &[u8], chunks: &[super::parser::Chunk<'_>]) -> Result<Vec<u8>, PatchError> {
    let shown = paths::shown(&p.rel);
    let src = text::decode(original, &shown)?;
    let edits = matcher::plan(&shown, &src.lines, chunks)?;
    let lines = matcher::apply_edits(&src.lines, &edits);
    Ok(text::encode(lines, src.style, original.len() + 64))
}

/// Runs the whole preflight. The order of checks is: path syntax (all), aliases by name, then per operation in
/// patch order the filesystem checks (components, existence), then aliases by identity, then contents and matches.
pub fn preflight(cwd: &Path, patch: &Patch<'_>) -> Result<Plan, PatchError> {
    let all = validate_paths(cwd, patch)?;
    let named: Vec<(usize, &str)> = all
        .iter()
        .enumerate()
        .flat_map(|(i, ps)| ps.iter().map(move |p| (i, p.rel.as_str())))
        .collect();
    paths::check_aliases(&named)?;

    let mut identities = Vec::new();
    let mut modes = vec![0u32; all.len()];
    let mut ids = vec![(0u64, 0u64); all.len()];
    let mut dirs = std::collections::HashSet::new();
    for (i, (hunk, ps)) in patch.hunks.iter().zip(&all).enumerate() {
        let found: Vec<Found> = ps
            .iter()
            .map(|p| paths::inspect(cwd, p, &mut dirs))
            .collect::<Result<_, _>>()?;
        match hunk {
            Hunk::Add { .. } => must_be_absent(&ps[0], found[0])?,
            Hunk::Delete { .. } | Hunk::Update { .. } => {
                let (dev, ino, mode) = must_be_source(&ps[0], found[0])?;
                identities.push((i, ps[0].rel.as_str(), dev, ino));
                modes[i] = mode;
                ids[i] = (dev, ino);
                if ps.len() == 2 {
                    must_be_absent(&ps[1], found[1])?;
                }
            }
        }
    }
    paths::check_identities(&identities)?;

    let mut steps = Vec::with_capacity(patch.hunks.len());
    for (((hunk, ps), mode), source) in patch.hunks.iter().zip(all).zip(modes).zip(ids) {
        let mut ps = ps.into_iter();
        let first = ps.next().expect("every hunk has a path");
        steps.push(match hunk {
            Hunk::Add { lines, .. } => {
                let size = lines.iter().map(|l| l.len() + 1).sum();
                Step::Add {
                    content: text::encode(lines.iter().copied(), Style::NEW_FILE, size),
                    path: first,
                }
            }
            Hunk::Delete { .. } => {
                let original = read_source(&first)?;
                text::decode(&original, &paths::shown(&first.rel))?;
                Step::Delete { path: first, source }
            }
            Hunk::Update { chunks, .. } => {
                let original = read_source(&first)?;
                let content = updated(&first, &original, chunks)?;
                match ps.next() {
                    Some(to) => Step::Move {
                        from: first,
                        to,
                        content,
                        source,
                        mode,
                    },
                    None => Step::Update {
                        path: first,
                        content,
                        source,
                        mode,
                    },
                }
            }
        });
    }
    Ok(Plan { steps })
}
