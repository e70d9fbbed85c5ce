//! Path rules of the patch: relative workspace files only, no traversal, no visible symlink components, no file
//! used as a directory, and no two operations on aliases of the same path (NFC + case folding, or same inode).

use super::error::{PatchCode, PatchError};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use unicode_normalization::UnicodeNormalization;

/// A validated patch path: `rel` is normalised (`/`-joined, no `.` or empty segments), `abs` is under the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    pub rel: String,
    pub abs: PathBuf,
}

/// Shows a raw path in a message with control characters escaped.
pub fn shown(raw: &str) -> String {
    let mut s = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_control() {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    super::parser::clip(&s)
}

/// Longest file or folder name, in bytes (Linux NAME_MAX).
pub const NAME_MAX: usize = 255;
/// A path (workspace folder included) must be shorter than this many bytes (Linux PATH_MAX, NUL included).
pub const PATH_MAX: usize = 4096;

fn is_drive_like(seg: &str) -> bool {
    let b = seg.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Applies the syntactic rules to a raw path (no filesystem access).
pub fn validate(cwd: &Path, raw: &str) -> Result<PatchPath, PatchError> {
    let not_relative = || {
        PatchError::no_change(
            PatchCode::InvalidPath,
            format!(
                "patch paths must be relative workspace files. Got '{}': use a path relative to the workspace.",
                shown(raw)
            ),
        )
    };
    if raw.is_empty() || raw.contains('\0') || raw.starts_with('/') || raw.starts_with('\\') {
        return Err(not_relative());
    }
    let segments: Vec<&str> = raw.split(['/', '\\']).collect();
    if segments.iter().any(|s| is_drive_like(s)) {
        return Err(not_relative());
    }
    if segments.contains(&"..") {
        return Err(PatchError::no_change(
            PatchCode::PathTraversal,
            format!("path traversal is not allowed: '{}'", shown(raw)),
        ));
    }
    let kept: Vec<&str> = raw.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    if kept.is_empty() {
        return Err(PatchError::no_change(
            PatchCode::WorkspaceRoot,
            format!(
                "patch paths cannot resolve to the workspace root. Got '{}': name a file inside the workspace.",
                shown(raw)
            ),
        ));
    }
    let rel = kept.join("/");
    let mut abs = cwd.to_path_buf();
    for s in &kept {
        abs.push(s);
    }
    // Linux limits (docs/patch.md, Limits): a name of at most NAME_MAX bytes, a whole path below PATH_MAX.
    if let Some(long) = kept.iter().find(|s| s.len() > NAME_MAX) {
        return Err(PatchError::no_change(
            PatchCode::PathTooLong,
            format!(
                "path too long: '{}' has a name of {} bytes (the limit is {NAME_MAX} bytes per name): use a shorter name.",
                shown(raw),
                long.len()
            ),
        ));
    }
    let abs_len = abs.as_os_str().len();
    if abs_len >= PATH_MAX {
        return Err(PatchError::no_change(
            PatchCode::PathTooLong,
            format!(
                "path too long: '{}' is {abs_len} bytes inside the workspace (the limit is {} bytes): use a shorter path.",
                shown(raw),
                PATH_MAX - 1
            ),
        ));
    }
    Ok(PatchPath { rel, abs })
}

/// What lstat found at a validated path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Missing,
    File {
        dev: u64,
        ino: u64,
        mode: u32,
    },
    /// Exists but is not a regular file (directory, fifo, socket, device).
    Other,
}

/// Checks every existing component of the path with lstat: no symlinks, no non-directory parent. `dirs` caches
/// the folders (relative) already found to be real directories during this preflight.
pub fn inspect(cwd: &Path, p: &PatchPath, dirs: &mut std::collections::HashSet<String>) -> Result<Found, PatchError> {
    let segs: Vec<&str> = p.rel.split('/').collect();
    let mut cur = cwd.to_path_buf();
    let mut prefix_len = 0usize;
    for (i, seg) in segs.iter().enumerate() {
        cur.push(seg);
        prefix_len += seg.len() + usize::from(i > 0);
        let last = i + 1 == segs.len();
        if !last && dirs.contains(&p.rel[..prefix_len]) {
            continue;
        }
        let md = match std::fs::symlink_metadata(&cur) {
            Ok(md) => md,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
            Err(e) => {
                return Err(PatchError::no_change(
                    PatchCode::ReadFailed,
                    format!(
                        "path could not be inspected ({}): '{}'",
                        crate::errno::code(&e),
                        shown(&p.rel)
                    ),
                ))
            }
        };
        let component = segs[..=i].join("/");
        if md.file_type().is_symlink() {
            return Err(PatchError::no_change(
                PatchCode::SymlinkComponent,
                format!(
                    "visible symlink components are not allowed. '{}' goes through the symlink '{}': patch the real path instead.",
                    shown(&p.rel),
                    shown(&component)
                ),
            ));
        }
        if !last && !md.is_dir() {
            return Err(PatchError::no_change(
                PatchCode::NonDirectoryComponent,
                format!(
                    "non-directory path component in '{}'. '{}' is not a directory.",
                    shown(&p.rel),
                    shown(&component)
                ),
            ));
        }
        if !last {
            dirs.insert(p.rel[..prefix_len].to_string());
        }
        if last {
            return Ok(if md.is_file() {
                Found::File {
                    dev: md.dev(),
                    ino: md.ino(),
                    mode: md.mode(),
                }
            } else {
                Found::Other
            });
        }
    }
    Ok(Found::Missing)
}

/// The alias key of a path: NFC, then lowercase (simple case folding), then NFC again.
pub fn alias_key(rel: &str) -> String {
    let nfc: String = rel.nfc().collect();
    nfc.to_lowercase().nfc().collect()
}

fn conflict(a: &str, b: &str) -> PatchError {
    PatchError::no_change(
        PatchCode::ConflictingPaths,
        format!(
            "conflicting patch paths: '{}' and '{}'. Put every change to one file in a single operation, and keep one operation per path",
            shown(a),
            shown(b)
        ),
    )
}

/// Refuses two operations whose paths are equal or nested after NFC + case folding. `paths` holds
/// (operation index, normalised path) pairs; a Move contributes both of its paths with one index.
pub fn check_aliases(paths: &[(usize, &str)]) -> Result<(), PatchError> {
    let mut seen: HashMap<String, (usize, &str)> = HashMap::with_capacity(paths.len());
    // Equal keys first, in patch order.
    for &(op, rel) in paths {
        let key = alias_key(rel);
        if let Some(&(other_op, other)) = seen.get(&key) {
            if other_op != op {
                return Err(conflict(other, rel));
            }
        } else {
            seen.insert(key, (op, rel));
        }
    }
    // Then nesting: any proper ancestor of a path that is itself an operation path.
    for &(op, rel) in paths {
        let key = alias_key(rel);
        let mut idx = 0;
        while let Some(pos) = key[idx..].find('/') {
            let ancestor = &key[..idx + pos];
            if let Some(&(other_op, other)) = seen.get(ancestor) {
                if other_op != op {
                    let (a, b) = if other_op < op { (other, rel) } else { (rel, other) };
                    return Err(conflict(a, b));
                }
            }
            idx += pos + 1;
        }
    }
    Ok(())
}

/// Refuses two operations whose existing paths are the same file (same device and inode, e.g. hard links).
pub fn check_identities(files: &[(usize, &str, u64, u64)]) -> Result<(), PatchError> {
    let mut seen: HashMap<(u64, u64), (usize, &str)> = HashMap::with_capacity(files.len());
    for &(op, rel, dev, ino) in files {
        if let Some(&(other_op, other)) = seen.get(&(dev, ino)) {
            if other_op != op {
                return Err(conflict(other, rel));
            }
        } else {
            seen.insert((dev, ino), (op, rel));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(raw: &str) -> Result<String, String> {
        validate(Path::new("/ws"), raw)
            .map(|p| p.rel)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn rules() {
        assert_eq!(v("a/b.txt").unwrap(), "a/b.txt");
        assert_eq!(v("./a//b.txt").unwrap(), "a/b.txt");
        assert_eq!(validate(Path::new("/ws"), "a/b").unwrap().abs, PathBuf::from("/ws/a/b"));
        for bad in ["", "/etc/passwd", "\\x", "C:/x", "a/c:/x", "a\0b"] {
            assert!(
                v(bad)
                    .unwrap_err()
                    .starts_with("apply_patch failed (no-change): patch paths must be relative workspace files. Got '"),
                "{bad:?}"
            );
        }
        assert_eq!(
            v("a\0b").unwrap_err(),
            "apply_patch failed (no-change): patch paths must be relative workspace files. Got 'a\\u{0}b': use a path relative to the workspace."
        );
        assert_eq!(
            v("../x").unwrap_err(),
            "apply_patch failed (no-change): path traversal is not allowed: '../x'"
        );
        assert_eq!(
            v("a/..\\..\\x").unwrap_err(),
            "apply_patch failed (no-change): path traversal is not allowed: 'a/..\\..\\x'"
        );
        assert_eq!(
            v("./").unwrap_err(),
            "apply_patch failed (no-change): patch paths cannot resolve to the workspace root. Got './': name a file inside the workspace."
        );
        assert_eq!(validate(Path::new("/ws"), ".").unwrap_err().code, "workspace-root");
        // Boundaries: a 255-byte name passes, 256 is refused; "/ws/" + rel must stay below PATH_MAX bytes.
        assert!(validate(Path::new("/ws"), &"n".repeat(255)).is_ok());
        let e = validate(Path::new("/ws"), &"n".repeat(256)).unwrap_err();
        assert_eq!(e.code, "path-too-long");
        assert!(e
            .to_string()
            .starts_with("apply_patch failed (no-change): path too long: 'nnn"));
        assert!(e
            .to_string()
            .ends_with("' has a name of 256 bytes (the limit is 255 bytes per name): use a shorter name."));
        let deep = |len: usize| {
            let mut s = "d/".repeat(len / 2 - 1);
            while s.len() < len {
                s.push('x');
            }
            s
        };
        let fits = deep(PATH_MAX - 1 - 4);
        assert_eq!(fits.len(), PATH_MAX - 5);
        assert!(validate(Path::new("/ws"), &fits).is_ok());
        let over = deep(PATH_MAX - 4);
        assert_eq!(validate(Path::new("/ws"), &over).unwrap_err().code, "path-too-long");
    }

    #[test]
    fn aliases() {
        assert!(check_aliases(&[(0, "a.txt"), (1, "b.txt")]).is_ok());
        assert_eq!(
            check_aliases(&[(0, "Readme.md"), (1, "README.md")]).unwrap_err().to_string(),
            "apply_patch failed (no-change): conflicting patch paths: 'Readme.md' and 'README.md'. Put every change to one file in a single operation, and keep one operation per path"
        );
        // NFC: precomposed vs decomposed é
        assert_eq!(
            check_aliases(&[(0, "caf\u{e9}"), (1, "cafe\u{301}")]).unwrap_err().code,
            "conflicting-paths"
        );
        // nested either way
        assert!(check_aliases(&[(0, "dir"), (1, "dir/x")]).is_err());
        assert!(check_aliases(&[(0, "Dir/x"), (1, "dir")])
            .unwrap_err()
            .to_string()
            .contains("'Dir/x' and 'dir'"));
        // one move may touch related paths itself
        assert!(check_aliases(&[(0, "A.txt"), (0, "a.txt")]).is_ok());
        // prefix that is not a path ancestor
        assert!(check_aliases(&[(0, "dir"), (1, "dirt/x")]).is_ok());
        assert!(check_identities(&[(0, "a", 1, 2), (1, "b", 1, 2)]).is_err());
        assert!(check_identities(&[(0, "a", 1, 2), (1, "b", 1, 3)]).is_ok());
    }
}
