//! Every file operation of a patch happens relative to directory handles opened beneath the workspace root without
//! following symlinks, so swapping a verified folder for a symlink between preflight and commit cannot redirect a
//! read or a write outside the workspace (docs/patch.md, "Containment").
//!
//! Folders are opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux 5.6+),
//! else by walking the already validated segments one `openat(O_NOFOLLOW | O_DIRECTORY)` at a time; files are then
//! opened, created, renamed and removed with the `*at` calls on those handles and `O_NOFOLLOW`. Hand-written on
//! `libc` because the project already depends on it and no kept crate exposes `openat2` with a fallback walk.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::rc::Rc;

/// At most this many folder handles are kept open at once (a patch touching more folders reopens them).
const CACHE_MAX: usize = 256;

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Splits a normalised relative path (`a/b/c.txt`) into its folder (`a/b`, or `` for the root) and its name.
pub fn split(rel: &str) -> (&str, &str) {
    match rel.rfind('/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => ("", rel),
    }
}

/// The workspace root and the folder handles opened beneath it during one patch.
pub struct Root {
    fd: Rc<OwnedFd>,
    /// Shared handles: a caller keeps its `Rc` while it uses one, so evicting the cache never closes it early.
    dirs: HashMap<String, Rc<OwnedFd>>,
    /// `false` once `openat2` reported it is missing (ENOSYS) or filtered (EPERM): use the walk from then on.
    openat2: bool,
}

/// What `fstatat`/`fstat` found (only the fields the executor compares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    fn of(st: &libc::stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            mode: st.st_mode,
            size: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
    /// Same file, same size, same modification and change time: nobody wrote to it in between.
    pub fn unchanged(&self, other: &Stamp) -> bool {
        (self.dev, self.ino, self.size, self.mtime, self.ctime)
            == (other.dev, other.ino, other.size, other.mtime, other.ctime)
    }
}

/// `fstat` of an open file.
pub fn fstat(f: &impl AsRawFd) -> io::Result<Stamp> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid fd, `st` is written by the kernel on success.
    check(unsafe { libc::fstat(f.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded.
    Ok(Stamp::of(unsafe { &st.assume_init() }))
}

/// The stamp of `name` in the folder `dir` without following a final symlink; `None` when it is missing.
pub fn stat_at(dir: &impl AsRawFd, name: &std::ffi::CStr) -> io::Result<Option<Stamp>> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: valid dirfd and name; `st` is written on success.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::ENOENT) {
            Ok(None)
        } else {
            Err(e)
        };
    }
    // SAFETY: fstatat succeeded.
    Ok(Some(Stamp::of(unsafe { &st.assume_init() })))
}

impl Root {
    /// Opens the workspace folder itself (following symlinks: the workspace path is the user's choice).
    pub fn open(cwd: &Path) -> io::Result<Root> {
        let c = CString::new(cwd.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: valid NUL-terminated path.
        let fd = check(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) })?;
        Ok(Root {
            // SAFETY: `fd` was just opened and is owned here.
            fd: Rc::new(unsafe { OwnedFd::from_raw_fd(fd) }),
            dirs: HashMap::new(),
            openat2: cfg!(target_os = "linux"),
        })
    }

    /// Opens a folder (`""` = the root) beneath the root; a symlink or an escape anywhere on the way fails
    /// (`ELOOP`, `EXDEV` or `ENOTDIR`). Handles are cached for the rest of the patch.
    pub fn dir(&mut self, rel_dir: &str) -> io::Result<Rc<OwnedFd>> {
        if rel_dir.is_empty() {
            return Ok(self.fd.clone());
        }
        if let Some(fd) = self.dirs.get(rel_dir) {
            return Ok(fd.clone());
        }
        let fd = Rc::new(self.open_beneath(rel_dir)?);
        if self.dirs.len() >= CACHE_MAX {
            self.dirs.clear();
        }
        self.dirs.insert(rel_dir.to_string(), fd.clone());
        Ok(fd)
    }

    fn open_beneath(&mut self, rel_dir: &str) -> io::Result<OwnedFd> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        #[cfg(target_os = "linux")]
        if self.openat2 {
            let c = cstr(rel_dir)?;
            // SAFETY: open_how is plain data; zeroed is a valid value.
            let mut how: libc::open_how = unsafe { std::mem::zeroed() };
            how.flags = flags as u64;
            how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
            // SAFETY: valid dirfd, NUL-terminated path, `how` lives across the call with its true size.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    &how as *const libc::open_how,
                    std::mem::size_of::<libc::open_how>(),
                )
            };
            if rc >= 0 {
                // SAFETY: the kernel returned a new fd owned here.
                return Ok(unsafe { OwnedFd::from_raw_fd(rc as RawFd) });
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) => self.openat2 = false,
                Some(libc::EAGAIN) => {} // a concurrent rename somewhere: the walk below decides
                _ => return Err(err),
            }
        }
        // The walk: each segment is a plain name (validated: no `..`, no `.`, no empty segment).
        let mut cur: Option<OwnedFd> = None;
        for seg in rel_dir.split('/') {
            if seg.is_empty() || seg == "." || seg == ".." {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            let parent = cur.as_ref().map_or(self.fd.as_raw_fd(), |f| f.as_raw_fd());
            let c = cstr(seg)?;
            // SAFETY: valid dirfd and NUL-terminated name.
            let fd = check(unsafe { libc::openat(parent, c.as_ptr(), flags | libc::O_NOFOLLOW) })?;
            // SAFETY: new fd owned here.
            cur = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        cur.ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// A root at the folder `rel_dir` beneath this one (opened like [`Root::dir`]: no symlink on the way), for
    /// callers that then work relative to that folder (Grep's walk, docs/host.md "Containment of reads").
    pub fn sub(&mut self, rel_dir: &str) -> io::Result<Root> {
        Ok(Root {
            fd: self.dir(rel_dir)?,
            dirs: HashMap::new(),
            openat2: self.openat2,
        })
    }

    /// Forgets cached handles (after folders were removed).
    pub fn forget(&mut self) {
        self.dirs.clear();
    }

    /// `fstatat(AT_SYMLINK_NOFOLLOW)` of `rel`; `Ok(None)` when it does not exist.
    pub fn stat(&mut self, rel: &str) -> io::Result<Option<Stamp>> {
        let (dir, name) = split(rel);
        let dfd = match self.dir(dir) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(e),
        };
        stat_at(&*dfd, &cstr(name)?)
    }

    /// Opens an existing file beneath the root with `O_NOFOLLOW` (`write` = read-write, else read-only).
    pub fn open_file(&mut self, rel: &str, write: bool) -> io::Result<File> {
        let (dir, name) = split(rel);
        let dfd = self.dir(dir)?;
        let c = cstr(name)?;
        let acc = if write { libc::O_RDWR } else { libc::O_RDONLY };
        // SAFETY: valid dirfd and name.
        let fd = check(unsafe {
            libc::openat(
                dfd.as_raw_fd(),
                c.as_ptr(),
                acc | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY,
            )
        })?;
        // SAFETY: new fd owned by the File.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Creates a new file `name` in the folder `dir` (exclusive, never through a symlink).
    pub fn create_file(&mut self, dir: &str, name: &str, mode: u32) -> io::Result<File> {
        let dfd = self.dir(dir)?;
        let c = cstr(name)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid dirfd and name.
        let fd = check(unsafe { libc::openat(dfd.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) })?;
        // SAFETY: new fd owned by the File.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Removes the file `rel` (never follows a symlink: unlinkat removes the entry itself).
    pub fn unlink(&mut self, rel: &str) -> io::Result<()> {
        let (dir, name) = split(rel);
        let dfd = self.dir(dir)?;
        let c = cstr(name)?;
        // SAFETY: valid dirfd and name.
        check(unsafe { libc::unlinkat(dfd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// Removes the empty folder `rel`.
    pub fn rmdir(&mut self, rel: &str) -> io::Result<()> {
        self.dirs.remove(rel);
        let (dir, name) = split(rel);
        let dfd = self.dir(dir)?;
        let c = cstr(name)?;
        // SAFETY: valid dirfd and name.
        check(unsafe { libc::unlinkat(dfd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) }).map(drop)
    }

    /// Renames `from` to `to` (both relative to the root), refusing to replace an existing `to`
    /// (`renameat2(RENAME_NOREPLACE)`; check-then-rename where the filesystem lacks it).
    pub fn rename_noreplace(&mut self, from: &str, to: &str) -> io::Result<()> {
        let (fd_dir, f_name) = split(from);
        let (td_dir, t_name) = split(to);
        let fdf = self.dir(fd_dir)?;
        let tdf = self.dir(td_dir)?;
        let (a, b) = (cstr(f_name)?, cstr(t_name)?);
        #[cfg(target_os = "linux")]
        {
            // Through syscall(2), not libc's `renameat2` wrapper: glibc has the wrapper only from 2.28 and musl 1.2.3
            // not at all, and a cdylib links a missing libc symbol silently, so the release builds for older glibc
            // and musl would fail to load (docs/release.md §The symbol trap).
            // SAFETY: valid dirfds and NUL-terminated names; the kernel ABI of renameat2 is
            // (int, const char *, int, const char *, unsigned int).
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    fdf.as_raw_fd(),
                    a.as_ptr(),
                    tdf.as_raw_fd(),
                    b.as_ptr(),
                    libc::RENAME_NOREPLACE,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if !matches!(err.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
                return Err(err);
            }
        }
        if self.stat(to)?.is_some() {
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        // SAFETY: valid dirfds and names.
        check(unsafe { libc::renameat(fdf.as_raw_fd(), a.as_ptr(), tdf.as_raw_fd(), b.as_ptr()) }).map(drop)
    }

    /// Renames `from` over `to`, replacing an existing file atomically (`renameat`; used by review rollback to put
    /// captured bytes back: readers see the old or the new file, never a mix).
    pub fn rename_replace(&mut self, from: &str, to: &str) -> io::Result<()> {
        let (fd_dir, f_name) = split(from);
        let (td_dir, t_name) = split(to);
        let fdf = self.dir(fd_dir)?;
        let tdf = self.dir(td_dir)?;
        let (a, b) = (cstr(f_name)?, cstr(t_name)?);
        // SAFETY: valid dirfds and names.
        check(unsafe { libc::renameat(fdf.as_raw_fd(), a.as_ptr(), tdf.as_raw_fd(), b.as_ptr()) }).map(drop)
    }

    /// Swaps `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`, Linux 3.15+; `EINVAL`/`ENOSYS` where the
    /// filesystem or kernel lacks it). Used by review rollback to put captured bytes in place while keeping the
    /// replaced file, so it can be checked and swapped back.
    pub fn rename_exchange(&mut self, a: &str, b: &str) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            let (ad, an) = split(a);
            let (bd, bn) = split(b);
            let adf = self.dir(ad)?;
            let bdf = self.dir(bd)?;
            let (ca, cb) = (cstr(an)?, cstr(bn)?);
            // SAFETY: valid dirfds and NUL-terminated names (syscall(2): see rename_noreplace).
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    adf.as_raw_fd(),
                    ca.as_ptr(),
                    bdf.as_raw_fd(),
                    cb.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            if rc == 0 {
                return Ok(());
            }
            Err(io::Error::last_os_error())
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (a, b);
            Err(io::Error::from_raw_os_error(libc::ENOSYS))
        }
    }

    /// Creates every missing folder of `rel_dir` (mode 0777 minus umask), never through a symlink. Returns the
    /// folders it created, outermost first; on failure the ones created so far are in `created` too.
    pub fn mkdirs(&mut self, rel_dir: &str, created: &mut Vec<String>) -> io::Result<()> {
        if rel_dir.is_empty() {
            return Ok(());
        }
        match self.dir(rel_dir) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
        let mut end = 0;
        loop {
            let next = rel_dir[end..].find('/').map_or(rel_dir.len(), |i| end + i);
            let prefix = &rel_dir[..next];
            match self.dir(prefix) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    let (parent, name) = split(prefix);
                    let pfd = self.dir(parent)?;
                    let c = cstr(name)?;
                    // SAFETY: valid dirfd and name.
                    check(unsafe { libc::mkdirat(pfd.as_raw_fd(), c.as_ptr(), 0o777) })?;
                    created.push(prefix.to_string());
                    self.dir(prefix)?;
                }
                Err(e) => return Err(e),
            }
            if next == rel_dir.len() {
                return Ok(());
            }
            end = next + 1;
        }
    }

    /// The deepest existing folder on the way to `rel` (the root always exists).
    pub fn deepest_existing(&mut self, rel: &str) -> String {
        let (mut dir, _) = split(rel);
        while !dir.is_empty() && self.dir(dir).is_err() {
            dir = split(dir).0;
        }
        dir.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn refuses_symlinks_and_stays_beneath() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
        symlink(out.path(), ws.path().join("link")).unwrap();
        symlink(out.path(), ws.path().join("a/inner")).unwrap();
        for walk in [false, true] {
            let mut r = Root::open(ws.path()).unwrap();
            if walk {
                r.openat2 = false;
            }
            assert!(r.dir("a/b").is_ok());
            for bad in ["link", "a/inner", "link/x"] {
                let e = r.dir(bad).unwrap_err().raw_os_error();
                assert!(
                    matches!(e, Some(libc::ELOOP) | Some(libc::EXDEV) | Some(libc::ENOTDIR)),
                    "{bad}: {e:?}"
                );
            }
            let mut made = Vec::new();
            assert!(r.mkdirs("link/new", &mut made).is_err());
            assert!(made.is_empty());
            assert!(r.create_file("a", "link2", 0o644).is_ok());
            r.mkdirs("a/b/c/d", &mut made).unwrap();
            assert_eq!(made, ["a/b/c", "a/b/c/d"]);
            r.rmdir("a/b/c/d").unwrap();
            r.rmdir("a/b/c").unwrap();
            r.unlink("a/link2").unwrap();
            made.clear();
        }
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_full_cache_never_closes_a_handle_in_use() {
        let ws = tempfile::tempdir().unwrap();
        for i in 0..CACHE_MAX + 2 {
            std::fs::create_dir(ws.path().join(format!("d{i}"))).unwrap();
        }
        std::fs::write(ws.path().join(format!("d{}/a.txt", CACHE_MAX)), b"a").unwrap();
        let mut r = Root::open(ws.path()).unwrap();
        for i in 0..CACHE_MAX - 1 {
            r.dir(&format!("d{i}")).unwrap();
        }
        // The source folder fills the cache; opening the destination folder evicts it while the rename uses it.
        let (from, to) = (format!("d{}/a.txt", CACHE_MAX), format!("d{}/b.txt", CACHE_MAX + 1));
        r.rename_noreplace(&from, &to).unwrap();
        assert_eq!(std::fs::read(ws.path().join(&to)).unwrap(), b"a");
    }
}
