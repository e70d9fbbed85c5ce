//! Locating a patch through the copy of the file the model was shown (docs/patch.md "Drift"). A patch carries no
//! line numbers, but the host tools keep each file as the model's Read, Grep or Write showed it (docs/host.md
//! "Session snapshot store"). When a chunk's context no longer matches the current file (or matches it twice), the
//! patch is matched against that copy instead — where the model wrote it — and each change is carried to the current
//! file through the diff between the copy and the file, exactly as Edit carries a stale tag (docs/host.md "Edits under
//! drift"): the lines it removes must be byte-identical now, it and one neighbour on each side must have moved by one
//! offset, and every alignment of the two files must agree on that. Anything else is refused.

use super::matcher::{self, Edit, NewLine};
use super::parser::Chunk;
use crate::host::edit::drift::LineMap;
use crate::host::tag;

/// One change of the patch in the shown copy's numbering: `removed` lines from `start` become `new` (only lines the
/// patch adds: the context of its chunk is not part of any change).
struct Core<'p> {
    start: usize,
    removed: usize,
    new: Vec<NewLine<'p>>,
}

/// The changes of one located chunk: each run of removed and added lines between two of its context lines. A chunk
/// that joins two changes with context between them is two operations, as two Edit operations would be, so each is
/// carried over by its own offset (drift between them, in the context, moves only the second) and proven by its own
/// neighbours (docs/patch.md "Drift").
fn cores(e: Edit<'_>) -> Vec<Core<'_>> {
    /// The change of the lines `at..upto` (those nothing kept) and the lines added since the last context line.
    fn flush<'p>(at: usize, upto: usize, pending: &mut Vec<NewLine<'p>>, out: &mut Vec<Core<'p>>) {
        if upto > at || !pending.is_empty() {
            out.push(Core {
                start: at,
                removed: upto - at,
                new: std::mem::take(pending),
            });
        }
    }
    let mut out = Vec::new();
    let mut at = e.start; // the next line of the copy the chunk has not accounted for
    let mut pending = Vec::new();
    for l in e.new {
        match l {
            // A context line (they come in ascending order): the lines before it that nothing kept were removed.
            NewLine::File(i) => {
                flush(at, i.max(at), &mut pending, &mut out);
                at = i + 1;
            }
            added => pending.push(added),
        }
    }
    flush(at, e.start + e.old_len, &mut pending, &mut out);
    out
}

/// Why a patch could not be carried over through a shown copy.
#[derive(Debug)]
pub enum Miss {
    /// The patch does not match the copy either (it was not written from it).
    NotInCopy,
    /// It matches the copy, but where that is now is ambiguous or conflicting.
    Refused(String),
}

/// The edits of `chunks` on the current file `live`, located in the `shown` copy (its text as recorded) and carried
/// over; `Err` says why not (for the refusal's message). `path` names the file in messages.
pub fn carry<'p>(path: &str, shown: &str, live: &[&str], chunks: &[Chunk<'p>]) -> Result<Vec<Edit<'p>>, Miss> {
    let old = tag::lines(shown);
    let edits = matcher::plan_with(path, &old, chunks, false).map_err(|_| Miss::NotInCopy)?;
    carry_edits(&old, live, edits).map_err(Miss::Refused)
}

/// Each of `edits` (on the shown lines `old`) carried to `live`.
fn carry_edits<'p>(old: &[&str], live: &[&str], edits: Vec<Edit<'p>>) -> Result<Vec<Edit<'p>>, String> {
    let map = LineMap::new(old, live);
    let mut out: Vec<Edit<'p>> = Vec::with_capacity(edits.len());
    for (k, c) in edits.into_iter().flat_map(cores).enumerate() {
        let found = if c.removed > 0 {
            map.offset(old, live, c.start + 1, c.start + c.removed, false)
        } else {
            map.gap(old, c.start)
        };
        let d = found.map_err(|r| format!("change {} of the patch: {}", k + 1, r.why))?;
        let at = |i: usize| (i as isize + d) as usize;
        // The lines it removes must be what the model saw, byte for byte.
        for i in c.start..c.start + c.removed {
            if old[i] != live[at(i)] {
                return Err(format!(
                    "change {} of the patch removes line {} of the copy you were shown, which changed since (it is \
                     line {} now)",
                    k + 1,
                    i + 1,
                    at(i) + 1
                ));
            }
        }
        let start = at(c.start);
        if out.last().is_some_and(|p| start < p.start + p.old_len) {
            return Err(format!("change {} of the patch would overlap the one before it", k + 1));
        }
        out.push(Edit {
            start,
            old_len: c.removed,
            new: c.new,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::edit::drift_cases::Hunk;
    use crate::patch::parser::parse;

    /// The file after the Update body `body`, located through `shown` and carried to `live`.
    fn run(shown: &str, live: &str, body: &str) -> Result<String, String> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let parsed = parse(&patch).map_err(|e| e.to_string())?;
        let chunks = match &parsed.hunks[0] {
            crate::patch::parser::Hunk::Update { chunks, .. } => chunks.clone(),
            _ => unreachable!(),
        };
        let lines = tag::lines(live);
        let edits = carry("f", shown, &lines, &chunks).map_err(|m| match m {
            Miss::NotInCopy => "not in the shown copy".to_string(),
            Miss::Refused(why) => why,
        })?;
        Ok(matcher::apply_edits(&lines, &edits).join("\n"))
    }

    #[test]
    fn a_copy_of_the_window_added_above_is_told_apart_by_the_shown_copy() {
        let shown = "h\ni\nk\nl\nm\nn\n";
        let live = "k\nl\nm\nh\ni\nk\nl\nm\nn\n";
        assert_eq!(
            run(shown, live, "@@\n k\n-l\n+L\n m\n").unwrap(),
            "k\nl\nm\nh\ni\nk\nL\nm\nn"
        );
    }

    #[test]
    fn drift_next_to_the_change_or_inside_a_run_is_refused() {
        // A line added inside a run of equal lines: the `item` the patch means could be either.
        let shown = "begin\nitem\nitem\nitem\nend\n";
        let live = "begin\nitem\nitem\nitem\nitem\nend\n";
        let e = run(shown, live, "@@\n begin\n item\n-item\n+ITEM\n item\n end\n").unwrap_err();
        assert!(e.contains("ambiguous"), "{e}");
        // A removed line changed since: a conflict.
        let e = run("a\nb\nc\n", "a\nB\nc\n", "@@\n a\n-b\n+b2\n c\n").unwrap_err();
        assert!(e.contains("changed or removed"), "{e}");
        let e = run("a\nb\nc\n", "a\n  b\nc\n", "@@\n a\n-b\n+b2\n c\n").unwrap_err();
        assert!(
            e.contains("removes line 2 of the copy you were shown, which changed since"),
            "{e}"
        );
        // The patch does not match the shown copy either.
        let e = run("a\nb\nc\n", "a\nb\nc\nd\n", "@@\n a\n-q\n+r\n").unwrap_err();
        assert_eq!(e, "not in the shown copy");
    }

    #[test]
    fn context_between_changes_keeps_the_current_bytes_and_moves_with_them() {
        let shown = "a\nb\nc\nd\ne\nf\n";
        let live = "top\na\nb\nc  \nd\ne\nf\n";
        // `c` got trailing spaces since: it is context, so it stays as it is now; the two changes move down by one.
        assert_eq!(
            run(shown, live, "@@\n a\n-b\n+B\n c\n-d\n+D\n e\n").unwrap(),
            "top\na\nB\nc  \nD\ne\nf"
        );
    }

    /// The file after the Update body `body` through the whole preflight of an Update (`preflight::updated`): the
    /// current file first, the shown copy when the context drifted; and whether it went through the copy.
    fn whole(shown: &str, live: &str, body: &str) -> Result<(String, bool), String> {
        let patch = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let parsed = parse(&patch).map_err(|e| e.to_string())?;
        let chunks = match &parsed.hunks[0] {
            crate::patch::parser::Hunk::Update { chunks, .. } => chunks.clone(),
            _ => unreachable!(),
        };
        let path = crate::patch::paths::PatchPath {
            rel: "f".into(),
            abs: "/f".into(),
        };
        let copy: std::sync::Arc<str> = shown.into();
        let copies = move |_: &str| vec![copy.clone()];
        let mut notes = Vec::new();
        let out = crate::patch::preflight::updated(&path, live.as_bytes(), &chunks, &copies, &mut notes)
            .map_err(|e| e.to_string())?;
        Ok((String::from_utf8(out).unwrap(), !notes.is_empty()))
    }

    #[test]
    fn drift_between_two_changes_of_one_chunk_moves_only_the_second() {
        // Two changes three lines apart (one chunk), and a line added between them since: each change is carried by
        // its own offset, as two Edit operations would be.
        let shown = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let live = "a\nb\nc\nd\nNEW\ne\nf\ng\nh\n";
        let body = "@@\n a\n-b\n+B\n c\n d\n e\n-f\n+F\n g\n";
        assert_eq!(run(shown, live, body).unwrap(), "a\nB\nc\nd\nNEW\ne\nF\ng\nh");
        assert_eq!(
            whole(shown, live, body).unwrap(),
            ("a\nB\nc\nd\nNEW\ne\nF\ng\nh\n".to_string(), true)
        );
        // Drift next to either change is still refused: the line between the changes is the evidence of both.
        let live = "a\nb\nc\nNEW\nd\ne\nf\ng\nh\n";
        let body = "@@\n a\n-b\n+B\n c\n-d\n+D\n e\n";
        assert!(run(shown, live, body).unwrap_err().contains("change 2 of the patch"));
    }

    /// Seeds of the property tests below: `PCT_DRIFT_SEEDS` (default 3,000; the docs' figures use 100,000).
    fn seeds() -> u64 {
        std::env::var("PCT_DRIFT_SEEDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000)
    }

    /// One or two changes (hunks against `old`) with 1 to 4 context lines between them, and the Update body of one
    /// chunk that holds them with 3 context lines on each side; `None` when the draw changes nothing.
    fn changes(rng: &mut crate::host::edit::drift_cases::Rng, old: &[String]) -> Option<(Vec<Hunk>, String)> {
        let n = old.len();
        let draw = |rng: &mut crate::host::edit::drift_cases::Rng, s: usize, k: usize| -> Hunk {
            let d = if s == n { 0 } else { rng.below(3).min(n - s) };
            (s, d, (0..rng.below(3)).map(|r| format!("NEW{k}{r}")).collect())
        };
        let s = rng.below(n + 1);
        let mut hunks = vec![draw(rng, s, 0)];
        if rng.chance(40) {
            let s = hunks[0].0 + hunks[0].1 + 1 + rng.below(4);
            if s <= n {
                hunks.push(draw(rng, s, 1));
            }
        }
        hunks.retain(|h| h.1 > 0 || !h.2.is_empty());
        let (first, last) = (hunks.first()?.0, hunks.last()?.0 + hunks.last()?.1);
        let mut body = String::from("@@\n");
        let mut at = first.saturating_sub(3);
        for (s, d, add) in &hunks {
            for l in &old[at..*s] {
                body.push_str(&format!(" {l}\n"));
            }
            for l in &old[*s..s + d] {
                body.push_str(&format!("-{l}\n"));
            }
            for l in add {
                body.push_str(&format!("+{l}\n"));
            }
            at = s + d;
        }
        for l in &old[last..(last + 3).min(n)] {
            body.push_str(&format!(" {l}\n"));
        }
        Some((hunks, body))
    }

    /// Generated drift over duplicate-heavy files (the cases of Edit's property test): a patch written from the shown
    /// copy with 3 context lines (one or two changes in one chunk), carried over through it, equals the truth (the
    /// change applied to the shown copy, then the drift replayed) or is refused — carried directly (`carry`) and
    /// through the whole Update (`updated`: the current file first, then the copy).
    #[test]
    fn carried_over_patches_equal_the_true_alignment() {
        use crate::host::edit::drift_cases::{self as dc, Rng};
        let (mut carried, mut refused, mut two) = (0, 0, 0);
        let (mut through_copy, mut by_context, mut standing_not_truth, mut refused_whole) = (0, 0, 0, 0);
        for seed in 0..seeds() {
            let mut rng = Rng::new(seed ^ 0x5EED);
            let old = dc::file(&mut rng);
            let Some((drift, new)) = dc::drift(&mut rng, &old) else {
                continue;
            };
            let Some((hunks, body)) = changes(&mut rng, &old) else {
                continue;
            };
            let truth = dc::merge(&old, &hunks, &drift);
            match run(&dc::text(&old), &dc::text(&new), &body) {
                Ok(got) => {
                    carried += 1;
                    two += usize::from(hunks.len() == 2);
                    assert_eq!(
                        Some(got),
                        truth.as_ref().map(|t| t.join("\n")),
                        "seed {seed}: shown {old:?}, now {new:?}, patch {body:?}"
                    );
                }
                Err(_) => refused += 1,
            }
            // Through the whole Update, a chunk whose context matches the current file exactly once is placed there
            // (its context is its claim, as without a session); one that does not is carried through the copy, and
            // that must equal the truth.
            match whole(&dc::text(&old), &dc::text(&new), &body) {
                Ok((got, true)) => {
                    through_copy += 1;
                    assert_eq!(
                        Some(got),
                        truth.as_deref().map(dc::text),
                        "seed {seed} (whole Update): shown {old:?}, now {new:?}, patch {body:?}"
                    );
                }
                Ok((got, false)) => {
                    by_context += 1;
                    standing_not_truth += usize::from(Some(&got) != truth.as_deref().map(dc::text).as_ref());
                }
                Err(_) => refused_whole += 1,
            }
        }
        let share = seeds() as usize / 10;
        assert!(
            carried > share
                && refused > share / 3
                && two > share / 10
                && through_copy > share / 3
                && refused_whole > share / 3,
            "{carried} carried ({two} with two changes), {refused} refused; whole Update: {through_copy} through the \
             copy, {by_context} by context ({standing_not_truth} of them not the truth), {refused_whole} refused"
        );
        eprintln!(
            "{carried} carried ({two} with two changes), {refused} refused; whole Update: {through_copy} through the \
             copy, {by_context} by context ({standing_not_truth} of them not the truth), {refused_whole} refused"
        );
    }
}
