//! `.worktreeinclude` (docs/worktrees.md ".worktreeinclude"): git-ignored files of the project that a new worktree
//! still needs (`.env`, local config, sometimes `node_modules`) are copied into it. The file at the project root has
//! gitignore syntax and is matched with the `ignore` crate's gitignore matcher (the same rules as `.gitignore`:
//! `dir/` patterns, `**`, negation with `!`). Only files git itself reports as ignored are candidates — tracked
//! files come from the checkout, untracked-but-not-ignored files are the person's work in progress and stay.
//!
//! Links are never followed: a link in the project is recreated as the same link (its target is not read), the
//! `.worktreeinclude` file itself must be a regular file, and a destination folder that is a link in the worktree
//! (a tracked symlink) refuses the copy of everything under it.

use super::git::Git;
use super::real::real_subdirs;
use super::{Result, WorktreeError};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The include file's name at the project root.
pub const INCLUDE_FILE: &str = ".worktreeinclude";
/// The largest include file read.
pub const MAX_INCLUDE_BYTES: u64 = 64 * 1024;

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub files: u64,
    pub links: u64,
    pub bytes: u64,
    /// Paths left out, with why (a link in the way, a special file, a read error).
    pub skipped: Vec<String>,
}

/// The matcher of `<project>/.worktreeinclude`, or `None` when there is none (or it is a link, or too large).
pub fn matcher(project: &Path) -> Option<Gitignore> {
    let file = project.join(INCLUDE_FILE);
    let m = fs::symlink_metadata(&file).ok()?;
    if !m.is_file() || m.len() > MAX_INCLUDE_BYTES {
        return None;
    }
    let text = fs::read_to_string(&file).ok()?;
    let mut b = GitignoreBuilder::new(project);
    for line in text.lines() {
        // A bad line is skipped (as git skips it); the rest still apply.
        let _ = b.add_line(None, line);
    }
    b.build().ok().filter(|g| !g.is_empty())
}

/// Whether the include rules select `rel` (relative to the project; a folder's rules cover what is inside it).
pub fn selected(m: &Gitignore, rel: &Path, is_dir: bool) -> bool {
    m.matched_path_or_any_parents(rel, is_dir).is_ignore()
}

/// The project's ignored, untracked paths as git reports them (folders that are wholly ignored end with `/`).
pub fn ignored_paths(git: &Git) -> Result<Vec<String>> {
    let out = git
        .run(&[
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ])
        .map_err(|e| WorktreeError::git("git could not list the ignored files", e))?;
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect())
}

/// Copies the ignored files the include rules select from `project` into `worktree`.
pub fn copy_included(git: &Git, project: &Path, worktree: &Path) -> Result<Copied> {
    let mut done = Copied::default();
    let Some(m) = matcher(project) else { return Ok(done) };
    for entry in ignored_paths(git)? {
        let is_dir = entry.ends_with('/');
        let rel = PathBuf::from(entry.trim_end_matches('/'));
        if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            continue;
        }
        if !is_dir {
            if selected(&m, &rel, false) {
                copy_one(project, worktree, &rel, &mut done);
            }
            continue;
        }
        // Each file is matched on its own (with its folders): a negation deeper down (`!dir/sub/`) still applies.
        let top = project.join(&rel);
        let walk = walkdir::WalkDir::new(&top).follow_links(false).sort_by_file_name();
        for e in walk.into_iter() {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    done.skipped.push(format!("{}: {err}", rel.display()));
                    continue;
                }
            };
            if e.file_type().is_dir() {
                continue;
            }
            let Ok(sub) = e.path().strip_prefix(project) else {
                continue;
            };
            if selected(&m, sub, false) {
                copy_one(project, worktree, sub, &mut done);
            }
        }
    }
    Ok(done)
}

/// Copies one file or link (never following it) to the same relative place in the worktree.
fn copy_one(project: &Path, worktree: &Path, rel: &Path, done: &mut Copied) {
    match copy_entry(&project.join(rel), worktree, rel) {
        Ok(Kind::File(n)) => {
            done.files += 1;
            done.bytes += n;
        }
        Ok(Kind::Link) => done.links += 1,
        Ok(Kind::Other) => done.skipped.push(format!("{}: not a file or link", rel.display())),
        Err(e) => done.skipped.push(format!("{}: {e}", rel.display())),
    }
}

enum Kind {
    File(u64),
    Link,
    Other,
}

fn copy_entry(src: &Path, worktree: &Path, rel: &Path) -> io::Result<Kind> {
    let meta = fs::symlink_metadata(src)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dest_dir = real_subdirs(worktree, parent)?;
    let dest = dest_dir.join(rel.file_name().unwrap_or_default());
    if meta.file_type().is_symlink() {
        let target = fs::read_link(src)?;
        make_link(&target, &dest)?;
        return Ok(Kind::Link);
    }
    if !meta.is_file() {
        return Ok(Kind::Other);
    }
    let mut from = open_no_follow(src)?;
    let mut to = fs::OpenOptions::new().write(true).create_new(true).open(&dest)?;
    let n = io::copy(&mut from, &mut to)?;
    to.set_permissions(meta.permissions())?;
    Ok(Kind::File(n))
}

#[cfg(unix)]
fn open_no_follow(p: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(p)
}

#[cfg(not(unix))]
fn open_no_follow(p: &Path) -> io::Result<fs::File> {
    fs::File::open(p)
}

#[cfg(unix)]
fn make_link(target: &Path, dest: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, dest)
}

#[cfg(windows)]
fn make_link(target: &Path, dest: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, dest)
}
