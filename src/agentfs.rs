//! The toolkit's own files under `<agentDir>/pi-codex-toolkit/` (audit log, review store, scratch roots) are
//! untrusted input (docs/review.md "The store is untrusted input", docs/host.md "Audit"): anything with the user's
//! rights — another tool, an unpacked archive, a hostile repository's script — may have put a symlink, a hard link
//! or a FIFO where a folder or file is expected. So every folder on the way is created with `mkdir` and accepted
//! only as a real directory owned by this user (never followed), and every file is opened with `O_NOFOLLOW` and
//! `O_NONBLOCK` (a FIFO cannot hang the open) and then checked on the descriptor: a regular file, one link, this
//! user's. A refusal is an I/O error with a stable errno: `ELOOP` (a link), `ENOTDIR` (not a folder), `EINVAL`
//! (not a regular file), `EMLINK` (more than one link), `EPERM` (another user's).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn refusal(errno: i32) -> io::Error {
    io::Error::from_raw_os_error(errno)
}

/// Accepts `path` as one of our folders without following it: a real directory owned by this user; a folder with
/// group or other bits is narrowed to 0700.
pub fn verify_dir(path: &Path) -> io::Result<fs::Metadata> {
    let m = fs::symlink_metadata(path)?;
    if m.file_type().is_symlink() {
        return Err(refusal(libc::ELOOP));
    }
    if !m.is_dir() {
        return Err(refusal(libc::ENOTDIR));
    }
    if m.uid() != euid() {
        return Err(refusal(libc::EPERM));
    }
    if m.mode() & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o700))?;
    }
    Ok(m)
}

/// `base` (the agent dir: the user's choice, created if missing and followed if a link) joined with `parts`, each
/// part created 0700 when missing and verified with [`verify_dir`].
pub fn ensure_dirs(base: &Path, parts: &[&str]) -> io::Result<PathBuf> {
    fs::create_dir_all(base)?;
    let mut p = base.to_path_buf();
    for part in parts {
        p.push(part);
        match fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        verify_dir(&p)?;
    }
    Ok(p)
}

/// Checks an opened file on its descriptor: a regular file with one link, owned by this user (then narrowed to
/// 0600 when wider), and switches the descriptor back to blocking I/O.
pub fn check_file(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(refusal(libc::EINVAL));
    }
    if m.nlink() != 1 {
        return Err(refusal(libc::EMLINK));
    }
    if m.uid() != euid() {
        return Err(refusal(libc::EPERM));
    }
    if m.mode() & 0o077 != 0 {
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    let fd = f.as_raw_fd();
    // SAFETY: `fd` is a valid open descriptor owned by `f` for the duration of both calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(())
}

fn options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    o
}

/// Opens (creating 0600 when missing) `path` for appending, checked with [`check_file`].
pub fn open_append(path: &Path) -> io::Result<File> {
    let f = options().append(true).create(true).open(path)?;
    check_file(&f)?;
    Ok(f)
}

/// Creates `path` (0600), failing when anything is there already.
pub fn create_new(path: &Path) -> io::Result<File> {
    let f = options().write(true).create_new(true).open(path)?;
    check_file(&f)?;
    Ok(f)
}

/// Opens `path` for reading, checked with [`check_file`].
pub fn open_read(path: &Path) -> io::Result<File> {
    let f = options().read(true).open(path)?;
    check_file(&f)?;
    Ok(f)
}

/// Reads all of `path` (see [`open_read`]), refusing a file larger than `max` bytes with `EFBIG`.
pub fn read(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let f = open_read(path)?;
    let len = f.metadata()?.len();
    if len > max {
        return Err(refusal(libc::EFBIG));
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(refusal(libc::EFBIG));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn errno(r: io::Result<impl Sized>) -> i32 {
        r.err().and_then(|e| e.raw_os_error()).expect("refused with an errno")
    }

    #[test]
    fn folders_are_created_private_and_links_refused() {
        let t = TempDir::new().unwrap();
        let d = ensure_dirs(t.path(), &["a", "b"]).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_dirs(t.path(), &["a", "b"]).unwrap();
        assert_eq!(fs::metadata(&d).unwrap().mode() & 0o777, 0o700, "narrowed");
        let outside = t.path().join("outside");
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, t.path().join("a/link")).unwrap();
        assert_eq!(errno(ensure_dirs(t.path(), &["a", "link"])), libc::ELOOP);
        fs::write(t.path().join("a/file"), "x").unwrap();
        assert_eq!(errno(ensure_dirs(t.path(), &["a", "file", "c"])), libc::ENOTDIR);
    }

    #[test]
    fn files_must_be_regular_single_linked_and_never_block() {
        let t = TempDir::new().unwrap();
        let p = t.path().join("log");
        open_append(&p).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        // A hard link to another file is refused and the target's mode is left alone.
        let target = t.path().join("target");
        fs::write(&target, "keep").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        let hard = t.path().join("hard");
        fs::hard_link(&target, &hard).unwrap();
        assert_eq!(errno(open_append(&hard)), libc::EMLINK);
        assert_eq!(errno(read(&hard, 100)), libc::EMLINK);
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o777, 0o644);
        // A symlink is not followed.
        let sym = t.path().join("sym");
        std::os::unix::fs::symlink(&target, &sym).unwrap();
        assert_eq!(errno(open_append(&sym)), libc::ELOOP);
        assert_eq!(errno(read(&sym, 100)), libc::ELOOP);
        // A FIFO neither hangs the open nor is used.
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // (A blocking open would hang here: the test runner's timeout reports it.)
        assert_eq!(errno(read(&fifo, 100)), libc::EINVAL);
        // Opening a FIFO write-only without a reader fails at once with ENXIO under O_NONBLOCK.
        assert!(open_append(&fifo).is_err());
        assert_eq!(errno(create_new(&p)), libc::EEXIST);
        // The size bound: at it reads, over it refuses.
        fs::write(&p, "12345").unwrap();
        assert_eq!(read(&p, 5).unwrap(), b"12345");
        assert_eq!(errno(read(&p, 4)), libc::EFBIG);
    }
}
