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

/// One change of the patch in the shown copy's numbering: `removed` lines from `start` become `new` (the chunk's
/// context at its ends dropped, so only what changes and the context between changes remain).
struct Core<'p> {
    start: usize,
    removed: usize,
    new: Vec<NewLine<'p>>,
}

fn core(e: Edit<'_>) -> Core<'_> {
    let (mut start, mut removed, mut new) = (e.start, e.old_len, e.new);
    let lead = new
        .iter()
        .enumerate()
        .take_while(|(k, l)| *k < removed && **l == NewLine::File(start + k))
        .count();
    new.drain(..lead);
    start += lead;
    removed -= lead;
    while removed > 0 && new.last() == Some(&NewLine::File(start + removed - 1)) {
        new.pop();
        removed -= 1;
    }
    Core { start, removed, new }
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
    for (k, e) in edits.into_iter().enumerate() {
        let c = core(e);
        if c.removed == 0 && c.new.is_empty() {
            continue; // the chunk changes nothing
        }
        let found = if c.removed > 0 {
            map.offset(old, live, c.start + 1, c.start + c.removed, false)
        } else {
            map.gap(old, c.start)
        };
        let d = found.map_err(|r| format!("change {} of the patch: {}", k + 1, r.why))?;
        let at = |i: usize| (i as isize + d) as usize;
        // The lines it removes must be what the model saw, byte for byte; context between its changes keeps the
        // current bytes (and only has to be the same line, as the diff compares them).
        for i in c.start..c.start + c.removed {
            if !c.new.contains(&NewLine::File(i)) && old[i] != live[at(i)] {
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
        let new = c
            .new
            .into_iter()
            .map(|l| match l {
                NewLine::File(i) => NewLine::File(at(i)),
                p => p,
            })
            .collect();
        out.push(Edit {
            start,
            old_len: c.removed,
            new,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
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

    /// Generated drift over duplicate-heavy files (the cases of Edit's property test): a patch written from the shown
    /// copy with 3 context lines, carried over through it, equals the truth (the change applied to the shown copy,
    /// then the drift replayed) or is refused.
    #[test]
    fn carried_over_patches_equal_the_true_alignment() {
        use crate::host::edit::drift_cases::{self as dc, Rng};
        let (mut carried, mut refused) = (0, 0);
        for seed in 0..3000u64 {
            let mut rng = Rng::new(seed ^ 0x5EED);
            let old = dc::file(&mut rng);
            let Some((drift, new)) = dc::drift(&mut rng, &old) else {
                continue;
            };
            let n = old.len();
            let s = rng.below(n + 1);
            let d = if s == n { 0 } else { rng.below(3).min(n - s) };
            let add: Vec<String> = (0..rng.below(3)).map(|k| format!("NEW{k}")).collect();
            if d == 0 && add.is_empty() {
                continue;
            }
            let mut body = String::from("@@\n");
            for l in &old[s.saturating_sub(3)..s] {
                body.push_str(&format!(" {l}\n"));
            }
            for l in &old[s..s + d] {
                body.push_str(&format!("-{l}\n"));
            }
            for l in &add {
                body.push_str(&format!("+{l}\n"));
            }
            for l in &old[s + d..(s + d + 3).min(n)] {
                body.push_str(&format!(" {l}\n"));
            }
            let truth = dc::merge(&old, &[(s, d, add)], &drift).map(|t| t.join("\n"));
            match run(&dc::text(&old), &dc::text(&new), &body) {
                Ok(got) => {
                    carried += 1;
                    assert_eq!(
                        Some(got),
                        truth,
                        "seed {seed}: shown {old:?}, now {new:?}, patch {body:?}"
                    );
                }
                Err(_) => refused += 1,
            }
        }
        assert!(carried > 300 && refused > 100, "{carried} carried, {refused} refused");
    }
}
