//! The retry budget (docs/spec/host-tools.md "Retry budget"): per prompt (`turn`) and path, three counted failures
//! stop the model's repair loop for that path. EDIT_TAG_MISMATCH, EDIT_TAG_UNKNOWN and EDIT_LINES_UNSEEN each get one
//! free retry per path (a re-Read or an as-is retry after a complete reveal fixes them); every other failure counts
//! at once; a write that lands clears the path's count. A new turn resets every counter. Failed shell patch commands
//! share the counter through `note_patch_failure`: the apply_patch tool reports each
//! path of a failed patch (`HostSession.notePatchResult`, src/pi/tools/patch.ts); `git apply`/`patch` run through Bash
//! are not recognised.

use crate::host::error::{HostCode, EDIT_LINES_UNSEEN, EDIT_TAG_MISMATCH, EDIT_TAG_UNKNOWN, TOOL_FAILED};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The last counted failure of a path: a failed Edit's code, or a failed shell patch command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastFailure {
    Edit(HostCode),
    Patch,
}

impl LastFailure {
    /// The code of the refusal that stops the path: the Edit's own code, TOOL_FAILED after a patch command.
    pub fn code(self) -> HostCode {
        match self {
            LastFailure::Edit(c) => c,
            LastFailure::Patch => TOOL_FAILED,
        }
    }
}

/// The word the refusal's message names (`last: ...`).
impl fmt::Display for LastFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LastFailure::Edit(c) => f.write_str(c.as_str()),
            LastFailure::Patch => f.write_str("PATCH_FAILED"),
        }
    }
}

/// Counted failures that stop a path for the rest of the turn.
pub const MAX_COUNTED_FAILURES: u32 = 3;

#[derive(Debug, Default)]
struct PathBudget {
    counted: u32,
    free_used: HashSet<HostCode>,
    last_code: Option<LastFailure>,
}

/// What a failure did to the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// Counted failures of the path in this turn after this one.
    pub counted: u32,
    /// This failure was the free retry of its code.
    pub free: bool,
    /// The path is out of budget for this turn.
    pub exhausted: bool,
}

/// The budget of one session.
#[derive(Debug, Default)]
pub struct Budget {
    turn: Option<String>,
    paths: HashMap<PathBuf, PathBudget>,
}

impl Budget {
    fn enter(&mut self, turn: Option<&str>) {
        if self.turn.as_deref() != turn {
            self.turn = turn.map(str::to_string);
            self.paths.clear();
        }
    }

    /// Whether `path` is already out of budget in `turn` (the call is then refused before it runs), with the code
    /// of the last counted failure.
    pub fn exhausted(&mut self, turn: Option<&str>, path: &Path) -> Option<LastFailure> {
        self.enter(turn);
        let b = self.paths.get(path)?;
        (b.counted >= MAX_COUNTED_FAILURES).then(|| b.last_code.unwrap_or(LastFailure::Patch))
    }

    /// Records a failed Edit with `code` on `path`.
    pub fn note_failure(&mut self, turn: Option<&str>, path: &Path, code: HostCode) -> Charge {
        self.note(turn, path, code, LastFailure::Edit(code))
    }

    fn note(&mut self, turn: Option<&str>, path: &Path, code: HostCode, last: LastFailure) -> Charge {
        self.enter(turn);
        let b = self.paths.entry(path.to_path_buf()).or_default();
        let free = [EDIT_TAG_MISMATCH, EDIT_TAG_UNKNOWN, EDIT_LINES_UNSEEN].contains(&code) && b.free_used.insert(code);
        if !free {
            b.counted += 1;
            b.last_code = Some(last);
        }
        Charge {
            counted: b.counted,
            free,
            exhausted: b.counted >= MAX_COUNTED_FAILURES,
        }
    }

    /// A failed shell patch command (apply_patch, git apply, patch) on `path`: counts at once.
    pub fn note_patch_failure(&mut self, turn: Option<&str>, path: &Path) -> Charge {
        self.note(turn, path, TOOL_FAILED, LastFailure::Patch)
    }

    /// A Write landed on `path` (Write has no turn): its count starts over in the current turn.
    pub fn clear(&mut self, path: &Path) {
        if let Some(b) = self.paths.get_mut(path) {
            b.counted = 0;
            b.last_code = None;
        }
    }

    /// A write landed on `path`: its count starts over (free retries stay used for the turn).
    pub fn note_success(&mut self, turn: Option<&str>, path: &Path) {
        self.enter(turn);
        if let Some(b) = self.paths.get_mut(path) {
            b.counted = 0;
            b.last_code = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::error::{EDIT_PARSE_FAILED, EDIT_RANGE_INVALID};

    #[test]
    fn three_counted_failures_stop_the_path_for_the_turn() {
        let mut b = Budget::default();
        let p = Path::new("/w/a");
        let t = Some("t1");
        assert!(!b.note_failure(t, p, EDIT_RANGE_INVALID).exhausted);
        assert!(!b.note_failure(t, p, EDIT_PARSE_FAILED).exhausted);
        assert_eq!(b.exhausted(t, p), None);
        let c = b.note_failure(t, p, EDIT_RANGE_INVALID);
        assert_eq!(
            c,
            Charge {
                counted: 3,
                free: false,
                exhausted: true
            }
        );
        assert_eq!(b.exhausted(t, p), Some(LastFailure::Edit(EDIT_RANGE_INVALID)));
        // Another path is unaffected; a new turn resets.
        assert_eq!(b.exhausted(t, Path::new("/w/b")), None);
        assert_eq!(b.exhausted(Some("t2"), p), None);
    }

    #[test]
    fn one_free_retry_per_code_and_path_and_success_clears() {
        let mut b = Budget::default();
        let p = Path::new("/w/a");
        let t = Some("t");
        for code in [EDIT_TAG_MISMATCH, EDIT_TAG_UNKNOWN, EDIT_LINES_UNSEEN] {
            assert!(b.note_failure(t, p, code).free, "{code}");
        }
        assert_eq!(b.note_failure(t, p, EDIT_TAG_MISMATCH).counted, 1);
        assert!(b.note_failure(t, Path::new("/w/other"), EDIT_TAG_MISMATCH).free);
        b.note_success(t, p);
        assert_eq!(
            b.note_failure(t, p, EDIT_LINES_UNSEEN).counted,
            1,
            "free retry already used this turn"
        );
        b.note_patch_failure(t, p);
        assert!(b.note_patch_failure(t, p).exhausted);
        let last = b.exhausted(t, p).unwrap();
        assert_eq!(
            (last.to_string(), last.code()),
            ("PATCH_FAILED".to_string(), TOOL_FAILED)
        );
    }
}
