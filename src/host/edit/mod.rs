//! The line-anchored Edit (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit", docs/host.md
//! "Edit"): `{path, tag, ops}` edits one existing regular file by line numbers the model was shown under `tag`.
//!
//! Order of the gates: parse (and the size limits) → tag → (tag is the live file's: provenance → apply) | (stale:
//! head/tail-only → apply with a warning | drift recovery → apply with a warning | EDIT_TAG_MISMATCH). Registers are
//! resolved and limits checked before anything is written; a refusal never changes the file, the store's versions or
//! the named registers (only a complete EDIT_LINES_UNSEEN reveal marks lines seen, by design). The retry budget wraps
//! the whole call (`run`).

pub mod apply;
pub mod budget;
pub mod drift;
pub mod gate;
pub mod limits;
pub mod parse;
pub mod registers;

use self::apply::{Applied, Doc, Step};
use self::budget::Budget;
use self::limits::*;
use self::parse::{Op, Pos, Reg, Src};
use self::registers::Registers;
use super::args;
use super::error::*;
use super::fileio::{rel_of, Fs};
use super::paths::{Resolved, Root, Roots};
use super::snapshot::{LineSet, Seen, SnapshotStore};
use super::tag;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Edit's per-session state beside the snapshot store.
#[derive(Debug, Default)]
pub struct EditState {
    pub registers: Mutex<Registers>,
    pub budget: Mutex<Budget>,
    /// One Write or Edit at a time per session, so the store cannot change between the gates and the write.
    pub mutation: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means another call panicked; the state behind it is still consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Edit's arguments after alias folding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditArgs {
    pub path: String,
    pub tag: Option<String>,
    pub ops: String,
}

impl EditArgs {
    pub fn from_json(v: &Value) -> Result<EditArgs, HostError> {
        let a = args::object("Edit", v)?;
        let path = args::fold("Edit", a, "path", "file_path")?;
        let tag = args::opt_str("Edit", a, "tag")?;
        let ops =
            match a.get("ops") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => return Err(HostError::invalid(
                    "Edit needs `ops` (PUT/CUT/REM/MV operations on the line numbers Read showed); call again with it.",
                )),
                Some(_) => {
                    return Err(HostError::invalid(
                        "Edit: `ops` must be a string of operations, one per line.",
                    ))
                }
            };
        Ok(EditArgs { path, tag, ops })
    }
}

/// Every path an Edit call writes, as the model named them: the file, and the MV destination when the ops move
/// it. The permission decision covers all of them before anything runs (docs/permissions.md "Every path a call
/// writes"). Arguments or ops that do not parse yield what could be read (at least the path when it is given): the
/// call itself then fails on them and writes nothing.
pub fn write_targets(args: &Value) -> Vec<String> {
    let Ok(a) = EditArgs::from_json(args) else {
        return Vec::new();
    };
    let mut out = vec![a.path.clone()];
    if let Ok(p) = parse::parse(&a.ops) {
        if let Some(d) = p.mv {
            out.push(d);
        }
    }
    out
}

/// A landed Edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditResult {
    /// The file as results show it (the destination after MV).
    pub path: String,
    pub root: Root,
    /// The new tag (empty after REM).
    pub tag: String,
    pub added: u64,
    pub removed: u64,
    pub deleted: bool,
    pub moved_from: Option<String>,
    pub warnings: Vec<String>,
    pub text: String,
}

/// A refused Edit: the error, the live tag when the file was read, and the retry budget's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditFailure {
    /// Boxed: the failure travels through `Result`s and should stay small.
    pub error: Box<HostError>,
    pub live_tag: Option<String>,
    pub budget_exhausted: bool,
    /// Counted failures of this path in this turn.
    pub failures: u32,
}

/// Runs one Edit call for a session: resolves the path (an external one only with `approved`), applies the retry
/// budget of `turn`, serializes with the session's other writes.
#[cfg_attr(not(test), allow(dead_code))] // the tool calls `run_reviewed`
pub fn run(
    roots: &Roots,
    store: &Mutex<SnapshotStore>,
    state: &EditState,
    args: &Value,
    approved: Option<&Path>,
    turn: Option<&str>,
) -> Result<EditResult, EditFailure> {
    run_reviewed(
        roots,
        store,
        state,
        args,
        approved,
        turn,
        &mut crate::review::hook::Hook::none(),
    )
}

/// [`run`] that records a review change right before the bytes land (`hook`, docs/review.md).
pub fn run_reviewed(
    roots: &Roots,
    store: &Mutex<SnapshotStore>,
    state: &EditState,
    args: &Value,
    approved: Option<&Path>,
    turn: Option<&str>,
    hook: &mut crate::review::hook::Hook,
) -> Result<EditResult, EditFailure> {
    let _m = lock(&state.mutation);
    let plain = |error: HostError| EditFailure {
        error: Box::new(error),
        live_tag: None,
        budget_exhausted: false,
        failures: 0,
    };
    let a = EditArgs::from_json(args).map_err(plain)?;
    let key: PathBuf = roots
        .resolve(&a.path)
        .map(|r| r.canonical)
        .unwrap_or_else(|_| PathBuf::from(&a.path));
    if let Some(last) = lock(&state.budget).exhausted(turn, &key) {
        return Err(EditFailure {
            error: Box::new(HostError::new(
                last.code(),
                format!(
                    "Edit of {} already failed {} times in this prompt (last: {last}). Stop editing this file now: \
                     tell the user what did not match and what you intended, instead of retrying.",
                    a.path,
                    budget::MAX_COUNTED_FAILURES
                ),
            )),
            live_tag: None,
            budget_exhausted: true,
            failures: budget::MAX_COUNTED_FAILURES,
        });
    }
    let mut live_tag = None;
    let out = roots
        .resolve_for_call(&a.path, approved)
        .and_then(|t| edit(roots, store, &state.registers, &t, &a, &mut live_tag, hook));
    let mut b = lock(&state.budget);
    match out {
        Ok(r) => {
            b.note_success(turn, &key);
            Ok(r)
        }
        Err(mut error) => {
            let c = b.note_failure(turn, &key, error.code);
            if c.exhausted {
                error.message.push_str(&format!(
                    "\nThis was the {}th counted failed Edit of this file in this prompt: stop editing it now and tell \
                     the user exactly what did not match (the error above) instead of retrying.",
                    c.counted
                ));
            }
            Err(EditFailure {
                error: Box::new(error),
                live_tag,
                budget_exhausted: c.exhausted,
                failures: c.counted,
            })
        }
    }
}

/// The live file as the tools see it (borrowed: copied only when a mismatch records it).
struct Live<'a> {
    text: &'a str,
    tag: String,
    digest: [u8; 32],
}

/// How the operations relate to the live file.
enum Basis {
    /// The tag is the live file's. `seen`: `None` = no record (gate skipped).
    Fresh { seen: Option<Seen> },
    /// Stale tag, head/tail insertions (or a plain MV) only: applied to the live file as they are.
    HeadTail,
    /// Stale tag, carried over by drift recovery: the operations in live line numbers.
    Drift { ops: Vec<(usize, Op)> },
}

/// Where the rows of an EDIT_TAG_MISMATCH come from: the operations' own line numbers, or (after a diff) the
/// live lines where each operation's lines are now, plus the lines a refusal names.
enum Around<'m> {
    Claims,
    Moved {
        map: &'m drift::LineMap,
        snap_len: u32,
        extra: Vec<(usize, usize)>,
    },
}

/// The EDIT_TAG_MISMATCH failure: the live tag and the current content around the anchors (those rows count as
/// seen under the live tag, so an edit with the live tag and these numbers passes the provenance gate).
fn mismatch(
    store: &mut SnapshotStore,
    t: &Resolved,
    tag_: &str,
    live: &Live<'_>,
    why: &str,
    ops: &[(usize, Op)],
    around: Around<'_>,
) -> HostError {
    let lines = tag::lines(live.text);
    let mut rows = LineSet::new();
    let len = lines.len() as u32;
    let mut add = |a: u32, b: u32| {
        let lo = a.saturating_sub(CONTEXT_LINES as u32 + 1).max(1);
        let hi = b.saturating_add(CONTEXT_LINES as u32 + 1).min(len);
        if lo <= hi {
            rows.insert_range(lo, hi);
        }
    };
    match &around {
        Around::Claims => {
            for (_, op) in ops {
                let (a, b) = gate::claim(op, len);
                add(a, b);
            }
        }
        Around::Moved { map, snap_len, extra } => {
            for &(a, b) in extra {
                add(a as u32, b as u32);
            }
            for (_, op) in ops {
                let (a, b) = gate::claim(op, *snap_len);
                let (ga, gb) = map.guess(a as usize, b as usize);
                add(ga as u32, gb as u32);
            }
        }
    }
    let mut text = tag::header(&t.shown, &live.tag);
    let mut seen = LineSet::new();
    let mut shown = 0;
    'outer: for &(a, b) in rows.ranges() {
        if shown > 0 {
            text.push_str("\n…");
        }
        for n in a..=b {
            if shown == MAX_RENDER_ROWS {
                text.push_str("\n[… more; Read the file for the rest.]");
                break 'outer;
            }
            let (s, clipped) = tag::clip_line(lines[n as usize - 1], REVEAL_CHARS);
            text.push('\n');
            tag::row(&mut text, n as usize, &s);
            if !clipped {
                seen.insert(n);
            }
            shown += 1;
        }
    }
    if len == 0 {
        text.push_str("\n(empty file)");
    }
    let norm = tag::Normalized {
        text: live.text.to_string(),
        tag: live.tag.clone(),
        digest: live.digest,
        fp: tag::fingerprint(live.text),
    };
    store.record(&t.canonical, &norm, Seen::Lines(seen));
    HostError::new(
        EDIT_TAG_MISMATCH,
        format!(
            "{} changed since tag {tag_} was shown (its tag is now {}) and the edit could not be carried over: {why}. \
             Nothing was changed. Redo the edit against the current lines below with tag {}, or Read the file \
             again.\n{text}",
            t.shown, live.tag, live.tag
        ),
    )
}

/// The Edit itself, on a resolved target. `live_tag` is set once the live file was read.
fn edit(
    roots: &Roots,
    store_m: &Mutex<SnapshotStore>,
    regs_m: &Mutex<Registers>,
    target: &Resolved,
    a: &EditArgs,
    live_tag: &mut Option<String>,
    hook: &mut crate::review::hook::Hook,
) -> Result<EditResult, HostError> {
    let p = parse::parse(&a.ops)?;
    let tag_ = match (&a.tag, &p.header) {
        (Some(t), Some((_, h))) if !t.eq_ignore_ascii_case(h) => {
            return Err(HostError::new(
                EDIT_PARSE_FAILED,
                format!(
                    "the ops header says tag {h} but the `tag` argument is {t}; send one tag (the one Read showed)."
                ),
            ))
        }
        (Some(t), _) => t.trim().to_ascii_uppercase(),
        (None, Some((_, h))) => h.clone(),
        (None, None) => {
            return Err(HostError::new(
                EDIT_TAG_REQUIRED,
                format!(
                    "Edit needs the file's tag: pass `tag` with the 4 hex digits from the [{}#TAG] header that Read \
                     or Grep showed (Read the file first if you have none).",
                    a.path
                ),
            ))
        }
    };
    if !tag::is_tag(&tag_) {
        return Err(HostError::new(
            EDIT_TAG_REQUIRED,
            format!("'{tag_}' is not a tag; pass the 4 hex digits after '#' in the [path#TAG] header Read showed."),
        ));
    }
    if let Some((hp, _)) = &p.header {
        let same =
            hp == &a.path || hp == &target.shown || roots.resolve(hp).is_ok_and(|r| r.canonical == target.canonical);
        if !same {
            return Err(HostError::new(
                EDIT_PARSE_FAILED,
                format!(
                    "the ops header names {hp} but the call edits {}; edit one file per call, with its own header.",
                    target.shown
                ),
            ));
        }
    }
    let mut warnings = Vec::new();
    let mut fs = Fs::open()?;
    let mut t = target.clone();
    let mut rel = rel_of(&t.canonical)?;
    let old = match fs.read_existing(&rel, &t.shown)? {
        Some(o) => o,
        None => {
            // Path rebinding: a missing path whose basename and tag match exactly one recorded file.
            let name = t
                .canonical
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let found = lock(store_m).find_by_name_and_tag(&name, &tag_);
            // Rebinding never crosses roots (a missing scratch path never lands in the workspace): the permission
            // decision was taken for the named path's root, and the rebound file must be under the same one.
            let rebound = match found.as_slice() {
                [one] => roots
                    .resolve(&one.to_string_lossy())
                    .ok()
                    .filter(|r| r.external.is_none() && r.root == t.root),
                _ => None,
            };
            let Some(r) = rebound else {
                return Err(HostError::new(
                    NOT_FOUND,
                    format!(
                        "{} does not exist, and no file you were shown is named {name} with tag {tag_}. Edit never \
                         creates files: use Write to create it, or find the right path with Glob.",
                        t.shown
                    ),
                ));
            };
            warnings.push(format!(
                "{} does not exist; the edit went to {}, the one file you were shown named {name} with tag {tag_}.",
                t.shown, r.shown
            ));
            t = r;
            rel = rel_of(&t.canonical)?;
            fs.read_existing(&rel, &t.shown)?
                .ok_or_else(|| HostError::io(&t.shown, &std::io::Error::from(std::io::ErrorKind::NotFound)))?
        }
    };
    let text = std::str::from_utf8(&old.bytes).map_err(|_| {
        HostError::invalid(format!(
            "{} is not valid UTF-8 text, so Edit cannot keep its bytes; rewrite it with Write, or change it with Bash.",
            t.shown
        ))
    })?;
    let mut store = lock(store_m);
    let version = store
        .lookup(&t.canonical, &tag_)
        .map(|v| (v.digest, v.tag.clone(), v.text.clone(), v.seen.clone(), (v.len, v.fp)));
    // The live file's digest and tag: taken from the recorded version when the live text is that version's, else
    // hashed (SHA-256). "Is that version's": its retained text equals the live text (a full comparison), or, when the
    // text was not retained (over 2 MiB), same length and same XXH3-128 fingerprint (docs/host.md "The live file's
    // fingerprint"); any difference takes the full path. The text itself is copied only for a mismatch.
    let identify = |live_text: &str| match &version {
        Some((digest, vtag, Some(vt), _, _)) if vt.as_ref() == live_text => (*digest, vtag.clone()),
        Some((digest, vtag, None, _, (len, fp))) if *len == live_text.len() && *fp == tag::fingerprint(live_text) => {
            (*digest, vtag.clone())
        }
        _ => tag::digest_and_tag(live_text),
    };
    // A large file is normalised and hashed on a second thread while this one splits it into lines.
    let (doc, (live_text, (live_digest, live_tag_s))) = on_the_side(
        text.len(),
        || {
            let lt = tag::normalize_str(text);
            let id = identify(&lt);
            (lt, id)
        },
        || Doc::split(text),
    );
    // The live lines are the split lines (normalisation only drops the BOM and unifies line endings).
    let live_lines: &[&str] = &doc.lines;
    let live_len = doc.len() as u32;
    let live = Live {
        text: &live_text,
        tag: live_tag_s,
        digest: live_digest,
    };
    *live_tag = Some(live.tag.clone());
    let version = version.map(|(d, _, text, seen, _)| (d, text, seen));
    let only_mv = p.ops.is_empty() && !p.rem;
    let basis = match version {
        None if tag_ == live.tag => Basis::Fresh { seen: None },
        None => {
            // The message shows the live tag, but no line: record the live version with an empty seen set, so an
            // Edit with that tag passes the provenance gate only for lines a result actually showed (a later
            // EDIT_LINES_UNSEEN reveals them) instead of skipping the gate as "no record" would.
            let norm = tag::Normalized {
                text: live.text.to_string(),
                tag: live.tag.clone(),
                digest: live.digest,
                fp: tag::fingerprint(live.text),
            };
            store.record(&t.canonical, &norm, Seen::Lines(LineSet::new()));
            return Err(HostError::new(
                EDIT_TAG_UNKNOWN,
                format!(
                    "tag {tag_} is not the current tag of {} ({}) and no Read, Grep or Write in this session showed \
                     the file with it. Read {} and use the tag in its [path#TAG] header.",
                    t.shown, live.tag, t.shown
                ),
            ));
        }
        Some((digest, _, seen)) if digest == live.digest => Basis::Fresh { seen: Some(seen) },
        Some(_) if p.rem => {
            return Err(mismatch(
                &mut store,
                &t,
                &tag_,
                &live,
                "REM deletes the file only under its current tag",
                &p.ops,
                Around::Claims,
            ))
        }
        Some((_, snap, _)) if only_mv || p.ops.iter().all(|(_, op)| gate::head_or_tail(op)) => {
            // `<1` and `>$` follow their neighbour when lines were added above the first or below the last line.
            let mut carried = p.ops.clone();
            let mut moved = false;
            if let (Some(snap), false) = (&snap, only_mv) {
                let snap_lines = tag::lines(snap);
                let map = drift::LineMap::new(&snap_lines, live_lines);
                for (k, (at, op)) in p.ops.iter().enumerate() {
                    let head = matches!(op, Op::Insert { at: Pos::Before(1), .. });
                    match map.edge(&snap_lines, live_lines, head) {
                        Ok(None) => {}
                        Ok(Some(d)) => {
                            carried[k].1 = shift_edge(op, d, snap_lines.len() as u32);
                            moved = true;
                        }
                        Err(r) => {
                            return Err(mismatch(
                                &mut store,
                                &t,
                                &tag_,
                                &live,
                                &format!("ops line {at}: {}", r.why),
                                &p.ops,
                                Around::Moved {
                                    map: &map,
                                    snap_len: snap_lines.len() as u32,
                                    extra: r.show,
                                },
                            ))
                        }
                    }
                }
            }
            if !moved {
                warnings.push(format!(
                    "tag {tag_} was stale ({} changed since; it was {} before this edit): the head/tail insertions went \
                     to the current file.",
                    t.shown, live.tag
                ));
                Basis::HeadTail
            } else {
                warnings.push(format!(
                    "tag {tag_} was stale ({} changed since; it was {} before this edit): lines were added at the head \
                     or tail, so the insertions went next to the lines they were written against.",
                    t.shown, live.tag
                ));
                Basis::Drift { ops: carried }
            }
        }
        Some((_, None, _)) => {
            return Err(mismatch(
                &mut store,
                &t,
                &tag_,
                &live,
                "the shown version was too large to keep for comparison",
                &p.ops,
                Around::Claims,
            ))
        }
        Some((_, Some(snap), seen)) => {
            let snap_lines = tag::lines(&snap);
            gate::check_ranges(&p.ops, snap_lines.len() as u32, &t.shown)?;
            let unseen = gate::unseen(&p.ops, &seen, 0);
            if !unseen.is_empty() {
                return Err(mismatch(
                    &mut store,
                    &t,
                    &tag_,
                    &live,
                    &format!("line {} was never shown to you under that tag", unseen[0]),
                    &p.ops,
                    Around::Claims,
                ));
            }
            let map = drift::LineMap::new(&snap_lines, live_lines);
            let mut offsets = Vec::with_capacity(p.ops.len());
            let snap_len = snap_lines.len() as u32;
            let mut carried = Vec::with_capacity(p.ops.len());
            for (at, op) in &p.ops {
                let found = if gate::head_or_tail(op) {
                    let head = matches!(op, Op::Insert { at: Pos::Before(1), .. });
                    map.edge(&snap_lines, live_lines, head).map(|d| match d {
                        None => (0, op.clone()),
                        Some(d) => (d, shift_edge(op, d, snap_len)),
                    })
                } else {
                    let (ca, cb) = gate::claim(op, snap_len);
                    let exact = matches!(op, Op::Replace { .. } | Op::Cut { .. });
                    map.offset(&snap_lines, live_lines, ca as usize, cb as usize, exact)
                        .map(|d| (d, shift(op, d)))
                };
                match found {
                    Ok((d, moved)) => {
                        offsets.push(d);
                        carried.push((*at, moved));
                    }
                    Err(r) => {
                        return Err(mismatch(
                            &mut store,
                            &t,
                            &tag_,
                            &live,
                            &format!("ops line {at}: {}", r.why),
                            &p.ops,
                            Around::Moved {
                                map: &map,
                                snap_len: snap_lines.len() as u32,
                                extra: r.show,
                            },
                        ))
                    }
                }
            }
            let moved: Vec<String> = p
                .ops
                .iter()
                .zip(&offsets)
                .filter(|(_, d)| **d != 0)
                .map(|((at, _), d)| format!("ops line {at} by {d:+}"))
                .collect();
            warnings.push(format!(
                "tag {tag_} was stale ({} changed since); the edit was carried over to the current file{}.",
                t.shown,
                if moved.is_empty() {
                    " at the same line numbers".to_string()
                } else {
                    format!(" with lines shifted ({})", moved.join(", "))
                }
            ));
            Basis::Drift { ops: carried }
        }
    };

    // Ops in live coordinates.
    let ops: Vec<(usize, Op)> = match &basis {
        Basis::Drift { ops } => ops.clone(),
        _ => p.ops.clone(),
    };
    if !matches!(basis, Basis::Drift { .. }) {
        gate::check_ranges(&ops, live_len, &t.shown)?;
    }
    if let Basis::Fresh { seen: Some(seen) } = &basis {
        // REM claims no anchor, so the gate below would pass it whatever was seen: a file none of whose lines a
        // result showed (a tag known only from an error message) is not deleted.
        if p.rem && live_len > 0 && matches!(seen, Seen::Lines(l) if l.is_empty()) {
            return Err(HostError::new(
                EDIT_LINES_UNSEEN,
                format!(
                    "REM deletes {} but no result in this session showed any of its lines (a tag alone is not \
                     provenance). Nothing was changed. Read {} first, then send the REM again with the tag Read shows.",
                    t.shown, t.shown
                ),
            ));
        }
        let unseen = gate::unseen(&ops, seen, REVEAL_LINES);
        if !unseen.is_empty() {
            let (e, mark) = gate::reveal(&t.shown, &live.tag, live_lines, &unseen);
            if let Some(m) = mark {
                store.mark_seen(&t.canonical, &live.digest, &m);
            }
            return Err(e);
        }
    }

    if p.rem {
        hook.before_remove(&t.canonical, &old.bytes, old.mode)
            .map_err(crate::host::write::review_failed)?;
        fs.remove(&rel, &old, &t.shown)?;
        hook.settle(true);
        store.invalidate(&t.canonical);
        return Ok(EditResult {
            path: t.shown.clone(),
            root: t.root,
            tag: String::new(),
            added: 0,
            removed: doc.len() as u64,
            deleted: true,
            moved_from: None,
            warnings: warnings.clone(),
            text: with_warnings(format!("Deleted {} ({} lines).", t.shown, doc.len()), &warnings),
        });
    }

    // Registers: captures of this call, then pastes.
    let mut captured: HashMap<Reg, (usize, Vec<String>)> = HashMap::new();
    for (_, op) in &ops {
        if let Op::Cut { from, to, reg } = op {
            let lines: Vec<String> = live_lines[*from as usize - 1..*to as usize]
                .iter()
                .map(|s| s.to_string())
                .collect();
            captured.entry(reg.clone()).or_insert((0, Vec::new())).0 += 1;
            captured.get_mut(reg).expect("inserted").1 = lines;
        }
    }
    let pasted: Vec<&Reg> = ops
        .iter()
        .filter_map(|(_, op)| match op {
            Op::Replace { src: Src::Paste(r), .. } | Op::Insert { src: Src::Paste(r), .. } => Some(r),
            _ => None,
        })
        .collect();
    for (reg, (count, lines)) in &captured {
        let kept = matches!(reg, Reg::Named(_)) || pasted.contains(&reg);
        if !kept {
            continue;
        }
        if *count > 1 {
            // Reported on paste (ambiguous); a named register captured twice is refused outright.
            if let Reg::Named(n) = reg {
                return Err(HostError::new(
                    EDIT_REGISTER_AMBIGUOUS,
                    format!(
                        "register @{n} is captured by {count} CUTs in this call; give each CUT its own register name."
                    ),
                ));
            }
            continue;
        }
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
        if lines.len() > MAX_CAPTURE_LINES || bytes > MAX_CAPTURE_BYTES {
            return Err(HostError::new(
                EDIT_AMPLIFICATION_LIMIT,
                format!(
                    "{} would capture {} lines ({bytes} bytes); a register holds at most {MAX_CAPTURE_LINES} lines and \
                     {MAX_CAPTURE_BYTES} bytes. Move the block in smaller pieces, or CUT without a register and PUT the \
                     lines as + rows.",
                    reg.show(),
                    lines.len()
                ),
            ));
        }
    }
    let mut regs = lock(regs_m);
    let mut sources: Vec<Vec<String>> = Vec::with_capacity(ops.len());
    let mut expanded = 0usize;
    for (at, op) in &ops {
        let src = match op {
            Op::Replace { src, .. } | Op::Insert { src, .. } => src,
            Op::Cut { .. } => {
                sources.push(Vec::new());
                continue;
            }
        };
        let lines = match src {
            Src::Body(b) => b.clone(),
            Src::Paste(r) => match (captured.get(r), r) {
                (Some((1, l)), _) => l.clone(),
                (Some(_), _) => {
                    return Err(HostError::new(
                        EDIT_REGISTER_AMBIGUOUS,
                        format!(
                        "ops line {at}: {} was captured by more than one CUT in this call; name each CUT's register \
                             (`CUT N.=M @name`) and paste by name.",
                        r.show()
                    ),
                    ))
                }
                (None, Reg::Named(n)) => match regs.get(n) {
                    Some(l) => l,
                    None => {
                        return Err(HostError::new(
                            EDIT_REGISTER_EMPTY,
                            format!(
                            "ops line {at}: register @{n} holds nothing (no CUT ... @{n} in this call or an earlier \
                                 landed Edit of this session, or it was dropped: 16 are kept). CUT the lines into it \
                                 first, or write them as + rows."
                        ),
                        ))
                    }
                },
                (None, Reg::Anon) => {
                    return Err(HostError::new(
                        EDIT_REGISTER_EMPTY,
                        format!(
                        "ops line {at}: the anonymous register is empty: it only holds a CUT without a register name \
                             from this same call. Add that CUT, or paste a named register."
                    ),
                    ))
                }
            },
        };
        expanded += lines.len();
        if expanded > MAX_EXPANDED_LINES {
            return Err(HostError::new(
                EDIT_AMPLIFICATION_LIMIT,
                format!(
                    "the operations insert more than {MAX_EXPANDED_LINES} lines in all (body rows plus pasted \
                     registers). Split the change into several Edit calls, or use Write for a whole-file rewrite."
                ),
            ));
        }
        sources.push(lines);
    }

    // Steps in live coordinates, sorted.
    let mut steps: Vec<Step> = ops
        .iter()
        .zip(&sources)
        .map(|((_, op), lines)| {
            let (start, end, order) = match *op {
                Op::Replace { from, to, .. } | Op::Cut { from, to, .. } => (from as usize - 1, to as usize, 2),
                Op::Insert { at: Pos::Before(n), .. } => ((n as usize).saturating_sub(1).min(doc.len()), 0, 1),
                Op::Insert { at: Pos::After(n), .. } => (n as usize, 0, 0),
                Op::Insert { at: Pos::End, .. } => (doc.len(), 0, 0),
            };
            let end = if order == 2 { end } else { start };
            Step {
                start,
                end,
                order,
                lines: lines.as_slice(),
            }
        })
        .collect();
    steps.sort_by_key(|s| (s.start, s.order));
    let mut applied: Applied = apply::apply(&doc, &steps);
    let moving = p.mv.is_some();
    if applied.bytes.as_bytes() == old.bytes.as_slice() && !moving {
        return Err(HostError::new(
            EDIT_NO_CHANGE,
            format!(
                "the operations leave {} exactly as it is (tag {}); nothing was written. Check the + rows: they must \
                 differ from the lines they replace.",
                t.shown, live.tag
            ),
        ));
    }

    // MV: the destination must be inside the session roots and must not exist.
    let dest = match &p.mv {
        None => None,
        Some(d) => {
            let r = roots.resolve(d)?;
            if let Some(why) = r.external {
                return Err(super::paths::outside_error(&r, why));
            }
            if r.canonical == t.canonical {
                return Err(HostError::invalid(format!(
                    "MV {d} names the file itself; give a new path."
                )));
            }
            if r.root == Root::Scratch {
                roots.ensure_scratch()?;
            }
            // Checked before anything is written, so a taken destination leaves the file as it was.
            if fs
                .stat(&rel_of(&r.canonical)?)
                .map_err(|e| super::fileio::io_err(&r.shown, &e))?
                .is_some()
            {
                return Err(HostError::invalid(format!(
                    "{} already exists; MV never replaces a file. Choose another destination, or REM that file first.",
                    r.shown
                )));
            }
            Some(r)
        }
    };
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
    // The new text is normalised and hashed (its tag and fingerprint) on a second thread while this one writes it.
    let (written, (new_owned, (new_digest, new_tag, new_fp))) = on_the_side(
        applied.bytes.len(),
        || {
            let n = tag::normalize_str(&applied.bytes);
            let (digest, tag_) = tag::digest_and_tag(&n);
            let id = (digest, tag_, tag::fingerprint(&n));
            // A copy only when normalisation changed the text (a BOM or CR).
            let owned = match n {
                Cow::Borrowed(b) if b.len() == applied.bytes.len() => None,
                other => Some(other.into_owned()),
            };
            (owned, id)
        },
        || {
            if changed {
                fs.replace(&rel, &old, applied.bytes.as_bytes(), &t.shown)
            } else {
                Ok(())
            }
        },
    );
    written?;
    let mut final_t = t.clone();
    if let Some(d) = &dest {
        let drel = rel_of(&d.canonical)?;
        if let Err(e) = fs.move_noreplace(&rel, &drel, applied.bytes.as_bytes(), old.mode, &d.shown) {
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
        final_t = d.clone();
    }
    hook.settle(true);

    // Commit: registers, snapshot, render.
    for (reg, (count, lines)) in captured {
        if let (Reg::Named(n), 1) = (&reg, count) {
            regs.set(n, lines);
        }
    }
    let norm = tag::Normalized {
        text: new_owned.unwrap_or_else(|| std::mem::take(&mut applied.bytes)),
        tag: new_tag,
        digest: new_digest,
        fp: new_fp,
    };
    let (mut text, shown) = apply::render(&final_t.shown, &norm.tag, &norm.text, &applied);
    let carried = match &basis {
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
        warnings: warnings.clone(),
        text: with_warnings(text, &warnings),
    })
}

/// Texts at least this large are hashed on a second thread beside other work (a thread costs tens of microseconds).
const SIDE_THREAD_MIN: usize = 512 * 1024;

/// Runs `side` on a second thread while `main` runs on this one, and returns both results (sequentially when `len`
/// is below `SIDE_THREAD_MIN` or no thread can be started). A panic on the side thread is raised again here.
fn on_the_side<S: Send, M>(len: usize, side: impl FnOnce() -> S + Send, main: impl FnOnce() -> M) -> (M, S) {
    if len < SIDE_THREAD_MIN {
        let m = main();
        return (m, side());
    }
    let slot = Mutex::new(Some(side));
    std::thread::scope(|sc| {
        let run = || lock(&slot).take().map(|f| f());
        let spawned = std::thread::Builder::new()
            .name("pct-edit-hash".into())
            .spawn_scoped(sc, run)
            .ok();
        let m = main();
        let s = spawned.and_then(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        (m, s.unwrap_or_else(|| run().expect("the side work runs once")))
    })
}

fn with_warnings(mut text: String, warnings: &[String]) -> String {
    for w in warnings {
        text.push_str("\nWarning: ");
        text.push_str(w);
    }
    text
}

/// `PUT <1` or `PUT >$` next to the line that was the first or the last (of `snap_len`), which moved by `d`.
fn shift_edge(op: &Op, d: isize, snap_len: u32) -> Op {
    let at = match op {
        Op::Insert { at: Pos::Before(1), .. } => Pos::Before((1 + d) as u32),
        Op::Insert { at: Pos::End, .. } => Pos::After((snap_len as isize + d) as u32),
        _ => return op.clone(),
    };
    match op {
        Op::Insert { src, .. } => Op::Insert { at, src: src.clone() },
        _ => op.clone(),
    }
}

/// `op` with its line numbers moved by `d` (drift recovery; head/tail insertions stay).
fn shift(op: &Op, d: isize) -> Op {
    let m = |n: u32| (n as isize + d) as u32;
    match op {
        Op::Replace { from, to, src } => Op::Replace {
            from: m(*from),
            to: m(*to),
            src: src.clone(),
        },
        Op::Cut { from, to, reg } => Op::Cut {
            from: m(*from),
            to: m(*to),
            reg: reg.clone(),
        },
        Op::Insert { at: Pos::Before(1), .. } | Op::Insert { at: Pos::End, .. } => op.clone(),
        Op::Insert {
            at: Pos::Before(n),
            src,
        } => Op::Insert {
            at: Pos::Before(m(*n)),
            src: src.clone(),
        },
        Op::Insert { at: Pos::After(n), src } => Op::Insert {
            at: Pos::After(m(*n)),
            src: src.clone(),
        },
    }
}

#[cfg(test)]
mod tests;
