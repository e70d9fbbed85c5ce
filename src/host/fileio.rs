//! Reading and replacing one file for Write and Edit (docs/host.md "Writing a file"). Every open, create, rename and
//! unlink goes through directory handles opened from `/` along the target's canonical path with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (the `openat2`/walk helper of apply_patch, docs/patch.md "Containment"):
//! a canonical path has no symlink in it, so a symlink swapped into any component after the path was resolved (and
//! approved) makes the call fail instead of redirecting the write.
//!
//! Replacing a file: when the file has one link, the new bytes go to a temp file in the same folder (created
//! exclusively, mode and owner copied from the old file) that is renamed over the target, so a reader or a crash sees
//! the old or the new file, never a torn one. No fsync, like apply_patch (docs/patch.md): ext4, xfs and btrfs flush a
//! file's data before a rename that replaces another file commits; durability of the latest edit is not promised. When the file has more than one hard link a rename would split the
//! links, so the bytes are rewritten in place (same inode, every link sees the edit) after a re-check of the stamp;
//! that rewrite is not crash-atomic (apply_patch's journal is the heavier answer; one file per call does not carry it).

use super::error::{HostError, FILE_TOO_LARGE, INVALID_ARGUMENT, PATH_OUTSIDE_WORKSPACE, TOOL_FAILED};
use crate::patch::beneath::{self, Root as Dirs, Stamp};
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Largest existing file Write replaces and Edit edits (docs/host.md "Large files"): it is read whole, so a larger
/// one is refused with FILE_TOO_LARGE before any byte of it is read.
pub const MAX_EDIT_FILE: u64 = 64 * 1024 * 1024;

/// An existing regular file as read for an edit: its bytes and what is needed to replace it faithfully.
pub struct Existing {
    pub bytes: Vec<u8>,
    pub stamp: Stamp,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u64,
    /// The handle the bytes were read from, open until the `Existing` is dropped: a file replaced by rename (or
    /// removed) is freed by the kernel only when its last handle closes, which [`release`] moves off the call's path.
    _handle: File,
}

/// Files at least this large are dropped by [`release`] on a short-lived thread (a thread costs tens of
/// microseconds; freeing a replaced 5 MiB file's blocks and pages costs milliseconds on ext4).
const RELEASE_BESIDE_MIN: usize = 512 * 1024;

/// Drops `old` after the call replaced or removed its file: for a large file on a short-lived thread, so the kernel's
/// release of the old inode (its page cache and blocks, paid when its last handle closes) and the freeing of the read
/// buffer do not delay the call's result (docs/host.md "Edit"). Inline when small or when no thread can be started.
pub fn release(old: Existing) {
    if old.bytes.len() < RELEASE_BESIDE_MIN {
        return;
    }
    // A failed spawn drops the closure, and with it `old`, here.
    let _ = std::thread::Builder::new()
        .name("pct-release".into())
        .spawn(move || drop(old));
}

/// One prepared replacement of an existing file ([`Fs::prepare_replace`]): the folder's own handle (reached beneath
/// `/` without a symlink when it was prepared), the file's name in it and what was read of the old file. When the
/// file has one link, the new bytes go to a temp file created exclusively in that folder (mode and owner copied) and
/// renamed over the name after a re-check of the stamp; with more than one link a rename would split the links, so
/// the bytes are rewritten in place after that re-check (module header).
pub struct Replacement {
    dir: OwnedFd,
    name: CString,
    shown: String,
    stamp: Stamp,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u64,
}

impl Replacement {
    /// Writes `bytes` as the file's new content. Refuses (TOOL_FAILED, nothing written) when the file changed since
    /// it was read; a failure after the temp file was created removes it.
    pub fn run(self, bytes: &[u8]) -> Result<(), HostError> {
        let shown = &self.shown;
        let err = |e: io::Error| io_err(shown, &e);
        if self.nlink > 1 {
            // Hard links: rewrite in place so every link keeps seeing one file.
            let mut f = self.open_at(&self.name, libc::O_RDWR).map_err(err)?;
            let now = beneath::fstat(&f).map_err(err)?;
            if !now.unchanged(&self.stamp) {
                return Err(self.concurrent());
            }
            let done = f.set_len(0).and_then(|_| f.rewind()).and_then(|_| f.write_all(bytes));
            return done.map_err(err);
        }
        let tmp = format!(
            ".{}.pct-{}.tmp",
            self.name.to_string_lossy(),
            uuid::Uuid::new_v4().simple()
        );
        let tmp = cstr(&tmp).map_err(err)?;
        let mut f = self
            .open_at(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL)
            .map_err(err)?;
        let staged = (|| -> io::Result<()> {
            f.write_all(bytes)?;
            // SAFETY: valid fd; a failed fchown (not the owner's user) keeps the caller's ownership.
            unsafe { libc::fchown(f.as_raw_fd(), self.uid, self.gid) };
            // SAFETY: valid fd.
            if unsafe { libc::fchmod(f.as_raw_fd(), self.mode as libc::mode_t) } < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })();
        drop(f);
        let unlink_tmp = || {
            // SAFETY: valid dirfd and name.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), tmp.as_ptr(), 0) };
        };
        if let Err(e) = staged {
            unlink_tmp();
            return Err(err(e));
        }
        match beneath::stat_at(&self.dir, &self.name) {
            Ok(Some(now)) if now.unchanged(&self.stamp) => {}
            Ok(_) => {
                unlink_tmp();
                return Err(self.concurrent());
            }
            Err(e) => {
                unlink_tmp();
                return Err(err(e));
            }
        }
        let (d, name) = (self.dir.as_raw_fd(), &self.name);
        // SAFETY: valid dirfd and names.
        if unsafe { libc::renameat(d, tmp.as_ptr(), d, name.as_ptr()) } < 0 {
            let e = io::Error::last_os_error();
            unlink_tmp();
            return Err(err(e));
        }
        Ok(())
    }

    fn concurrent(&self) -> HostError {
        HostError::new(
            TOOL_FAILED,
            format!(
                "{} changed on disk while the call ran; nothing was written. Read it again, then retry.",
                self.shown
            ),
        )
    }

    /// Opens `name` in the folder with `flags`, never through a final symlink (mode 0600 when it creates).
    fn open_at(&self, name: &CString, flags: libc::c_int) -> io::Result<File> {
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid dirfd and NUL-terminated name.
        let fd = unsafe { libc::openat(self.dir.as_raw_fd(), name.as_ptr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the fd was just opened and is owned by the File.
        Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
    }
}

/// The refusal of a path that exists but is no regular file Write or Edit could replace.
fn not_a_file(st: &Stamp, shown: &str) -> Result<(), HostError> {
    if st.mode & libc::S_IFMT == libc::S_IFDIR {
        return Err(HostError::invalid(format!(
            "{shown} is a directory; name a file inside it (list them with Glob)."
        )));
    }
    if !st.is_file() {
        return Err(HostError::invalid(format!(
            "{shown} is not a regular file (a symlink, device, socket or pipe); only regular files can be \
             written or edited. Name the file it points to."
        )));
    }
    Ok(())
}

/// The handles of one call: directory handles beneath `/`.
pub struct Fs {
    dirs: Dirs,
}

/// A canonical absolute path as the relative path beneath `/` the handles use.
pub fn rel_of(canonical: &Path) -> Result<String, HostError> {
    let s = canonical.to_str().ok_or_else(|| {
        HostError::invalid(format!(
            "{} is not valid UTF-8; name the file by a UTF-8 path.",
            canonical.display()
        ))
    })?;
    let rel = s.trim_start_matches('/');
    if rel.is_empty() {
        return Err(HostError::invalid("the root folder is not a file; name a file."));
    }
    Ok(rel.to_string())
}

fn changed(shown: &str) -> HostError {
    HostError::new(
        PATH_OUTSIDE_WORKSPACE,
        format!(
            "a folder on the way to {shown} became a symlink after the path was checked; nothing was written. Call \
             the tool again so the new target is checked."
        ),
    )
}

/// Maps an I/O error on `shown`: a symlink met on the way (`ELOOP`, `EXDEV`) is a changed path, not a plain failure.
pub fn io_err(shown: &str, e: &io::Error) -> HostError {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EXDEV) => changed(shown),
        _ => HostError::io(shown, e),
    }
}

/// FILE_TOO_LARGE for an existing file Write or Edit would have to read whole.
pub fn too_large(shown: &str, len: u64) -> HostError {
    HostError::new(
        FILE_TOO_LARGE,
        format!(
            "{shown} is {len} bytes, over the {} MiB limit of files Write replaces and Edit edits; nothing was read or              written. Read it in windows (offset, limit) and change it with Bash (e.g. sed -i) or apply_patch.",
            MAX_EDIT_FILE / (1024 * 1024)
        ),
    )
}

/// Maps an I/O error of a read: a symlink met on the way is a changed path (nothing is read through it).
pub fn read_err(shown: &str, e: &io::Error) -> HostError {
    match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::EXDEV) => HostError::new(
            PATH_OUTSIDE_WORKSPACE,
            format!(
                "a folder on the way to {shown} became a symlink after the path was checked; nothing was read. Call                  the tool again so the new target is checked."
            ),
        ),
        _ => HostError::io(shown, e),
    }
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

impl Fs {
    pub fn open() -> Result<Fs, HostError> {
        let dirs =
            Dirs::open(Path::new("/")).map_err(|e| HostError::new(TOOL_FAILED, format!("cannot open /: {e}")))?;
        Ok(Fs { dirs })
    }

    /// Handles beneath the workspace folder `canonical`, reached from `/` without following a symlink, for creating
    /// a new file there: everything is then created relative to the folder's own handle, so a workspace folder that
    /// was removed after the call was checked is refused instead of being created again around the new file
    /// (docs/worktrees.md "Missing worktrees").
    pub fn open_workspace(canonical: &Path, shown: &str) -> Result<Fs, HostError> {
        let mut fs = Fs::open()?;
        // A workspace at `/` itself: the handle of `/` is the workspace's.
        if canonical.to_str().is_some_and(|s| s.trim_start_matches('/').is_empty()) {
            return Ok(fs);
        }
        let rel = rel_of(canonical)?;
        match fs.dirs.sub(&rel) {
            Ok(dirs) => Ok(Fs { dirs }),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) || e.raw_os_error() == Some(libc::ENOTDIR) => {
                Err(HostError::new(
                    TOOL_FAILED,
                    format!(
                    "the workspace folder {} does not exist any more (it was removed after this call was checked); \
                     nothing was written. Tell the user; do not call again until the folder is back.",
                    canonical.display()
                ),
                ))
            }
            Err(e) => Err(io_err(shown, &e)),
        }
    }

    /// Handles beneath the folder `canonical` (a canonical absolute path), reached from `/` without following a
    /// symlink: paths given to the other methods are then relative to that folder.
    pub fn open_dir(canonical: &Path, shown: &str) -> Result<Fs, HostError> {
        let mut fs = Fs::open()?;
        let s = canonical.to_str().unwrap_or("/").trim_start_matches('/');
        if s.is_empty() {
            return Ok(fs);
        }
        let rel = rel_of(canonical)?;
        let dirs = fs.dirs.sub(&rel).map_err(|e| read_err(shown, &e))?;
        Ok(Fs { dirs })
    }

    /// The stamp of `rel` without following a final symlink; `None` when missing.
    pub fn stat(&mut self, rel: &str) -> io::Result<Option<Stamp>> {
        self.dirs.stat(rel)
    }

    /// Reads `rel` if it is an existing regular file (`Ok(None)` when missing; a directory, FIFO or final symlink is
    /// INVALID_ARGUMENT).
    pub fn read_existing(&mut self, rel: &str, shown: &str) -> Result<Option<Existing>, HostError> {
        match self.dirs.stat(rel) {
            Ok(None) => return Ok(None),
            Ok(Some(st)) => not_a_file(&st, shown)?,
            Err(e) => return Err(io_err(shown, &e)),
        }
        let mut f = self.open_nonblock(rel).map_err(|e| io_err(shown, &e))?;
        let meta = f.metadata().map_err(|e| io_err(shown, &e))?;
        if !meta.is_file() {
            return Err(HostError::invalid(format!(
                "{shown} stopped being a regular file while it was opened; call again."
            )));
        }
        if meta.len() > MAX_EDIT_FILE {
            return Err(too_large(shown, meta.len()));
        }
        let stamp = beneath::fstat(&f).map_err(|e| io_err(shown, &e))?;
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        f.read_to_end(&mut bytes).map_err(|e| io_err(shown, &e))?;
        Ok(Some(Existing {
            bytes,
            stamp,
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            nlink: meta.nlink(),
            _handle: f,
        }))
    }

    /// Write's pre-card check (docs/host.md "Before the card"): refuses, as [`Fs::read_existing`] would, an existing
    /// `rel` that is a folder or not a regular file. A missing path, or one that cannot be looked at, is left to the
    /// call (it creates the file, or says what failed).
    pub fn refuse_non_file(&mut self, rel: &str, shown: &str) -> Result<(), HostError> {
        match self.dirs.stat(rel) {
            Ok(Some(st)) => not_a_file(&st, shown),
            Ok(None) | Err(_) => Ok(()),
        }
    }

    /// Opens the existing regular file `rel` for reading (Read, Grep): no symlink followed on the way or at the end,
    /// never blocking on a FIFO, refused unless the opened handle is a regular file. `dir_err` is the failure for a
    /// folder (each tool says what to do with one).
    pub fn open_read(
        &mut self,
        rel: &str,
        shown: &str,
        tool: &str,
        dir_err: impl FnOnce() -> HostError,
    ) -> Result<(File, std::fs::Metadata), HostError> {
        let not_regular = || {
            HostError::invalid(format!(
                "{shown} is not a regular file (a device, socket or pipe); {tool} reads only regular files."
            ))
        };
        let f = match self.open_nonblock(rel) {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Err(HostError::io(shown, &e)),
            // O_NOFOLLOW on a final symlink: ELOOP. A canonical path never ends in one, so it was swapped in.
            Err(e) => return Err(read_err(shown, &e)),
        };
        let meta = f.metadata().map_err(|e| read_err(shown, &e))?;
        if meta.is_dir() {
            return Err(dir_err());
        }
        if !meta.is_file() {
            return Err(not_regular());
        }
        Ok((f, meta))
    }

    /// Opens read-only with O_NOFOLLOW and O_NONBLOCK (a FIFO swapped in never blocks the call).
    fn open_nonblock(&mut self, rel: &str) -> io::Result<File> {
        let (dir, name) = beneath::split(rel);
        let dfd = self.dirs.dir(dir)?;
        let c = cstr(name)?;
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK;
        // SAFETY: valid dirfd and NUL-terminated name.
        let fd = unsafe { libc::openat(dfd.as_raw_fd(), c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the fd was just opened and is owned by the File.
        Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
    }

    /// Creates the missing folders of `rel`'s parent (never through a symlink).
    pub fn mkdirs_for(&mut self, rel: &str, shown: &str) -> Result<(), HostError> {
        let (dir, _) = beneath::split(rel);
        let mut created = Vec::new();
        self.dirs.mkdirs(dir, &mut created).map_err(|e| io_err(shown, &e))
    }

    /// Creates `rel` exclusively with `bytes` (mode 0666 minus umask). Fails with EEXIST if it appeared meanwhile.
    pub fn create_new(&mut self, rel: &str, bytes: &[u8], shown: &str) -> Result<(), HostError> {
        let (dir, name) = beneath::split(rel);
        let mut f = self
            .dirs
            .create_file(dir, name, 0o666)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EEXIST) => HostError::new(
                    TOOL_FAILED,
                    format!(
                        "{shown} appeared while it was being created; nothing was written. Read it, then call again."
                    ),
                ),
                _ => io_err(shown, &e),
            })?;
        let done = f.write_all(bytes);
        if let Err(e) = done {
            let _ = self.dirs.unlink(rel);
            return Err(io_err(shown, &e));
        }
        Ok(())
    }

    /// Replaces the content of the existing file `rel` read as `old` with `bytes`, keeping mode (and owner where
    /// permitted). Refuses (TOOL_FAILED, nothing written) when the file changed since `old` was read.
    pub fn replace(&mut self, rel: &str, old: &Existing, bytes: &[u8], shown: &str) -> Result<(), HostError> {
        self.prepare_replace(rel, old, shown)?.run(bytes)
    }

    /// The replacement of `rel` (read as `old`) as a value that owns its folder handle, so it can run on another
    /// thread than this call's handles (Edit writes a large file while this thread hashes the new text).
    pub fn prepare_replace(&mut self, rel: &str, old: &Existing, shown: &str) -> Result<Replacement, HostError> {
        let (dir, name) = beneath::split(rel);
        let dfd = self.dirs.dir(dir).map_err(|e| io_err(shown, &e))?;
        let dir = dfd.try_clone().map_err(|e| io_err(shown, &e))?;
        Ok(Replacement {
            dir,
            name: cstr(name).map_err(|e| io_err(shown, &e))?,
            shown: shown.to_string(),
            stamp: old.stamp,
            mode: old.mode,
            uid: old.uid,
            gid: old.gid,
            nlink: old.nlink,
        })
    }

    /// Removes the file `rel` if it is still the one read as `old`.
    pub fn remove(&mut self, rel: &str, old: &Existing, shown: &str) -> Result<(), HostError> {
        match self.dirs.stat(rel) {
            Ok(Some(now)) if now.unchanged(&old.stamp) => {}
            Ok(_) => {
                return Err(HostError::new(
                    TOOL_FAILED,
                    format!("{shown} changed on disk while the call ran; nothing was removed. Read it again first."),
                ))
            }
            Err(e) => return Err(io_err(shown, &e)),
        }
        self.dirs.unlink(rel).map_err(|e| io_err(shown, &e))
    }

    /// Moves `from` to `to` without replacing an existing `to` (creating `to`'s missing folders). Across
    /// filesystems the file is copied (mode kept) and the source removed.
    pub fn move_noreplace(
        &mut self,
        from: &str,
        to: &str,
        bytes: &[u8],
        mode: u32,
        shown_to: &str,
    ) -> Result<(), HostError> {
        let exists = || {
            HostError::new(
                INVALID_ARGUMENT,
                format!("{shown_to} already exists; MV never replaces a file. Choose another destination, or REM that file first."),
            )
        };
        if self.dirs.stat(to).map_err(|e| io_err(shown_to, &e))?.is_some() {
            return Err(exists());
        }
        self.mkdirs_for(to, shown_to)?;
        match self.dirs.rename_noreplace(from, to) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Err(exists()),
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                let (dir, name) = beneath::split(to);
                let mut f = self
                    .dirs
                    .create_file(dir, name, 0o600)
                    .map_err(|e| match e.raw_os_error() {
                        Some(libc::EEXIST) => exists(),
                        _ => io_err(shown_to, &e),
                    })?;
                let done = (|| -> io::Result<()> {
                    f.write_all(bytes)?;
                    // SAFETY: valid fd.
                    if unsafe { libc::fchmod(f.as_raw_fd(), mode as libc::mode_t) } < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    f.sync_all()
                })();
                if let Err(e) = done {
                    let _ = self.dirs.unlink(to);
                    return Err(io_err(shown_to, &e));
                }
                self.dirs.unlink(from).map_err(|e| io_err(shown_to, &e))
            }
            Err(e) => Err(io_err(shown_to, &e)),
        }
    }
}
