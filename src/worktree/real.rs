//! "A real directory at every component" (docs/worktrees.md "Missing worktrees"): a registered worktree path is
//! stored canonical, so any symbolic link found on it later was swapped in after creation. Such a worktree counts
//! as missing — it is never used as a tool root, merged or synced — and deleting it removes only the link.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path is not a real directory now.
#[derive(Debug)]
pub enum Unreal {
    /// Nothing is at this component.
    Missing(PathBuf),
    /// This component is a symbolic link (or a Windows junction).
    Link(PathBuf),
    /// This component exists but is not a folder.
    NotDir(PathBuf),
    /// The path is relative or has `.`/`..` components: it cannot be a stored canonical path.
    NotCanonical(PathBuf),
    /// The component could not be examined.
    Unreadable(PathBuf, io::Error),
}

impl Unreal {
    /// One clause for messages: what is wrong, and where.
    pub fn describe(&self) -> String {
        match self {
            Unreal::Missing(p) => format!("{} does not exist", p.display()),
            Unreal::Link(p) => format!("{} is a symbolic link", p.display()),
            Unreal::NotDir(p) => format!("{} is not a folder", p.display()),
            Unreal::NotCanonical(p) => format!("{} is not an absolute canonical path", p.display()),
            Unreal::Unreadable(p, e) => format!("{} cannot be examined ({e})", p.display()),
        }
    }

    /// The component the problem is at.
    pub fn at(&self) -> &Path {
        match self {
            Unreal::Missing(p) | Unreal::Link(p) | Unreal::NotDir(p) | Unreal::NotCanonical(p) => p,
            Unreal::Unreadable(p, _) => p,
        }
    }
}

/// Checks that `path` and every folder on the way to it is a real directory (examined with `lstat`, never
/// followed). `path` must be absolute and free of `.`/`..`.
pub fn check_real_dir(path: &Path) -> Result<(), Unreal> {
    if !path.is_absolute() {
        return Err(Unreal::NotCanonical(path.to_path_buf()));
    }
    let mut at = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                at.push(c.as_os_str());
                continue;
            }
            Component::Normal(seg) => at.push(seg),
            Component::CurDir | Component::ParentDir => return Err(Unreal::NotCanonical(path.to_path_buf())),
        }
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() || is_junction(&m) => return Err(Unreal::Link(at)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(Unreal::NotDir(at)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Unreal::Missing(at)),
            Err(e) => return Err(Unreal::Unreadable(at, e)),
        }
    }
    Ok(())
}

#[cfg(windows)]
fn is_junction(m: &fs::Metadata) -> bool {
    use std::os::windows::fs::MetadataExt;
    // FILE_ATTRIBUTE_REPARSE_POINT: junctions and other reparse points are links for this purpose.
    m.file_attributes() & 0x400 != 0
}

#[cfg(not(windows))]
fn is_junction(_m: &fs::Metadata) -> bool {
    false
}

/// What [`remove_no_follow`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Removed {
    /// The folder and everything in it (links inside were removed as links, never followed).
    Tree,
    /// Only the link at the path itself (its target is untouched).
    Link,
    /// Nothing was there.
    Nothing,
    /// A folder above the path is a link or not a folder: nothing was removed, so nothing outside is touched.
    Refused(String),
}

/// Removes the worktree folder at `path` without ever following a link: a link at `path` is unlinked; a link on the
/// way to it refuses (removing under it would act on the link's target); a real folder is removed recursively by
/// `std::fs::remove_dir_all`, which opens every level with `O_NOFOLLOW` and unlinks links inside as links.
pub fn remove_no_follow(path: &Path) -> io::Result<Removed> {
    if let Some(parent) = path.parent() {
        if let Err(u) = check_real_dir(parent) {
            if matches!(u, Unreal::Missing(_)) {
                return Ok(Removed::Nothing);
            }
            return Ok(Removed::Refused(u.describe()));
        }
    }
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Removed::Nothing),
        Err(e) => Err(e),
        Ok(m) if m.file_type().is_symlink() || is_junction(&m) => {
            remove_link(path)?;
            Ok(Removed::Link)
        }
        Ok(m) if m.is_dir() => {
            fs::remove_dir_all(path)?;
            Ok(Removed::Tree)
        }
        Ok(_) => {
            fs::remove_file(path)?;
            Ok(Removed::Link)
        }
    }
}

#[cfg(windows)]
fn remove_link(path: &Path) -> io::Result<()> {
    // A directory junction or directory symlink is removed with remove_dir, which never touches the target.
    fs::remove_dir(path).or_else(|_| fs::remove_file(path))
}

#[cfg(not(windows))]
fn remove_link(path: &Path) -> io::Result<()> {
    fs::remove_file(path)
}

/// Creates `rel`'s folders under `root` one at a time, refusing any existing component that is not a real folder
/// (a tracked symlink in the worktree must never lead a copy outside it). Returns the full folder path.
pub fn real_subdirs(root: &Path, rel: &Path) -> io::Result<PathBuf> {
    let mut at = root.to_path_buf();
    for c in rel.components() {
        let Component::Normal(seg) = c else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a path component is not a plain name",
            ));
        };
        at.push(seg);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is a link or a file in the worktree", at.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir(&at)?,
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}
