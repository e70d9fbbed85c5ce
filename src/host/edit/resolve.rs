//! The resolve gate (docs/host.md "Edit"): which tag the call names (the `tag` argument or the ops header, one and
//! the same), that a header names the file the call edits, and which file is read: the named one, or, when it is
//! missing, the one file of the same name shown with that tag (path rebinding, never across roots).

use super::lock;
use super::parse::Parsed;
use super::EditArgs;
use crate::host::error::{HostError, EDIT_PARSE_FAILED, EDIT_TAG_REQUIRED, NOT_FOUND};
use crate::host::fileio::{rel_of, Existing, Fs};
use crate::host::paths::{Resolved, Roots};
use crate::host::snapshot::SnapshotStore;
use crate::host::tag;
use std::sync::Mutex;

/// The call's tag, uppercase: the `tag` argument or the ops header's (they must agree), refused when absent or not
/// a tag; and a header's path must name the file the call edits.
pub fn call_tag(roots: &Roots, target: &Resolved, a: &EditArgs, p: &Parsed) -> Result<String, HostError> {
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
    Ok(tag_)
}

/// The file an Edit reads: where it is, its path relative to `/`, and its bytes and metadata.
pub struct Opened {
    pub target: Resolved,
    pub rel: String,
    pub old: Existing,
}

/// Reads the target, rebinding a missing path to the one recorded file with its basename and `tag_` under the same
/// root (with a warning); a missing path without one is NOT_FOUND.
pub fn open(
    fs: &mut Fs,
    roots: &Roots,
    store: &Mutex<SnapshotStore>,
    target: &Resolved,
    tag_: &str,
    warnings: &mut Vec<String>,
) -> Result<Opened, HostError> {
    let rel = rel_of(&target.canonical)?;
    if let Some(old) = fs.read_existing(&rel, &target.shown)? {
        return Ok(Opened {
            target: target.clone(),
            rel,
            old,
        });
    }
    let Some(r) = stand_in(store, roots, target, tag_) else {
        return Err(not_found(target, tag_));
    };
    warnings.push(format!(
        "{} does not exist; the edit went to {}, the one file you were shown named {} with tag {tag_}.",
        target.shown,
        r.shown,
        file_name(target)
    ));
    let rel = rel_of(&r.canonical)?;
    let old = fs
        .read_existing(&rel, &r.shown)?
        .ok_or_else(|| HostError::io(&r.shown, &std::io::Error::from(std::io::ErrorKind::NotFound)))?;
    Ok(Opened { target: r, rel, old })
}

/// Path rebinding: for a missing path, the one recorded file whose basename and tag match exactly. Rebinding never
/// crosses roots (a missing scratch path never lands in the workspace): the permission decision was taken for the
/// named path's root, and the rebound file must be under the same one.
fn stand_in(store: &Mutex<SnapshotStore>, roots: &Roots, target: &Resolved, tag_: &str) -> Option<Resolved> {
    let found = lock(store).find_by_name_and_tag(&file_name(target), tag_);
    match found.as_slice() {
        [one] => roots
            .resolve(&one.to_string_lossy())
            .ok()
            .filter(|r| r.external.is_none() && r.root == target.root),
        _ => None,
    }
}

fn file_name(target: &Resolved) -> String {
    target
        .canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn not_found(target: &Resolved, tag_: &str) -> HostError {
    HostError::new(
        NOT_FOUND,
        format!(
            "{} does not exist, and no file you were shown is named {} with tag {tag_}. Edit never creates \
             files: use Write to create it, or find the right path with Glob.",
            target.shown,
            file_name(target)
        ),
    )
}

/// The pre-card check of the file (docs/host.md "Before the card"): NOT_FOUND, as [`open`] would say it, when the
/// path does not exist (a `stat` that follows nothing) and no shown file can stand in for it. Anything else (the
/// file exists, or cannot be looked at) is left to the call.
pub fn missing_without_stand_in(
    store: &Mutex<SnapshotStore>,
    roots: &Roots,
    target: &Resolved,
    tag_: &str,
) -> Result<(), HostError> {
    let missing =
        matches!(std::fs::symlink_metadata(&target.canonical), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    if missing && stand_in(store, roots, target, tag_).is_none() {
        return Err(not_found(target, tag_));
    }
    Ok(())
}

/// The file's bytes as text; Edit keeps bytes it cannot hold as text only by refusing.
pub fn utf8<'b>(bytes: &'b [u8], shown: &str) -> Result<&'b str, HostError> {
    std::str::from_utf8(bytes).map_err(|_| {
        HostError::invalid(format!(
            "{shown} is not valid UTF-8 text, so Edit cannot keep its bytes; rewrite it with Write, or change it with Bash."
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::edit::parse::parse;

    fn setup() -> (tempfile::TempDir, Roots) {
        let d = tempfile::TempDir::new().unwrap();
        std::fs::create_dir(d.path().join("ws")).unwrap();
        let roots = Roots::new(&d.path().join("ws"), &d.path().join("agent"), "s1").unwrap();
        (d, roots)
    }

    fn args(path: &str, tag_: Option<&str>, ops: &str) -> EditArgs {
        EditArgs {
            path: path.into(),
            tag: tag_.map(str::to_string),
            ops: ops.into(),
        }
    }

    #[test]
    fn the_tag_comes_from_the_argument_or_the_header_and_they_must_agree() {
        let (_d, roots) = setup();
        let t = roots.resolve("a.txt").unwrap();
        let tag_of = |tag_: Option<&str>, ops: &str| {
            let a = args("a.txt", tag_, ops);
            call_tag(&roots, &t, &a, &parse(ops).unwrap())
        };
        assert_eq!(tag_of(Some(" ab12 "), "PUT 1.=1:\n+x").unwrap(), "AB12");
        assert_eq!(tag_of(None, "[a.txt#AB12]\nPUT 1.=1:\n+x").unwrap(), "AB12");
        assert_eq!(tag_of(Some("ab12"), "[a.txt#AB12]\nPUT 1.=1:\n+x").unwrap(), "AB12");
        let e = tag_of(Some("CD34"), "[a.txt#AB12]\nPUT 1.=1:\n+x").unwrap_err();
        assert_eq!(e.code, EDIT_PARSE_FAILED);
        assert!(e.message.contains("header says tag AB12"), "{}", e.message);
        let e = tag_of(None, "PUT 1.=1:\n+x").unwrap_err();
        assert_eq!(e.code, EDIT_TAG_REQUIRED);
        assert!(e.message.contains("[a.txt#TAG]"), "{}", e.message);
        let e = tag_of(Some("XYZ"), "PUT 1.=1:\n+x").unwrap_err();
        assert_eq!(e.code, EDIT_TAG_REQUIRED);
        assert!(e.message.starts_with("'XYZ' is not a tag"), "{}", e.message);
        let e = tag_of(None, "[b.txt#AB12]\nPUT 1.=1:\n+x").unwrap_err();
        assert_eq!(e.code, EDIT_PARSE_FAILED);
        assert!(
            e.message.contains("names b.txt but the call edits a.txt"),
            "{}",
            e.message
        );
        // The header may name the file by another spelling of the same path.
        assert!(tag_of(None, "[./a.txt#AB12]\nPUT 1.=1:\n+x").is_ok());
    }

    #[test]
    fn a_missing_file_rebinds_only_to_the_one_shown_file_of_its_name_and_tag() {
        let (_d, roots) = setup();
        let ws = roots.workspace().to_path_buf();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/a.txt"), "one\n").unwrap();
        let store = Mutex::new(SnapshotStore::new());
        let n = tag::normalize(b"one\n");
        let key = roots.resolve("sub/a.txt").unwrap().canonical;
        lock(&store).record(&key, &n, crate::host::snapshot::Seen::All);
        let mut fs = Fs::open().unwrap();
        let mut warnings = Vec::new();
        let missing = roots.resolve("a.txt").unwrap();
        let o = open(&mut fs, &roots, &store, &missing, &n.tag, &mut warnings).unwrap();
        assert_eq!(o.target.canonical, key);
        assert_eq!(o.old.bytes, b"one\n");
        assert!(warnings[0].contains("the edit went to sub/a.txt"), "{warnings:?}");
        // Another tag: nothing to rebind to.
        let e = open(&mut fs, &roots, &store, &missing, "0000", &mut Vec::new())
            .err()
            .unwrap();
        assert_eq!(e.code, NOT_FOUND);
        assert!(e.message.contains("Edit never creates files"), "{}", e.message);
        // Two shown files of that name and tag: ambiguous, not rebound.
        std::fs::create_dir(ws.join("other")).unwrap();
        std::fs::write(ws.join("other/a.txt"), "one\n").unwrap();
        lock(&store).record(
            &roots.resolve("other/a.txt").unwrap().canonical,
            &n,
            crate::host::snapshot::Seen::All,
        );
        assert!(open(&mut fs, &roots, &store, &missing, &n.tag, &mut Vec::new()).is_err());
    }

    #[test]
    fn only_utf8_text_is_edited() {
        assert_eq!(utf8(b"ok\n", "f").unwrap(), "ok\n");
        let e = utf8(&[0xff, 0xfe], "f").unwrap_err();
        assert!(e.message.starts_with("f is not valid UTF-8"), "{}", e.message);
    }
}
