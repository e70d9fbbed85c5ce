//! The review side of one host Write or Edit (docs/review.md "Recording"): the tool calls it right before its bytes
//! land — with the bytes before it already read and the bytes it is about to write — and settles it afterwards.
//! Only workspace paths are recorded (scratch and external paths are outside what a rollback may touch); a Move out
//! of the workspace records the source's deletion, a Move into it the destination's creation.

use super::error::ReviewError;
use super::record::{self, Before, Capture, Recording};
use super::store::{Change, Operation};
use super::Target;
use std::path::{Path, PathBuf};

/// One Write/Edit call's recorder. Without a target it records nothing.
#[derive(Debug)]
pub struct Hook {
    target: Option<Target>,
    workspace: PathBuf,
    pending: Option<Recording>,
    /// The changes of the calls that landed, for the tool result's review evidence (docs/review.md "In the tool
    /// result").
    landed: Vec<Change>,
}

impl Hook {
    /// A recorder for `target`'s session over the canonical `workspace` root.
    pub fn new(target: Option<Target>, workspace: &Path) -> Hook {
        Hook {
            target,
            workspace: workspace.to_path_buf(),
            pending: None,
            landed: Vec::new(),
        }
    }

    /// Records nothing (calls outside a Pi session, tests).
    pub fn none() -> Hook {
        Hook::new(None, Path::new("/"))
    }

    /// The workspace-relative path of a canonical path, or None outside the workspace.
    fn rel(&self, canonical: &Path) -> Option<String> {
        let r = canonical.strip_prefix(&self.workspace).ok()?;
        let s = r.to_str()?;
        (!s.is_empty()).then(|| s.to_string())
    }

    fn prepare(&mut self, captures: &[Capture<'_>]) -> Result<(), ReviewError> {
        let Some(t) = &self.target else {
            return Ok(());
        };
        if captures.is_empty() {
            return Ok(());
        }
        self.pending = Some(record::prepare(t, &self.workspace, captures)?);
        Ok(())
    }

    /// Before a Write or an in-place Edit lands: `before` = the file's bytes and mode, None when it is created.
    pub fn before_write(
        &mut self,
        canonical: &Path,
        operation: Operation,
        before: Option<(&[u8], u32)>,
        after: &[u8],
    ) -> Result<(), ReviewError> {
        let Some(rel) = self.rel(canonical) else {
            return Ok(());
        };
        let created_dirs = match before {
            None => record::missing_dirs(&self.workspace, &rel),
            Some(_) => Vec::new(),
        };
        self.prepare(&[Capture {
            path: rel,
            operation,
            before: before.map_or(Before::Absent, |(b, _)| Before::Bytes(b)),
            after: Some(after),
            mode: before.map(|(_, m)| m),
            step: 0,
            moved_from: None,
            moved_to: None,
            created_dirs,
        }])
    }

    /// Before Edit's REM removes a file.
    pub fn before_remove(&mut self, canonical: &Path, before: &[u8], mode: u32) -> Result<(), ReviewError> {
        let Some(rel) = self.rel(canonical) else {
            return Ok(());
        };
        self.prepare(&[Capture {
            path: rel,
            operation: Operation::Delete,
            before: Before::Bytes(before),
            after: None,
            mode: Some(mode),
            step: 0,
            moved_from: None,
            moved_to: None,
            created_dirs: Vec::new(),
        }])
    }

    /// Before Edit's MV (with its other operations already applied to `after`): two entries that roll back
    /// together when both paths are in the workspace, else the one side that is.
    pub fn before_move(
        &mut self,
        from: &Path,
        to: &Path,
        before: &[u8],
        mode: u32,
        after: &[u8],
    ) -> Result<(), ReviewError> {
        let (src, dst) = (self.rel(from), self.rel(to));
        let both = src.is_some() && dst.is_some();
        let mut caps = Vec::new();
        if let Some(rel) = &src {
            caps.push(Capture {
                path: rel.clone(),
                operation: Operation::Delete,
                before: Before::Bytes(before),
                after: None,
                mode: Some(mode),
                step: 0,
                moved_from: None,
                moved_to: if both { dst.clone() } else { None },
                created_dirs: Vec::new(),
            });
        }
        if let Some(rel) = &dst {
            caps.push(Capture {
                path: rel.clone(),
                operation: if before == after {
                    Operation::Write
                } else {
                    Operation::Edit
                },
                // A Move into the workspace from outside is a creation there.
                before: if both { Before::Bytes(before) } else { Before::Absent },
                after: Some(after),
                mode: Some(mode),
                step: 0,
                moved_from: if both { src.clone() } else { None },
                moved_to: None,
                created_dirs: record::missing_dirs(&self.workspace, rel),
            });
        }
        self.prepare(&caps)
    }

    /// After the write: keeps the recorded changes when it landed, drops them otherwise.
    pub fn settle(&mut self, landed: bool) {
        if let Some(rec) = self.pending.take() {
            if landed {
                self.landed.extend(rec.changes().cloned());
            }
            let _ = rec.finish(|_| landed);
        }
    }

    /// The recorded changes that landed so far (one per path; a Move's two entries), oldest first: the review
    /// evidence Write and Edit return. Empty without a target and for scratch and external paths.
    pub fn landed(&self) -> &[Change] {
        &self.landed
    }
}

impl Drop for Hook {
    /// A call that ended without settling (an error path, a panic) did not land as far as review knows.
    fn drop(&mut self) {
        self.settle(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::rollback::{rollback, Which};
    use crate::review::store::{Status, Store};
    use std::fs;

    #[test]
    fn records_workspace_writes_only_and_settles() {
        let t = tempfile::tempdir().unwrap();
        let ws = fs::canonicalize(t.path()).unwrap().join("ws");
        fs::create_dir(&ws).unwrap();
        let agent = t.path().join("agent");
        let target = Target {
            agent_dir: agent.clone(),
            session_id: "hook-1".into(),
            message_id: None,
            session_file: None,
            tool: "Edit".into(),
            agent: None,
        };
        let mut h = Hook::new(Some(target.clone()), &ws);
        // Scratch/external: nothing.
        h.before_write(Path::new("/elsewhere/x.txt"), Operation::Write, None, b"x")
            .unwrap();
        h.settle(true);
        assert!(Store::of(&agent, "hook-1").unwrap().load().unwrap().is_empty());
        // A Move inside the workspace: a pair; the file moved and edited.
        fs::write(ws.join("a.txt"), b"1\n").unwrap();
        h.before_move(&ws.join("a.txt"), &ws.join("sub/b.txt"), b"1\n", 0o644, b"2\n")
            .unwrap();
        fs::create_dir(ws.join("sub")).unwrap();
        fs::rename(ws.join("a.txt"), ws.join("sub/b.txt")).unwrap();
        fs::write(ws.join("sub/b.txt"), b"2\n").unwrap();
        h.settle(true);
        // The landed changes are the evidence: the pair of the Move, nothing of the scratch/external write.
        assert_eq!(
            h.landed()
                .iter()
                .map(|c| (c.path.as_str(), c.operation))
                .collect::<Vec<_>>(),
            [("a.txt", Operation::Delete), ("sub/b.txt", Operation::Edit)]
        );
        // A REM that failed: dropped, and not evidence.
        h.before_remove(&ws.join("sub/b.txt"), b"2\n", 0o644).unwrap();
        h.settle(false);
        assert_eq!(h.landed().len(), 2);
        drop(h);
        let cs = Store::of(&agent, "hook-1").unwrap().load().unwrap();
        assert_eq!(
            cs.iter().map(|c| (c.path.as_str(), c.status)).collect::<Vec<_>>(),
            [("a.txt", Status::Deleted), ("sub/b.txt", Status::Added)]
        );
        assert_eq!(cs[1].created_dirs, ["sub"]);
        rollback(&agent, "hook-1", Which::One("2")).unwrap();
        assert_eq!(fs::read(ws.join("a.txt")).unwrap(), b"1\n");
        assert!(!ws.join("sub").exists());
    }
}
