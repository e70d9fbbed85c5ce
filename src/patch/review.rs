//! The review hook of apply_patch (docs/review.md "Recording"): after preflight, before staging, every operation
//! becomes a review capture from the contents preflight already holds (an Update's old and new text are the
//! journal's, never read twice). Only a Delete and a pure Move were not read by preflight: their source is read
//! here once (at most 16 MiB, through the same handles beneath the root, checked against preflight's stamp), since
//! rolling them back needs the bytes. A Move becomes two entries (source deleted, destination added) that roll
//! back together.

use super::beneath::{self, Root};
use super::error::{PatchCode, PatchError};
use super::preflight::{Plan, Step};
use crate::review::record::{Before, Capture};
use crate::review::store::Operation;
use crate::review::MAX_SNAPSHOT_BYTES;
use std::io::Read;

/// The source bytes of a Delete or pure Move (None when over the snapshot limit).
fn read_unread_source(root: &mut Root, rel: &str, stamp: &beneath::Stamp) -> Result<Option<Vec<u8>>, PatchError> {
    if stamp.size > MAX_SNAPSHOT_BYTES {
        return Ok(None);
    }
    let changed = || {
        PatchError::no_change(
            PatchCode::SourceChanged,
            format!(
                "source changed while it was read: '{}'. Another program is writing it; retry when it is done",
                super::paths::shown(rel)
            ),
        )
    };
    let failed = |e: &std::io::Error| {
        PatchError::no_change(
            PatchCode::ReadFailed,
            format!(
                "source could not be read ({}): '{}'",
                crate::errno::code(e),
                super::paths::shown(rel)
            ),
        )
    };
    let mut f = root.open_file(rel, false).map_err(|e| failed(&e))?;
    if !beneath::fstat(&f).map_err(|e| failed(&e))?.unchanged(stamp) {
        return Err(changed());
    }
    let mut buf = Vec::with_capacity(stamp.size as usize + 1);
    (&mut f)
        .take(stamp.size + 1)
        .read_to_end(&mut buf)
        .map_err(|e| failed(&e))?;
    if buf.len() as u64 != stamp.size {
        return Err(changed());
    }
    Ok(Some(buf))
}

/// Source bytes read for review, by step (only Delete and pure Move steps have an entry), and the folders each
/// Add / Move destination will create (outermost first).
pub struct Reads(Vec<Option<Vec<u8>>>, Vec<Vec<String>>);

/// The folders of `rel` below its deepest existing folder: what the commit will create for it.
fn to_create(root: &mut Root, rel: &str) -> Vec<String> {
    let have = root.deepest_existing(rel);
    let (dir, _) = beneath::split(rel);
    let mut out = Vec::new();
    let mut cur = dir;
    while cur.len() > have.len() {
        out.push(cur.to_string());
        cur = beneath::split(cur).0;
    }
    out.reverse();
    out
}

/// Reads what preflight did not (Delete and pure Move sources).
pub fn read_sources(root: &mut Root, plan: &Plan) -> Result<Reads, PatchError> {
    let mut out = Vec::with_capacity(plan.steps.len());
    let mut dirs = Vec::with_capacity(plan.steps.len());
    for step in &plan.steps {
        dirs.push(match step {
            Step::Add { path, .. } | Step::Move { to: path, .. } => to_create(root, &path.rel),
            _ => Vec::new(),
        });
        out.push(match step {
            Step::Delete { path, stamp }
            | Step::Move {
                from: path,
                rewrite: None,
                stamp,
                ..
            } => read_unread_source(root, &path.rel, stamp)?,
            _ => None,
        });
    }
    Ok(Reads(out, dirs))
}

fn before_of<'a>(read: &'a Option<Vec<u8>>, size: u64) -> Before<'a> {
    match read {
        Some(b) => Before::Bytes(b),
        None => Before::Unread { size },
    }
}

/// The review captures of a plan, by step.
pub fn captures<'a>(plan: &'a Plan, reads: &'a Reads) -> Vec<Capture<'a>> {
    let mut out = Vec::with_capacity(plan.steps.len() + 1);
    let cap = |path: &str, operation, before, after, mode, step| Capture {
        path: path.to_string(),
        operation,
        before,
        after,
        mode,
        step,
        moved_from: None,
        moved_to: None,
        created_dirs: Vec::new(),
    };
    for (i, step) in plan.steps.iter().enumerate() {
        match step {
            Step::Add { path, content } => {
                let mut c = cap(&path.rel, Operation::Write, Before::Absent, Some(content), None, i);
                c.created_dirs = reads.1[i].clone();
                out.push(c)
            }
            Step::Update { path, rewrite, stamp } => out.push(cap(
                &path.rel,
                Operation::Edit,
                Before::Bytes(&rewrite.old),
                Some(&rewrite.new),
                Some(stamp.mode & 0o7777),
                i,
            )),
            Step::Delete { path, stamp } => out.push(cap(
                &path.rel,
                Operation::Delete,
                before_of(&reads.0[i], stamp.size),
                None,
                Some(stamp.mode & 0o7777),
                i,
            )),
            Step::Move {
                from,
                to,
                rewrite,
                stamp,
            } => {
                let (before, after): (Before<'a>, &'a [u8]) = match rewrite {
                    Some(r) => (Before::Bytes(&r.old), &r.new),
                    None => match &reads.0[i] {
                        Some(b) => (Before::Bytes(b), b),
                        None => (Before::Unread { size: stamp.size }, &[]),
                    },
                };
                let mode = Some(stamp.mode & 0o7777);
                let mut src = cap(&from.rel, Operation::Delete, before, None, mode, i);
                src.moved_to = Some(to.rel.clone());
                let op = if rewrite.is_some() {
                    Operation::Edit
                } else {
                    Operation::Write
                };
                let mut dst = cap(&to.rel, op, before, Some(after), mode, i);
                dst.moved_from = Some(from.rel.clone());
                dst.created_dirs = reads.1[i].clone();
                out.push(src);
                out.push(dst);
            }
        }
    }
    out
}
