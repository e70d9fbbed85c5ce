//! Preflight: everything that can be checked before the first write, for the whole patch. A patch that passes
//! becomes a [`Plan`] holding every new file content; a patch that fails changes nothing.

use super::beneath::{self, Root, Stamp};
use super::error::{PatchCode, PatchError};
use super::matcher;
use super::parser::{Hunk, Patch};
use super::paths::{self, Found, PatchPath};
use super::text::{self, Style};
use crate::errno::code as errno_name;
use std::path::Path;

/// The largest source file a patch reads, in bytes (checked from metadata before reading; docs/patch.md, Limits).
pub const MAX_SOURCE_BYTES: u64 = 128 << 20;
/// The most source bytes one patch reads in total (each Update/Move keeps old and new content in memory).
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;

/// The two limits above; tests lower them to prove each boundary without gigabyte files.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub source: u64,
    pub total: u64,
}

#[cfg(test)]
thread_local! {
    pub static TEST_LIMITS: std::cell::Cell<Option<Limits>> = const { std::cell::Cell::new(None) };
}

fn limits() -> Limits {
    #[cfg(test)]
    if let Some(l) = TEST_LIMITS.with(|c| c.get()) {
        return l;
    }
    Limits {
        source: MAX_SOURCE_BYTES,
        total: MAX_TOTAL_BYTES,
    }
}

/// An Update's content before and after (the old one is the undo copy written to the journal before the file is
/// rewritten in place).
#[derive(Debug)]
pub struct Rewrite {
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

/// One operation ready to commit, with the source's stamp as preflight saw it (re-checked right before the
/// commit step touches it, and used after a failure to tell what happened).
#[derive(Debug)]
pub enum Step {
    Add {
        path: PatchPath,
        content: Vec<u8>,
    },
    Update {
        path: PatchPath,
        rewrite: Rewrite,
        stamp: Stamp,
    },
    /// A rename, then (when the patch has chunks) an in-place rewrite at the destination.
    Move {
        from: PatchPath,
        to: PatchPath,
        rewrite: Option<Rewrite>,
        stamp: Stamp,
    },
    Delete {
        path: PatchPath,
        stamp: Stamp,
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
    /// What the model should know beyond the operations (a patch carried over through the copy it was shown).
    pub notes: Vec<String>,
}

/// The copies of a workspace file (by its patch path) as the session's host tools showed them to the model, newest
/// first (docs/patch.md "Drift"); none without a session.
pub type Shown<'a> = &'a dyn Fn(&str) -> Vec<std::sync::Arc<str>>;

/// Validates every path of a parsed patch (syntax only), in patch order.
pub fn validate_paths(cwd: &Path, patch: &Patch<'_>) -> Result<Vec<Vec<PatchPath>>, PatchError> {
    patch
        .hunks
        .iter()
        .map(|h| h.raw_paths().into_iter().map(|raw| paths::validate(cwd, raw)).collect())
        .collect()
}

fn too_big(p: &PatchPath, what: String, limit: u64) -> PatchError {
    PatchError::no_change(
        PatchCode::SourceTooLarge,
        format!(
            "source too large: '{}' {what} bytes; the limit is {limit} bytes ({} MiB). Edit it with a shell tool instead, or split the patch",
            paths::shown(&p.rel),
            limit >> 20
        ),
    )
}

/// Reads a source through a handle opened beneath the workspace root (never through a symlink). The size is
/// checked from metadata first, and the buffer is reserved fallibly, so a huge file is refused instead of
/// aborting the process. `write` opens it read-write (an Update rewrites it in place later); `total` counts the
/// bytes read by this patch so far.
fn read_source(root: &mut Root, p: &PatchPath, write: bool, total: &mut u64) -> Result<(Vec<u8>, Stamp), PatchError> {
    let failed = |e: &std::io::Error| {
        let hint = if write && e.raw_os_error() == Some(libc::EACCES) {
            ": this tool rewrites files in place, so it needs write permission on the file"
        } else {
            ""
        };
        PatchError::no_change(
            PatchCode::ReadFailed,
            format!(
                "source could not be read ({}): '{}'{hint}",
                errno_name(e),
                paths::shown(&p.rel)
            ),
        )
    };
    let mut file = root.open_file(&p.rel, write).map_err(|e| failed(&e))?;
    let stamp = beneath::fstat(&file).map_err(|e| failed(&e))?;
    if !stamp.is_file() {
        return Err(must_be_source(p, Found::Other).unwrap_err());
    }
    let lim = limits();
    if stamp.size > lim.source {
        return Err(too_big(p, format!("is {}", stamp.size), lim.source));
    }
    *total += stamp.size;
    if *total > lim.total {
        return Err(too_big(
            p,
            format!("brings the sources this patch reads to {total}"),
            lim.total,
        ));
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(stamp.size as usize + 1)
        .map_err(|_| failed(&std::io::Error::from_raw_os_error(libc::ENOMEM)))?;
    use std::io::Read;
    (&mut file)
        .take(stamp.size + 1)
        .read_to_end(&mut buf)
        .map_err(|e| failed(&e))?;
    if buf.len() as u64 != stamp.size {
        return Err(PatchError::no_change(
            PatchCode::SourceChanged,
            format!(
                "source changed while it was read: '{}'. Another program is writing it; retry when it is done",
                paths::shown(&p.rel)
            ),
        ));
    }
    Ok((buf, stamp))
}

fn must_be_source(p: &PatchPath, found: Found) -> Result<(u64, u64), PatchError> {
    match found {
        Found::File { dev, ino, .. } => Ok((dev, ino)),
        Found::Missing => Err(PatchError::no_change(
            PatchCode::SourceMissing,
            format!(
                "source does not exist. '{}' was not found: re-read the workspace; use Add File to create a new file.",
                paths::shown(&p.rel)
            ),
        )),
        Found::Other => Err(PatchError::no_change(
            PatchCode::SourceNotRegular,
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
            PatchCode::DestinationExists,
            format!(
                "destination already exists. '{}' exists: use Update File to change it, or delete it in an earlier patch.",
                paths::shown(&p.rel)
            ),
        )),
    }
}

/// New content of an Update/Move source. A chunk whose context no longer matches (or matches twice) is located
/// through a copy of the file the model was shown, when the session has one (`shown.rs`), with a note saying so.
pub(super) fn updated(
    p: &PatchPath,
    original: &[u8],
    chunks: &[super::parser::Chunk<'_>],
    shown_copies: Shown<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>, PatchError> {
    let shown = paths::shown(&p.rel);
    let src = text::decode(original, &shown)?;
    // The copies the model was shown that differ from the file now. With one, a chunk that does not match the file
    // as it is is placed through it; the standing-context recovery only runs when the patch was not written from any
    // of them (where a copy finds the place ambiguous or conflicting, a guess would be the one wrong answer).
    let copies: Vec<_> = shown_copies(&p.rel)
        .into_iter()
        .filter(|c| crate::host::tag::lines(c) != src.lines)
        .collect();
    let edits = match matcher::plan_with(&shown, &src.lines, chunks, copies.is_empty()) {
        Ok(edits) => edits,
        Err(mut e)
            if matches!(e.code, PatchCode::ContextMismatch | PatchCode::AmbiguousContext) && !copies.is_empty() =>
        {
            let mut refused: Option<String> = None;
            let mut carried = None;
            for copy in &copies {
                match super::shown::carry(&shown, copy, &src.lines, chunks) {
                    Ok(edits) => {
                        carried = Some(edits);
                        break;
                    }
                    Err(super::shown::Miss::Refused(w)) => {
                        refused.get_or_insert(w);
                    }
                    Err(super::shown::Miss::NotInCopy) => {}
                }
            }
            match (carried, refused) {
                (Some(edits), _) => {
                    notes.push(format!(
                        "'{shown}' changed since it was shown to you; the patch was matched against the version you \
                         were shown and carried over to the current file (Read it to see the result)."
                    ));
                    edits
                }
                (None, Some(why)) => {
                    e.reason.push_str(&format!(
                        "\nThe version of '{shown}' you were shown before it changed could not place the patch \
                         either: {why}."
                    ));
                    return Err(e);
                }
                // Written from none of the copies: placed by its standing context, as without a session.
                (None, None) => matcher::plan(&shown, &src.lines, chunks)?,
            }
        }
        Err(e) => return Err(e),
    };
    let lines = matcher::apply_edits(&src.lines, &edits);
    Ok(text::encode(lines, src.style, original.len() + 64))
}

/// Runs the whole preflight. The order of checks is: path syntax (all), aliases by name, then per operation in
/// patch order the filesystem checks (components, existence), then aliases by identity, then sizes, contents and
/// matches. Sources are read through `root` (beneath the workspace, no symlinks); Delete reads no content.
pub fn preflight(cwd: &Path, root: &mut Root, patch: &Patch<'_>, shown: Shown<'_>) -> Result<Plan, PatchError> {
    let all = validate_paths(cwd, patch)?;
    let named: Vec<(usize, &str)> = all
        .iter()
        .enumerate()
        .flat_map(|(i, ps)| ps.iter().map(move |p| (i, p.rel.as_str())))
        .collect();
    paths::check_aliases(&named)?;

    let mut identities = Vec::new();
    let mut dirs = std::collections::HashSet::new();
    for (i, (hunk, ps)) in patch.hunks.iter().zip(&all).enumerate() {
        let found: Vec<Found> = ps
            .iter()
            .map(|p| paths::inspect(cwd, p, &mut dirs))
            .collect::<Result<_, _>>()?;
        match hunk {
            Hunk::Add { .. } => must_be_absent(&ps[0], found[0])?,
            Hunk::Delete { .. } | Hunk::Update { .. } => {
                let (dev, ino) = must_be_source(&ps[0], found[0])?;
                identities.push((i, ps[0].rel.as_str(), dev, ino));
                if ps.len() == 2 {
                    must_be_absent(&ps[1], found[1])?;
                }
            }
        }
    }
    paths::check_identities(&identities)?;

    let mut total = 0u64;
    let mut notes = Vec::new();
    let mut steps = Vec::with_capacity(patch.hunks.len());
    for (hunk, ps) in patch.hunks.iter().zip(all) {
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
                // No content is read: any regular file can be deleted, whatever its size or encoding.
                let stamp = stat_source(root, &first)?;
                Step::Delete { path: first, stamp }
            }
            Hunk::Update { chunks, .. } if chunks.is_empty() => {
                let stamp = stat_source(root, &first)?;
                let to = ps.next().expect("the parser allows no chunks only with a Move");
                Step::Move {
                    from: first,
                    to,
                    rewrite: None,
                    stamp,
                }
            }
            Hunk::Update { chunks, .. } => {
                let (old, stamp) = read_source(root, &first, true, &mut total)?;
                let new = updated(&first, &old, chunks, shown, &mut notes)?;
                let rewrite = Rewrite { old, new };
                match ps.next() {
                    Some(to) => Step::Move {
                        from: first,
                        to,
                        rewrite: Some(rewrite),
                        stamp,
                    },
                    None => Step::Update {
                        path: first,
                        rewrite,
                        stamp,
                    },
                }
            }
        });
    }
    Ok(Plan { steps, notes })
}

/// The stamp of a source that is renamed or removed without being read (through the handles beneath the root).
fn stat_source(root: &mut Root, p: &PatchPath) -> Result<Stamp, PatchError> {
    match root.stat(&p.rel) {
        Ok(Some(st)) if st.is_file() => Ok(st),
        Ok(Some(_)) => Err(must_be_source(p, Found::Other).unwrap_err()),
        Ok(None) => Err(must_be_source(p, Found::Missing).unwrap_err()),
        Err(e) => Err(PatchError::no_change(
            PatchCode::ReadFailed,
            format!(
                "path could not be inspected ({}): '{}'",
                errno_name(&e),
                paths::shown(&p.rel)
            ),
        )),
    }
}
