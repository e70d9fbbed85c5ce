//! Write (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"): `{path, content}` creates or
//! overwrites one file (missing parent folders are created inside the root), strips what the model pasted from a
//! Read (a leading `[path#TAG]` header; `N:` row prefixes when every non-empty line carries one and the numbers
//! count up by one), returns the tag of the bytes that landed and records every line as seen.
//! An overwrite keeps the file's mode (and hard links, docs/host.md "Writing a file").

use super::args;
use super::error::{Deadline, HostError};
use super::fileio::{rel_of, Fs};
use super::paths::{Resolved, Root, Roots};
use super::snapshot::{Recorder, Seen};
use super::tag;
use serde_json::Value;

/// Write's arguments after alias folding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

impl WriteArgs {
    pub fn from_json(v: &Value) -> Result<WriteArgs, HostError> {
        let a = args::object("Write", v)?;
        let path = args::fold("Write", a, "path", "file_path")?;
        let content = match a.get("content") {
            Some(Value::String(s)) => s.clone(),
            None | Some(Value::Null) => {
                return Err(HostError::invalid(
                    "Write needs `content` (the whole new file text); call again with it.",
                ))
            }
            Some(_) => {
                return Err(HostError::invalid(
                    "Write: `content` must be a string; pass the file text.",
                ))
            }
        };
        Ok(WriteArgs { path, content })
    }
}

/// Write's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    pub path: String,
    pub root: Root,
    pub tag: String,
    pub created: bool,
    pub bytes: u64,
    pub lines: u64,
    /// What was stripped from the content (pasted header, row prefixes), for the model to know.
    pub stripped: Vec<String>,
    pub text: String,
    /// What changed, for the person (docs/render.md "Diffs"): the diff against the replaced file, or the new lines.
    pub view: crate::diffview::View,
}

/// Whether `line` is a pasted `[path#TAG]` header.
pub fn is_header(line: &str) -> Option<(&str, &str)> {
    let inner = line.trim_end_matches('\r').strip_prefix('[')?.strip_suffix(']')?;
    let hash = inner.rfind('#')?;
    let (path, tag) = (&inner[..hash], &inner[hash + 1..]);
    (!path.is_empty() && tag::is_tag(tag)).then_some((path, tag))
}

/// The `N` of an `N:` row prefix and the rest of the line.
fn row_prefix(line: &str) -> Option<(u64, &str)> {
    let colon = line.find(':')?;
    let digits = &line[..colon];
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, &line[colon + 1..]))
}

/// Strips a pasted Read render from `content`. Rule (docs/host.md "Write"): only content that is recognisably a
/// pasted Read result changes, i.e. its first line is a `[path#TAG]` header. Then the header is dropped, and `N:`
/// prefixes are removed when every non-empty line after it has one and the numbers count up by one from line to line.
/// Anything else (`10:30 meeting`, `8080:80`, YAML `1: one`) is written exactly as given. Returns the text and what
/// was stripped.
pub fn strip_pasted(content: &str) -> (String, Vec<String>) {
    let mut stripped = Vec::new();
    let first_end = content.find('\n').unwrap_or(content.len());
    if is_header(&content[..first_end]).is_none() {
        return (content.to_string(), stripped);
    }
    stripped.push("the pasted [path#TAG] header".to_string());
    let body = content.get(first_end + 1..).unwrap_or("");
    let lines: Vec<&str> = body.split('\n').collect();
    let mut expect: Option<u64> = None;
    let mut any = false;
    let all_prefixed = lines.iter().all(|l| {
        if l.trim_end_matches('\r').is_empty() {
            return true;
        }
        match row_prefix(l) {
            Some((n, _)) if expect.is_none_or(|e| e == n) => {
                expect = Some(n + 1);
                any = true;
                true
            }
            _ => false,
        }
    });
    if all_prefixed && any {
        stripped.push("the N: line-number prefixes".to_string());
        let out: Vec<&str> = lines
            .iter()
            .map(|l| row_prefix(l).map_or(*l, |(_, rest)| rest))
            .collect();
        return (out.join("\n"), stripped);
    }
    (body.to_string(), stripped)
}

/// Writes `a.content` to `target` (resolved and, if external, approved) and records the result as seen.
#[cfg_attr(not(test), allow(dead_code))] // the tool calls `write_reviewed`
pub fn write(
    roots: &Roots,
    target: &Resolved,
    a: &WriteArgs,
    store: &mut impl Recorder,
) -> Result<WriteResult, HostError> {
    write_reviewed(
        roots,
        target,
        a,
        Deadline::none(),
        store,
        &mut crate::review::hook::Hook::none(),
    )
}

/// TOOL_TIMEOUT of a Write whose budget ran out before its bytes were committed: nothing was changed.
fn timed_out(deadline: &Deadline, shown: &str) -> HostError {
    HostError::new(
        super::error::TOOL_TIMEOUT,
        format!(
            "Write stopped after its {} ms budget before writing {shown} (a slow disk or mount); nothing was changed. \
             Retry once; if it times out again, check the disk with Bash (e.g. df, ls -l).",
            deadline.budget_ms
        ),
    )
}

/// The review change could not be recorded: nothing was written (docs/review.md "Recording").
pub fn review_failed(e: crate::review::ReviewError) -> HostError {
    HostError::new(
        super::error::TOOL_FAILED,
        format!(
            "the review change could not be recorded before writing ({}); nothing was changed. {}",
            e.code, e.message
        ),
    )
}

/// Write's pre-card check (docs/host.md "Before the card"): the arguments, and a path that names an existing folder or
/// special file, refused as the write itself would refuse it. Nothing is opened for writing.
pub fn precheck(roots: &Roots, args: &Value) -> Result<(), HostError> {
    let a = WriteArgs::from_json(args)?;
    let Ok(target) = roots.resolve(&a.path) else {
        return Ok(());
    };
    let Ok(rel) = rel_of(&target.canonical) else {
        return Ok(());
    };
    Fs::open()?.refuse_non_file(&rel, &target.shown)
}

/// The target's path below the workspace folder, when it is a file in the workspace.
fn workspace_rel(roots: &Roots, target: &Resolved) -> Option<String> {
    if target.root != Root::Workspace {
        return None;
    }
    let inner = target.canonical.strip_prefix(roots.workspace()).ok()?.to_str()?;
    (!inner.is_empty()).then(|| inner.to_string())
}

/// [`write`] that records a review change right before the bytes land (`hook`, docs/review.md). `deadline` is
/// checked once everything is read and decided, right before anything changes (docs/host.md "Timeouts").
pub fn write_reviewed(
    roots: &Roots,
    target: &Resolved,
    a: &WriteArgs,
    deadline: Deadline,
    store: &mut impl Recorder,
    hook: &mut crate::review::hook::Hook,
) -> Result<WriteResult, HostError> {
    if target.root == Root::Scratch {
        roots.ensure_scratch()?;
    }
    let (content, stripped) = strip_pasted(&a.content);
    let rel = rel_of(&target.canonical)?;
    let mut fs = Fs::open()?;
    let bytes = content.into_bytes();
    let existing = fs.read_existing(&rel, &target.shown)?;
    crate::seams::stall("host.write");
    if deadline.passed() {
        return Err(timed_out(&deadline, &target.shown));
    }
    let (created, view) = match existing {
        Some(old) => {
            hook.before_write(
                &target.canonical,
                crate::review::store::Operation::Write,
                Some((&old.bytes, old.mode)),
                &bytes,
            )
            .map_err(review_failed)?;
            fs.replace(&rel, &old, &bytes, &target.shown)?;
            (
                false,
                crate::diffview::bytes(&old.bytes, &bytes, &crate::diffview::LIMITS),
            )
        }
        None => {
            hook.before_write(&target.canonical, crate::review::store::Operation::Write, None, &bytes)
                .map_err(review_failed)?;
            match workspace_rel(roots, target) {
                // A new workspace file is created beneath the workspace folder's own handle (see
                // Fs::open_workspace): a workspace removed meanwhile is never created again.
                Some(inner) => {
                    let mut ws = Fs::open_workspace(roots.workspace(), &target.shown)?;
                    ws.mkdirs_for(&inner, &target.shown)?;
                    ws.create_new(&inner, &bytes, &target.shown)?;
                }
                None => {
                    fs.mkdirs_for(&rel, &target.shown)?;
                    fs.create_new(&rel, &bytes, &target.shown)?;
                }
            }
            let new = std::str::from_utf8(&bytes).unwrap_or_default();
            (true, crate::diffview::created(new, &crate::diffview::LIMITS))
        }
    };
    hook.settle(true);
    let len = bytes.len() as u64;
    let norm = tag::normalize_owned(bytes);
    let lines = tag::lines(&norm.text).len() as u64;
    store.record(&target.canonical, &norm, Seen::All);
    let mut text = format!(
        "{} {} ({lines} lines, {len} bytes). {}",
        if created { "Created" } else { "Wrote" },
        tag::header(&tag::escape_name(&target.shown), &norm.tag),
        "Edit it with this tag; every line counts as seen."
    );
    if !stripped.is_empty() {
        text.push_str(&format!("\nStripped {} from the content.", stripped.join(" and ")));
    }
    Ok(WriteResult {
        path: target.shown.clone(),
        root: target.root,
        tag: norm.tag,
        created,
        bytes: len,
        lines,
        stripped,
        text,
        view,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::snapshot::{Provenance, SnapshotStore};
    use serde_json::json;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use tempfile::TempDir;

    fn setup() -> (TempDir, Roots) {
        let d = TempDir::new().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        let roots = Roots::new(&d.path().join("ws"), &d.path().join("agent"), "s1").unwrap();
        (d, roots)
    }

    fn run(roots: &Roots, st: &mut SnapshotStore, path: &str, content: &str) -> Result<WriteResult, HostError> {
        let a = WriteArgs::from_json(&json!({"file_path": path, "content": content}))?;
        let t = roots.resolve_inside(&a.path)?;
        write(roots, &t, &a, st)
    }

    #[test]
    fn a_new_file_in_a_workspace_at_the_root_folder_goes_beneath_its_handle() {
        // Only the handle is checked here (nothing is written at `/`): the root folder is the workspace itself.
        assert!(Fs::open_workspace(std::path::Path::new("/"), "/").is_ok());
    }

    #[test]
    fn a_workspace_removed_after_the_check_is_not_created_again() {
        let (d, roots) = setup();
        let mut st = SnapshotStore::new();
        let a = WriteArgs::from_json(&json!({"file_path": "deep/new.txt", "content": "x\n"})).unwrap();
        let t = roots.resolve_inside(&a.path).unwrap();
        // Removed between the check and the write: refused, nothing created.
        std::fs::remove_dir(d.path().join("ws")).unwrap();
        let e = write(&roots, &t, &a, &mut st).unwrap_err();
        assert_eq!(e.code, "TOOL_FAILED");
        assert!(
            e.message.contains("does not exist any more") && e.message.contains("nothing was written"),
            "{}",
            e.message
        );
        assert!(!d.path().join("ws").exists());
        // Replaced by a link to a look-alike folder: refused too, nothing written behind the link.
        std::fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), d.path().join("ws")).unwrap();
        let e = write(&roots, &t, &a, &mut st).unwrap_err();
        assert_eq!(e.code, "PATH_OUTSIDE_WORKSPACE", "{}", e.message);
        assert_eq!(std::fs::read_dir(d.path().join("elsewhere")).unwrap().count(), 0);
        // The folder back: the same call creates the file and its folders inside it.
        std::fs::remove_file(d.path().join("ws")).unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        assert!(write(&roots, &t, &a, &mut st).unwrap().created);
        assert_eq!(
            std::fs::read_to_string(d.path().join("ws/deep/new.txt")).unwrap(),
            "x\n"
        );
    }

    #[test]
    fn strips_header_and_prefixes_only_when_every_line_has_one() {
        assert_eq!(
            strip_pasted("[a.rs#BE03]\n1:fn a() {}\n2:\n3:  x\n").0,
            "fn a() {}\n\n  x\n"
        );
        assert_eq!(strip_pasted("[x#0A1B]\n5:a\n6:b").0, "a\nb");
        // Blank lines without a prefix are kept; numbers must count up by one.
        assert_eq!(strip_pasted("[x#0A1B]\n1:a\n\n2:b\n").0, "a\n\nb\n");
        assert_eq!(strip_pasted("[x#0A1B]\n1:a\n3:b\n").0, "1:a\n3:b\n");
        assert_eq!(strip_pasted("[x#0A1B]\n1:a\nb\n").0, "1:a\nb\n");
        // Without the header nothing is a pasted render: real content that looks like rows lands exactly.
        for real in [
            "10:30 meeting\n11:15 lunch\n12:00 x",
            "10:30 meeting",
            "8080:80\n",
            "1: one\n2: two\n3: three\n",
            "5:a\n6:b",
            "1:a\n\n2:b\n",
        ] {
            assert_eq!(strip_pasted(real), (real.to_string(), vec![]), "{real:?}");
        }
        assert_eq!(strip_pasted("[not a header]\n").0, "[not a header]\n");
        assert_eq!(strip_pasted("[a#XYZ1]\nq").0, "[a#XYZ1]\nq");
        assert_eq!(strip_pasted("").0, "");
        assert!(strip_pasted("plain\n").1.is_empty());
    }

    #[test]
    fn creates_parents_overwrites_keeping_mode_and_records_all_seen() {
        let (_d, roots) = setup();
        let mut st = SnapshotStore::new();
        let r = run(&roots, &mut st, "deep/er/a.txt", "[a.txt#0000]\n1:x\n2:y\n").unwrap();
        assert!(r.created);
        let p = roots.workspace().join("deep/er/a.txt");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\ny\n");
        assert_eq!(r.tag, tag::normalize(b"x\ny\n").tag);
        assert_eq!(st.provenance(&p, &r.tag), Provenance::Seen(&Seen::All));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
        let r2 = run(&roots, &mut st, "deep/er/a.txt", "z").unwrap();
        assert!(!r2.created && r2.bytes == 1 && r2.lines == 1);
        assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o7777, 0o751);
        // Hard links keep sharing the file.
        let link = roots.workspace().join("link.txt");
        std::fs::hard_link(&p, &link).unwrap();
        run(&roots, &mut st, "deep/er/a.txt", "shared\n").unwrap();
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "shared\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().ino(),
            std::fs::metadata(&link).unwrap().ino()
        );
        // No temp files left behind.
        let left: Vec<_> = std::fs::read_dir(roots.workspace().join("deep/er")).unwrap().collect();
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn refuses_directories_missing_content_and_outside_paths() {
        let (_d, roots) = setup();
        let mut st = SnapshotStore::new();
        std::fs::create_dir(roots.workspace().join("dir")).unwrap();
        assert_eq!(run(&roots, &mut st, "dir", "x").unwrap_err().code, "INVALID_ARGUMENT");
        assert!(WriteArgs::from_json(&json!({"path": "a"}))
            .unwrap_err()
            .message
            .contains("content"));
        assert_eq!(
            run(&roots, &mut st, "../out.txt", "x").unwrap_err().code,
            "PATH_OUTSIDE_WORKSPACE"
        );
        assert!(!roots.workspace().parent().unwrap().join("out.txt").exists());
        assert_eq!(st.path_count(), 0);
    }

    #[test]
    fn scratch_is_created_on_first_write() {
        let (_d, roots) = setup();
        let mut st = SnapshotStore::new();
        let p = roots.scratch().join("notes/n.md");
        let r = run(&roots, &mut st, p.to_str().unwrap(), "hi\n").unwrap();
        assert_eq!(r.root, Root::Scratch);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "hi\n");
    }

    #[test]
    fn a_symlinked_folder_swapped_in_after_resolution_is_refused() {
        let (d, roots) = setup();
        let mut st = SnapshotStore::new();
        std::fs::create_dir(roots.workspace().join("sub")).unwrap();
        let a = WriteArgs::from_json(&json!({"path": "sub/a.txt", "content": "x"})).unwrap();
        let t = roots.resolve_inside(&a.path).unwrap();
        // After resolution, `sub` becomes a symlink to a folder outside.
        std::fs::create_dir(d.path().join("outside")).unwrap();
        std::fs::remove_dir(roots.workspace().join("sub")).unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), roots.workspace().join("sub")).unwrap();
        let e = write(&roots, &t, &a, &mut st).unwrap_err();
        assert_eq!(e.code, "PATH_OUTSIDE_WORKSPACE", "{}", e.message);
        assert!(!d.path().join("outside/a.txt").exists());
    }

    #[test]
    fn an_existing_file_over_the_edit_limit_is_refused_before_it_is_read() {
        use crate::host::fileio::MAX_EDIT_FILE;
        let (_d, roots) = setup();
        let mut st = SnapshotStore::new();
        let over = roots.workspace().join("over.bin");
        std::fs::File::create(&over)
            .unwrap()
            .set_len(MAX_EDIT_FILE + 1)
            .unwrap();
        let e = run(&roots, &mut st, "over.bin", "x").unwrap_err();
        assert_eq!(e.code, "FILE_TOO_LARGE");
        assert!(
            e.message.contains("67108865 bytes, over the 64 MiB limit"),
            "{}",
            e.message
        );
        assert_eq!(std::fs::metadata(&over).unwrap().len(), MAX_EDIT_FILE + 1);
        // At the limit it is replaced.
        let at = roots.workspace().join("at.bin");
        std::fs::File::create(&at).unwrap().set_len(MAX_EDIT_FILE).unwrap();
        assert!(run(&roots, &mut st, "at.bin", "x").is_ok());
        assert_eq!(std::fs::read(&at).unwrap(), b"x");
    }
}
