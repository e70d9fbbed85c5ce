//! The undo journal behind in-place updates (docs/patch.md, "Crash guarantee and recovery").
//!
//! Updates rewrite a file in place (same inode: owner, hard links, extended attributes and ACLs are kept). Before
//! the first byte of any file changes, one journal file `.pct-patch-<id>.journal` in the workspace root holds, for
//! every file the patch rewrites, its path and its old and new content, and ends with a trailer written last. The
//! patch holds an exclusive `flock` on it while it commits and removes it when the commit ends. A journal found
//! later with its lock free belongs to a patch whose process died: each of its files that is neither its old nor
//! its new content but exactly what an interrupted rewrite leaves (new bytes up to some offset, old bytes after)
//! is written back to its old content; anything else is left alone (another writer changed it since).

use super::beneath::Root;
use fs4::fs_std::FileExt;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt as _;

const MAGIC: &[u8; 8] = b"PCTJRNL1";
const TRAILER: &[u8; 8] = b"PCTJEND1";
/// Journal names: `.pct-patch-<id>.journal` in the workspace root.
pub const PREFIX: &str = ".pct-patch-";
pub const SUFFIX: &str = ".journal";

/// One file a patch rewrites in place.
pub struct Entry<'a> {
    pub rel: &'a str,
    pub old: &'a [u8],
    pub new: &'a [u8],
}

/// A written, locked journal; [`Journal::finish`] removes it.
pub struct Journal {
    name: String,
    _file: File,
}

/// Writes the journal for `entries` and the staged temp files `temps` (complete, trailer last) and locks it.
/// Returns `None` when there is nothing to cover.
pub fn write(root: &mut Root, id: &str, temps: &[&str], entries: &[Entry<'_>]) -> io::Result<Option<Journal>> {
    if entries.is_empty() && temps.is_empty() {
        return Ok(None);
    }
    let name = format!("{PREFIX}{id}{SUFFIX}");
    let file = root.create_file("", &name, 0o600)?;
    let written = (|| {
        FileExt::try_lock_exclusive(&file)?;
        let mut w = BufWriter::with_capacity(1 << 20, &file);
        w.write_all(MAGIC)?;
        w.write_all(&(temps.len() as u64).to_le_bytes())?;
        for t in temps {
            w.write_all(&(t.len() as u64).to_le_bytes())?;
            w.write_all(t.as_bytes())?;
        }
        for e in entries {
            for part in [e.rel.as_bytes(), e.old, e.new] {
                w.write_all(&(part.len() as u64).to_le_bytes())?;
                w.write_all(part)?;
            }
        }
        w.write_all(TRAILER)?;
        w.write_all(&(entries.len() as u64).to_le_bytes())?;
        w.flush()
    })();
    match written {
        Ok(()) => Ok(Some(Journal { name, _file: file })),
        Err(e) => {
            let _ = root.unlink(&name);
            Err(e)
        }
    }
}

impl Journal {
    /// Removes the journal once every rewrite it covers is complete (or was put back). Returns its name when it
    /// could not be removed.
    pub fn finish(self, root: &mut Root) -> Option<String> {
        root.unlink(&self.name).err().map(|_| self.name)
    }
}

/// A rewrite position is "torn" when the file holds the first `k` bytes of `new` followed by `old` from `k` on
/// (what `pwrite(new)` then `ftruncate(len(new))` leaves when the process dies in between) and is neither.
pub fn is_torn(cur: &[u8], old: &[u8], new: &[u8]) -> bool {
    if cur == old || cur == new {
        return false;
    }
    let p = cur.iter().zip(new).take_while(|(a, b)| a == b).count();
    if cur.len() > old.len() {
        // Only a write that went past the old end: cur is a prefix of new.
        return p == cur.len();
    }
    if cur.len() != old.len() {
        return false;
    }
    // Smallest k with cur[k..] == old[k..]; it must be covered by the matching prefix of new.
    let mut k = cur.len();
    while k > 0 && cur[k - 1] == old[k - 1] {
        k -= 1;
    }
    k <= p
}

/// What recovery did to one file of an interrupted patch.
#[derive(Debug, PartialEq, Eq)]
pub enum Recovered {
    /// A half-written file was put back to its content before the interrupted patch.
    Restored(String),
    /// The file matches neither state nor a torn rewrite (changed since): left alone.
    Left(String),
}

fn read_u64(buf: &[u8], at: &mut usize) -> Option<u64> {
    let b = buf.get(*at..*at + 8)?;
    *at += 8;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

fn read_part<'a>(buf: &'a [u8], at: &mut usize) -> Option<&'a [u8]> {
    let n = usize::try_from(read_u64(buf, at)?).ok()?;
    let part = buf.get(*at..at.checked_add(n)?)?;
    *at += n;
    Some(part)
}

/// One parsed journal entry: path, old content, new content.
type Parsed<'a> = (String, &'a [u8], &'a [u8]);

/// Parses a journal: its temp files and entries when the trailer is there (the commit may have started), `None`
/// when it is incomplete (the process died before the first commit step) or not a journal.
fn parse(buf: &[u8]) -> Option<(Vec<&str>, Vec<Parsed<'_>>)> {
    if buf.get(..8)? != MAGIC {
        return None;
    }
    let mut at = 8;
    let n_temps = read_u64(buf, &mut at)?;
    let mut temps = Vec::new();
    for _ in 0..n_temps {
        temps.push(std::str::from_utf8(read_part(buf, &mut at)?).ok()?);
    }
    let mut out = Vec::new();
    while buf.get(at..at + 8)? != TRAILER {
        let rel = std::str::from_utf8(read_part(buf, &mut at)?).ok()?.to_string();
        let old = read_part(buf, &mut at)?;
        let new = read_part(buf, &mut at)?;
        out.push((rel, old, new));
    }
    at += 8;
    (read_u64(buf, &mut at)? == out.len() as u64 && at == buf.len()).then_some((temps, out))
}

/// Finishes the interrupted patches of this workspace: every journal in the root whose lock is free. Journals are
/// bounded like sources (twice the per-patch limit plus framing); a larger one is left in place.
pub fn recover(root: &mut Root, cwd: &std::path::Path) -> io::Result<Vec<Recovered>> {
    let mut out = Vec::new();
    let names: Vec<String> = std::fs::read_dir(cwd)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        .collect();
    for name in names {
        let Ok(mut file) = root.open_file(&name, true) else {
            continue;
        };
        if !matches!(FileExt::try_lock_exclusive(&file), Ok(true)) {
            continue; // a live patch in another process
        }
        let size = super::beneath::fstat(&file)?.size;
        if size > 2 * super::preflight::MAX_TOTAL_BYTES + (1 << 20) {
            continue;
        }
        let mut buf = Vec::new();
        buf.try_reserve_exact(size as usize)
            .map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        (&mut file).take(size).read_to_end(&mut buf)?;
        if !buf.starts_with(MAGIC) {
            continue; // not ours: a user file that happens to have such a name is never removed
        }
        let (temps, entries) = parse(&buf).unwrap_or_default();
        for t in temps {
            // Staged temp files of Adds that were never renamed into place (only names this executor makes).
            let name = super::beneath::split(t).1;
            if name.starts_with(PREFIX) && name.ends_with(".tmp") {
                let _ = root.unlink(t);
            }
        }
        for (rel, old, new) in entries {
            // A file that cannot be opened beneath the root any more (now a symlink, no permission) is reported as
            // left alone; it never blocks recovering the others.
            match recover_one(root, &rel, old, new) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {}
                Err(_) => out.push(Recovered::Left(rel)),
            }
        }
        root.unlink(&name)?;
    }
    Ok(out)
}

fn recover_one(root: &mut Root, rel: &str, old: &[u8], new: &[u8]) -> io::Result<Option<Recovered>> {
    let mut f = match root.open_file(rel, true) {
        Ok(f) => f,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let limit = old.len().max(new.len()) as u64 + 1;
    let mut cur = Vec::new();
    (&mut f).take(limit).read_to_end(&mut cur)?;
    if cur == old || cur == new {
        return Ok(None);
    }
    if !is_torn(&cur, old, new) {
        return Ok(Some(Recovered::Left(rel.to_string())));
    }
    f.write_all_at(old, 0)?;
    f.set_len(old.len() as u64)?;
    Ok(Some(Recovered::Restored(rel.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_states() {
        let (old, new) = (b"abcdef".as_slice(), b"XYZ".as_slice());
        // pwrite progress 1..3 bytes before the truncate
        assert!(is_torn(b"Xbcdef", old, new));
        assert!(is_torn(b"XYZdef", old, new));
        assert!(!is_torn(b"XYZ", old, new)); // done
        assert!(!is_torn(b"abcdef", old, new)); // untouched
        assert!(!is_torn(b"Xbcdeg", old, new)); // someone else wrote
        assert!(!is_torn(b"abc", old, new));
        // growing rewrite
        let (old, new) = (b"ab".as_slice(), b"XYZW".as_slice());
        assert!(is_torn(b"Xb", old, new));
        assert!(is_torn(b"XYZ", old, new));
        assert!(!is_torn(b"XYQ", old, new));
        // new shares a prefix with old
        let (old, new) = (b"same-old".as_slice(), b"same-new!".as_slice());
        assert!(is_torn(b"same-nld", old, new));
        assert!(!is_torn(b"other-xx", old, new));
    }

    #[test]
    fn parse_needs_the_trailer() {
        let ws = tempfile::tempdir().unwrap();
        let mut root = Root::open(ws.path()).unwrap();
        let j = write(
            &mut root,
            "t1",
            &["d/.pct-patch-x-1.tmp"],
            &[Entry {
                rel: "a/b.txt",
                old: b"old\n",
                new: b"new\n",
            }],
        )
        .unwrap()
        .unwrap();
        let bytes = std::fs::read(ws.path().join(".pct-patch-t1.journal")).unwrap();
        let (temps, parsed) = parse(&bytes).unwrap();
        assert_eq!(temps, ["d/.pct-patch-x-1.tmp"]);
        assert_eq!(
            parsed,
            vec![("a/b.txt".to_string(), b"old\n".as_slice(), b"new\n".as_slice())]
        );
        for cut in 0..bytes.len() {
            assert!(parse(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        assert!(j.finish(&mut root).is_none());
        assert!(!ws.path().join(".pct-patch-t1.journal").exists());
    }
}
