//! The line-anchored Edit (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit", docs/host.md
//! "Edit"): `{path, tag, ops}` edits one existing regular file by line numbers the model was shown under `tag`.
//!
//! `edit` is a pipeline of gates, each in its own module: resolve (parse and the size limits, the call's tag, the
//! file read, path rebinding) → basis (the live file identified; fresh tag | stale: head/tail-only or drift recovery,
//! each with a warning | EDIT_TAG_UNKNOWN | EDIT_TAG_MISMATCH) → ranges and provenance (`gate`) → apply (registers
//! captured and pasted, the steps applied) → record (EDIT_NO_CHANGE, the MV destination, review, the write, the
//! commit). Registers are resolved and limits checked before anything is written; a refusal never changes the file,
//! the store's versions or the named registers (only a complete EDIT_LINES_UNSEEN reveal marks lines seen, by
//! design). The retry budget wraps the whole call (`run`).

pub mod apply;
pub mod basis;
pub mod budget;
pub mod certain;
pub mod drift;
#[cfg(test)]
pub mod drift_cases;
pub mod gate;
pub mod limits;
pub mod parse;
pub mod record;
pub mod registers;
pub mod resolve;

use self::apply::Doc;
use self::basis::{Basis, Live};
use self::budget::Budget;
use self::registers::Registers;
use self::resolve::Opened;
use super::args;
use super::error::*;
use super::fileio::{self, Fs};
use super::paths::{Resolved, Root, Roots};
use super::snapshot::SnapshotStore;
use serde_json::Value;
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
    /// What changed, for the person (docs/render.md "Diffs"); None after REM.
    pub view: Option<crate::diffview::View>,
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
    let a = EditArgs::from_json(args).map_err(plain)?;
    let key = budget_key(roots, &a);
    refuse_if_exhausted(state, turn, &key, &a)?;
    let mut live_tag = None;
    let out = roots
        .resolve_for_call(&a.path, approved)
        .and_then(|t| edit(roots, store, &state.registers, &t, &a, &mut live_tag, hook));
    match out {
        Ok(r) => {
            lock(&state.budget).note_success(turn, &key);
            Ok(r)
        }
        Err(error) => Err(charge(state, turn, &key, error, live_tag)),
    }
}

/// A failure that is not the retry budget's business (arguments that do not parse: no path to count against).
fn plain(error: HostError) -> EditFailure {
    EditFailure {
        error: Box::new(error),
        live_tag: None,
        budget_exhausted: false,
        failures: 0,
    }
}

/// The key the retry budget counts under: the canonical path when it resolves, else the text as given.
fn budget_key(roots: &Roots, a: &EditArgs) -> PathBuf {
    roots
        .resolve(&a.path)
        .map(|r| r.canonical)
        .unwrap_or_else(|_| PathBuf::from(&a.path))
}

/// Refuses at once a path already out of budget in this turn.
fn refuse_if_exhausted(state: &EditState, turn: Option<&str>, key: &Path, a: &EditArgs) -> Result<(), EditFailure> {
    let Some(last) = lock(&state.budget).exhausted(turn, key) else {
        return Ok(());
    };
    Err(EditFailure {
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
    })
}

/// Counts a refused Edit against the retry budget and says so in its message when that was the last one allowed.
fn charge(
    state: &EditState,
    turn: Option<&str>,
    key: &Path,
    mut error: HostError,
    live_tag: Option<String>,
) -> EditFailure {
    let c = lock(&state.budget).note_failure(turn, key, error.code);
    if c.exhausted {
        error.message.push_str(&format!(
            "\nThis was the {}th counted failed Edit of this file in this prompt: stop editing it now and tell \
             the user exactly what did not match (the error above) instead of retrying.",
            c.counted
        ));
    }
    EditFailure {
        error: Box::new(error),
        live_tag,
        budget_exhausted: c.exhausted,
        failures: c.counted,
    }
}

/// The checks an Edit passes before its permission card (docs/host.md "Before the card"), so no decision is spent on a
/// call that cannot land: the arguments, the retry budget, the ops' syntax and the call's tag (present, 4 hex digits,
/// the header's file), and a missing file no shown file can stand in for. Only what the call itself would refuse
/// with the same code and message is refused here, and it counts against the retry budget exactly as that refusal
/// would; everything that needs the file's content (its live tag, the ranges) is left to the call. No file is
/// opened or changed: a missing path is a `stat`.
pub fn precheck(
    roots: &Roots,
    store: &Mutex<SnapshotStore>,
    state: &EditState,
    args: &Value,
    turn: Option<&str>,
) -> Result<(), EditFailure> {
    let a = EditArgs::from_json(args).map_err(plain)?;
    // A path that does not resolve is the card's own refusal (the glue resolves every target first).
    let Ok(target) = roots.resolve(&a.path) else {
        return Ok(());
    };
    let key = target.canonical.clone();
    refuse_if_exhausted(state, turn, &key, &a)?;
    let checked = parse::parse(&a.ops).and_then(|p| {
        let tag_ = resolve::call_tag(roots, &target, &a, &p)?;
        resolve::missing_without_stand_in(store, roots, &target, &tag_)
    });
    checked.map_err(|e| charge(state, turn, &key, e, None))
}

/// The Edit itself, on a resolved target: the gates in order (module header), each in its own function. `live_tag`
/// is set once the live file was read.
fn edit(
    roots: &Roots,
    store_m: &Mutex<SnapshotStore>,
    regs_m: &Mutex<Registers>,
    target: &Resolved,
    a: &EditArgs,
    live_tag: &mut Option<String>,
    hook: &mut crate::review::hook::Hook,
) -> Result<EditResult, HostError> {
    // Resolve: the call's tag and the file it edits.
    let p = parse::parse(&a.ops)?;
    let tag_ = resolve::call_tag(roots, target, a, &p)?;
    let mut warnings = Vec::new();
    let mut fs = Fs::open()?;
    let opened = resolve::open(&mut fs, roots, store_m, target, &tag_, &mut warnings)?;
    let call = Call {
        roots,
        store_m,
        regs_m,
        p: &p,
        tag_: &tag_,
    };
    let out = edit_opened(&call, &mut fs, &opened, warnings, live_tag, hook);
    // The old file (replaced or removed on success) is let go beside the result.
    fileio::release(opened.old);
    out
}

/// What one call brings to the gates after its tag is known.
struct Call<'c> {
    roots: &'c Roots,
    store_m: &'c Mutex<SnapshotStore>,
    regs_m: &'c Mutex<Registers>,
    p: &'c parse::Parsed,
    tag_: &'c str,
}

/// The gates from basis on, for the file `opened` read.
fn edit_opened(
    c: &Call<'_>,
    fs: &mut Fs,
    opened: &Opened,
    mut warnings: Vec<String>,
    live_tag: &mut Option<String>,
    hook: &mut crate::review::hook::Hook,
) -> Result<EditResult, HostError> {
    let (p, tag_) = (c.p, c.tag_);
    let Opened { target: t, rel, old } = opened;
    let text = resolve::utf8(&old.bytes, &t.shown)?;

    // Basis: the live file identified (hashed on a second thread while this one splits a large file into lines),
    // then how the call's tag relates to it.
    let mut store = lock(c.store_m);
    let version = store.lookup(&t.canonical, tag_).cloned();
    let (doc, (live_text, (live_digest, live_tag_s))) =
        basis::identify_beside(text, version.as_ref(), || Doc::split(text));
    // The live lines are the split lines (normalisation only drops the BOM and unifies line endings).
    let live_lines: &[&str] = &doc.lines;
    let live = Live {
        text: &live_text,
        tag: live_tag_s,
        digest: live_digest,
    };
    *live_tag = Some(live.tag.clone());
    let basis = basis::decide(&mut store, t, tag_, &live, live_lines, p, version, &mut warnings)?;

    // Ranges and provenance, on the operations in live line numbers.
    let ops = basis.live_ops(&p.ops);
    gate::ranges(ops, doc.len() as u32, &t.shown, basis.ranges_checked())?;
    if let Basis::Fresh { seen: Some(seen) } = &basis {
        gate::provenance(&mut store, t, &live, live_lines, ops, seen, p.rem)?;
    }
    if p.rem {
        return record::remove(hook, fs, &mut store, t, rel, old, doc.len(), warnings);
    }

    // Apply: registers captured and pasted, the steps applied to the live lines.
    let captured = registers::capture(ops, live_lines)?;
    let mut regs = lock(c.regs_m);
    let sources = registers::sources(ops, &captured, &mut regs)?;
    let steps = apply::steps(ops, &sources, doc.len());
    let applied = apply::apply(&doc, &steps);
    // The person's view of the change: only the replaced ranges are compared (docs/render.md "Diffs").
    let reps: Vec<_> = steps
        .iter()
        .map(|s| crate::diffview::Replacement {
            start: s.start,
            end: s.end,
            lines: s.lines,
        })
        .collect();
    let view = crate::diffview::replacements(live_lines, &reps, &crate::diffview::LIMITS);
    drop(steps);
    record::changes(&applied, &old.bytes, p.mv.is_some(), &t.shown, &live.tag)?;

    // Record: the MV destination checked, then the review record, the write and the commit.
    let dest = match &p.mv {
        None => None,
        Some(d) => Some(record::destination(c.roots, fs, d, t)?),
    };
    drop(sources);
    let landing = record::Landing {
        t,
        rel,
        old,
        applied,
        dest,
    };
    let mut r = record::land(hook, fs, &mut store, &mut regs, captured, &basis, landing, warnings)?;
    r.view = Some(view);
    Ok(r)
}

/// Texts at least this large are identified, and written, on a second thread beside other work (a thread costs tens of
/// microseconds).
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
            .name("pct-edit-side".into())
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

#[cfg(test)]
mod tests;
