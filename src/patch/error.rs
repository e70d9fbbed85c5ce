//! The one error type of the patch executor: what happened to the tree (outcome), a stable code, and a reason
//! that tells the model what to do next. `to_string()` is the exact text the model sees.

use std::fmt;

crate::codes::error_codes! {
    /// Every code a failed patch carries (docs/patch.md "Errors", in the table's order).
    pub enum PatchCode {
        /// The envelope is wrong: no `*** Begin Patch` / `*** End Patch`, a carriage return, no operation.
        InvalidPatch = "invalid-patch" => "send the whole patch from '*** Begin Patch' to '*** End Patch' with LF line endings",
        /// A hunk header or a line inside a hunk is malformed.
        InvalidHunk = "invalid-hunk" => "fix the hunk at the line the message names and send the patch again",
        /// A path is absolute, empty or otherwise not a relative workspace file.
        InvalidPath = "invalid-path" => "use a path relative to the workspace",
        /// A name is over 255 bytes, or the whole path over 4095.
        PathTooLong = "path-too-long" => "use a shorter name or path",
        /// A path contains a `..` segment.
        PathTraversal = "path-traversal" => "name the file by its path inside the workspace, without '..'",
        /// A path resolves to the workspace folder itself.
        WorkspaceRoot = "workspace-root" => "name a file inside the workspace",
        /// A path goes through a symlink inside the workspace.
        SymlinkComponent = "symlink-component" => "patch the real path instead of the one through the symlink",
        /// A folder of a path is a file (or something else that is no folder).
        NonDirectoryComponent = "non-directory-component" => "check the path: the component the message names is not a folder",
        /// Two operations touch one file (or two spellings of one file).
        ConflictingPaths = "conflicting-paths" => "put every change to one file in a single operation, one operation per path",
        /// An Update, Delete or Move source does not exist.
        SourceMissing = "source-missing" => "re-read the workspace; use Add File to create a new file",
        /// A source is a folder, a device or another non-regular file.
        SourceNotRegular = "source-not-regular" => "patch regular files only",
        /// An Add or Move destination already exists.
        DestinationExists = "destination-exists" => "use Update File to change it, or delete it in an earlier patch",
        /// A source, or the sources together, are over the size limits.
        SourceTooLarge = "source-too-large" => "edit the file with a shell tool instead, or split the patch",
        /// Another program changed a source while or after this patch read it.
        SourceChanged = "source-changed" => "re-read the file and send the patch (or its rest) again",
        /// An Update source is not UTF-8.
        NonUtf8Source = "non-utf8-source" => "edit the file with a shell tool; this tool edits UTF-8 text files only",
        /// An Update source has a CR that ends no CRLF.
        BareCr = "bare-cr" => "edit the file with a shell tool; this tool edits files with one line-ending style only",
        /// An Update source mixes LF and CRLF line endings.
        MixedLineEndings = "mixed-line-endings" => "edit the file with a shell tool; this tool edits files with one line-ending style only",
        /// An earlier patch was interrupted while writing; its files were put back first.
        InterruptedPatch = "interrupted-patch" => "re-read the files the message names, then send the patch again",
        /// An interrupted earlier patch could not be put back.
        RecoveryFailed = "recovery-failed" => "check the '.pct-patch-*.journal' file in the workspace root",
        /// A chunk's old lines (or its `@@` line) were not found.
        ContextMismatch = "context-mismatch" => "re-read the file and copy the context lines exactly from it",
        /// A chunk's old lines match at more than one place.
        AmbiguousContext = "ambiguous-context" => "add more unchanged context lines so the chunk matches exactly once",
        /// The call was cancelled before anything was written.
        Aborted = "aborted" => "the call was cancelled; run it again if it is still needed",
        /// The review change could not be recorded before writing (docs/review.md).
        ReviewFailed = "review-failed" => "check the Pi agent folder's free space and permissions, then retry",
        /// A source or a path could not be read or inspected.
        ReadFailed = "read-failed" => "check the file's permissions (an Update needs write permission too), then retry",
        /// A temp file or the journal could not be written before the commit.
        StagingFailed = "staging-failed" => "check free space and permissions, then retry",
        /// The workspace folder is missing, not a folder or not accessible.
        WorkspaceUnavailable = "workspace-unavailable" => "run the patch from a workspace folder that exists and can be read",
        /// A filesystem step of the commit failed; the message lists what is committed and what to re-read.
        CommitFailed = "commit-failed" => "re-read the files the message lists, then send the part of the patch not committed",
    }
}

/// What a failed patch did to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was written (every parse/preflight error, abort, a clean first-step failure).
    NoChange,
    /// Some operations were committed before a filesystem step failed; the rest are known unchanged.
    Partial,
    /// Nothing is known committed, but the failing operation left paths in a state that must be re-read.
    Unknown,
    /// Both: some operations committed and some paths are in an unknown state.
    PartialUnknown,
}

impl Outcome {
    /// The label inside `apply_patch failed (<label>)`.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::NoChange => "no-change",
            Outcome::Partial => "partial",
            Outcome::Unknown => "unknown",
            Outcome::PartialUnknown => "partial; unknown",
        }
    }
}

/// A failed patch. Codes are stable (see docs/patch.md); `reason` is the text after `apply_patch failed (...): `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub outcome: Outcome,
    pub code: PatchCode,
    pub reason: String,
}

impl PatchError {
    /// An error that changed nothing.
    pub fn no_change(code: PatchCode, reason: impl Into<String>) -> Self {
        PatchError {
            outcome: Outcome::NoChange,
            code,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `(no-change): <reason>`; a commit report reads `(partial); committed: ...; reread: ...; ...`.
        let sep = if self.outcome == Outcome::NoChange { ":" } else { ";" };
        write!(f, "apply_patch failed ({}){sep} {}", self.outcome.label(), self.reason)
    }
}

impl std::error::Error for PatchError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_display() {
        let e = PatchError::no_change(PatchCode::Aborted, "aborted");
        assert_eq!(e.to_string(), "apply_patch failed (no-change): aborted");
        assert_eq!(Outcome::PartialUnknown.label(), "partial; unknown");
        assert_eq!(e.code, PatchCode::Aborted);
    }

    /// The rows of the docs/patch.md "Errors" table are exactly [`PatchCode::ALL`], in order, and each row's last
    /// column is the code's next step.
    #[test]
    fn all_matches_the_doc_table() {
        let doc = include_str!("../../docs/patch.md");
        let heading = "### Errors (exact text; stable code in parentheses)";
        let all: Vec<&str> = PatchCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(crate::codes::check::doc_table(doc, heading), all);
        for c in PatchCode::ALL {
            assert_eq!(PatchCode::parse(c.as_str()), Some(c));
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{c}` |")))
                .unwrap_or_else(|| panic!("no row for {c}"));
            let step = row.trim_end_matches(" |").rsplit(" | ").next().unwrap();
            assert_eq!(step, c.next_step(), "the doc's next step for {c}");
        }
    }

    /// Every code is returned by some path: each variant is named by the executor outside this file.
    #[test]
    fn every_code_is_used() {
        let src = [
            include_str!("mod.rs"),
            include_str!("parser.rs"),
            include_str!("paths.rs"),
            include_str!("preflight.rs"),
            include_str!("text.rs"),
            include_str!("matcher.rs"),
            include_str!("review.rs"),
            include_str!("commit.rs"),
        ]
        .concat();
        for c in PatchCode::ALL {
            assert!(src.contains(&format!("PatchCode::{c:?}")), "{c} is never returned");
        }
    }

    /// `PatchResult.code` and `PatchPathsResult.code` in index.d.ts (napi `ts_type` in src/bind/patch.rs) are
    /// every code plus the binding's contained panic, so the glue's uses of them are typed.
    #[test]
    fn index_d_ts_unions_are_all_codes() {
        use crate::codes::check::{dts_union, with_extra};
        let dts = include_str!("../../index.d.ts");
        let want = with_extra(PatchCode::ALL.map(PatchCode::as_str), &["internal-panic"]);
        assert_eq!(dts_union(dts, "PatchResult", "code?"), want);
        assert_eq!(dts_union(dts, "PatchPathsResult", "code?"), want);
    }
}
