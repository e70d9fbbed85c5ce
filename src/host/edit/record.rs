//! The record gate (docs/host.md "Edit", docs/review.md): the last checks before bytes land (a change at all, a free
//! MV destination), the review record right before the write, the write (or the removal), then the commit of what the
//! model now knows: the named registers, the new version with its seen lines, and the rendered result.

use super::apply::{self, Applied};
use super::basis::Basis;
use super::on_the_side;
use super::registers::{self, Captured, Registers};
use super::{with_warnings, EditResult};
use crate::host::error::{HostError, EDIT_NO_CHANGE};
use crate::host::fileio::{self, rel_of, Existing, Fs};
use crate::host::paths::{self, Resolved, Root, Roots};
use crate::host::snapshot::{LineSet, Seen, SnapshotStore};
use crate::host::tag;
use crate::review::hook::Hook;
use std::borrow::Cow;

/// REM of the file `t` (`lines` long), recorded for review first.
#[allow(clippy::too_many_arguments)] // the removal's inputs, each used
pub fn remove(
    hook: &mut Hook,
    fs: &mut Fs,
    store: &mut SnapshotStore,
    t: &Resolved,
    rel: &str,
    old: &Existing,
    lines: usize,
    warnings: Vec<String>,
) -> Result<EditResult, HostError> {
    hook.before_remove(&t.canonical, &old.bytes, old.mode)
        .map_err(crate::host::write::review_failed)?;
    fs.remove(rel, old, &t.shown)?;
    hook.settle(true);
    store.invalidate(&t.canonical);
    Ok(EditResult {
        path: t.shown.clone(),
        root: t.root,
        tag: String::new(),
        added: 0,
        removed: lines as u64,
        deleted: true,
        moved_from: None,
        text: with_warnings(format!("Deleted {} ({} lines).", t.shown, lines), &warnings),
        warnings,
        view: None,
    })
}

/// EDIT_NO_CHANGE when the operations leave the file's bytes as they are and nothing moves it.
pub fn changes(applied: &Applied, old: &[u8], moving: bool, shown: &str, live_tag: &str) -> Result<(), HostError> {
    if applied.bytes.as_bytes() == old && !moving {
        return Err(HostError::new(
            EDIT_NO_CHANGE,
            format!(
                "the operations leave {shown} exactly as it is (tag {live_tag}); nothing was written. Check the + rows: \
                 they must differ from the lines they replace."
            ),
        ));
    }
    Ok(())
}

/// The MV destination `d` of the file `t`: inside the session roots, not the file itself, and not existing (checked
/// before anything is written, so a taken destination leaves the file as it was).
pub fn destination(roots: &Roots, fs: &mut Fs, d: &str, t: &Resolved) -> Result<Resolved, HostError> {
    let r = roots.resolve(d)?;
    if let Some(why) = r.external {
        return Err(paths::outside_error(&r, why));
    }
    if r.canonical == t.canonical {
        return Err(HostError::invalid(format!(
            "MV {d} names the file itself; give a new path."
        )));
    }
    if r.root == Root::Scratch {
        roots.ensure_scratch()?;
    }
    if fs
        .stat(&rel_of(&r.canonical)?)
        .map_err(|e| fileio::io_err(&r.shown, &e))?
        .is_some()
    {
        return Err(HostError::invalid(format!(
            "{} already exists; MV never replaces a file. Choose another destination, or REM that file first.",
            r.shown
        )));
    }
    Ok(r)
}

/// An applied edit ready to land: the file, its old state, the new bytes and the MV destination.
pub struct Landing<'a> {
    pub t: &'a Resolved,
    pub rel: &'a str,
    pub old: &'a Existing,
    pub applied: Applied,
    pub dest: Option<Resolved>,
}

/// Records the change for review, writes it (and moves the file), then commits the registers and the new version
/// and renders the result.
#[allow(clippy::too_many_arguments)] // the commit's inputs, each used
pub fn land(
    hook: &mut Hook,
    fs: &mut Fs,
    store: &mut SnapshotStore,
    regs: &mut Registers,
    captured: Captured,
    basis: &Basis,
    l: Landing<'_>,
    mut warnings: Vec<String>,
) -> Result<EditResult, HostError> {
    let Landing {
        t,
        rel,
        old,
        mut applied,
        dest,
    } = l;
    let changed = applied.bytes.as_bytes() != old.bytes.as_slice();
    let review = match &dest {
        Some(d) => hook.before_move(
            &t.canonical,
            &d.canonical,
            &old.bytes,
            old.mode,
            applied.bytes.as_bytes(),
        ),
        None if changed => hook.before_write(
            &t.canonical,
            crate::review::store::Operation::Edit,
            Some((&old.bytes, old.mode)),
            applied.bytes.as_bytes(),
        ),
        None => Ok(()),
    };
    review.map_err(crate::host::write::review_failed)?;
    // The new text lands on a second thread (the replacement owns its folder handle) while this one normalises it and
    // takes its SHA-256, the longest step. The writer then scans it for trailing blanks (whether the tag needs the
    // trimming hash) and takes its fingerprint, when the text is its own normal form (no CR: most files).
    let replacement = if changed {
        Some(fs.prepare_replace(rel, old, &t.shown)?)
    } else {
        None
    };
    let bytes = applied.bytes.as_str();
    let ((new_owned, new_digest), (written, scanned)) = on_the_side(
        bytes.len(),
        || {
            let w = replacement.map_or(Ok(()), |r| r.run(bytes.as_bytes()));
            (
                w,
                tag::normal_in_place(bytes).map(|n| (tag::needs_trim(n), tag::fingerprint(n))),
            )
        },
        || {
            let n = tag::normalize_str(bytes);
            let d = tag::digest(&n);
            // A copy only when normalisation changed the text (a BOM or CR).
            let owned = match n {
                Cow::Borrowed(b) if b.len() == bytes.len() => None,
                other => Some(other.into_owned()),
            };
            (owned, d)
        },
    );
    written?;
    let normal = new_owned.as_deref().unwrap_or(bytes);
    let (trim, new_fp) = scanned.unwrap_or_else(|| (tag::needs_trim(normal), tag::fingerprint(normal)));
    let new_tag = tag::tag_given(normal, &new_digest, trim);
    let mut final_t = t;
    if let Some(d) = &dest {
        let drel = rel_of(&d.canonical)?;
        if let Err(e) = fs.move_noreplace(rel, &drel, applied.bytes.as_bytes(), old.mode, &d.shown) {
            if changed {
                warnings.push(format!("the edit landed in {} but the move failed", t.shown));
                // The content change stays (it landed); record it so the model's next call is consistent.
                let norm = tag::Normalized {
                    text: new_owned.unwrap_or_else(|| applied.bytes.clone()),
                    tag: new_tag,
                    digest: new_digest,
                    fp: new_fp,
                };
                store.record(&t.canonical, &norm, Seen::Lines(LineSet::new()));
            }
            return Err(e);
        }
        store.invalidate(&t.canonical);
        final_t = d;
    }
    hook.settle(true);

    // Commit: registers, snapshot, render.
    registers::commit(regs, captured);
    let norm = tag::Normalized {
        text: new_owned.unwrap_or_else(|| std::mem::take(&mut applied.bytes)),
        tag: new_tag,
        digest: new_digest,
        fp: new_fp,
    };
    let (mut text, shown) = apply::render(&final_t.shown, &norm.tag, &norm.text, &applied);
    let carried = match basis {
        Basis::Fresh { seen: Some(Seen::All) } => Some(None),
        Basis::Fresh {
            seen: Some(Seen::Lines(s)),
        } => Some(Some(s)),
        _ => None,
    };
    let seen = apply::new_seen(&applied, carried, &shown);
    let all = seen.count() == applied.total as u64;
    store.record(
        &final_t.canonical,
        &norm,
        if all { Seen::All } else { Seen::Lines(seen) },
    );
    let summary = match &dest {
        Some(_) => format!(
            "Moved {} to {}{}.",
            t.shown,
            final_t.shown,
            if changed {
                format!(" after editing it (+{} -{} lines)", applied.added, applied.removed)
            } else {
                String::new()
            }
        ),
        None => format!("Edited {} (+{} -{} lines).", t.shown, applied.added, applied.removed),
    };
    text = format!("{summary} New tag {}.\n{text}", norm.tag);
    Ok(EditResult {
        path: final_t.shown.clone(),
        root: final_t.root,
        tag: norm.tag,
        added: applied.added as u64,
        removed: applied.removed as u64,
        deleted: false,
        moved_from: dest.as_ref().map(|_| t.shown.clone()),
        text: with_warnings(text, &warnings),
        warnings,
        view: None,
    })
}
