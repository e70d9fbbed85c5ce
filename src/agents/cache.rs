//! Definitions read once per pair of folders and read again only when a folder changes (docs/agents.md
//! "Definitions"). The Task glue asks for the definitions several times per prompt — whether Task is visible, the
//! agent list in the system prompt, each Task call — on Node's main thread; reading and parsing every file each time
//! is wasted work when nothing changed. A folder's stamp (each `*.md` entry's name, size and modification time, plus
//! the folder's own modification time) costs one directory listing and one `stat` per file; the files are read and
//! parsed again only when a stamp differs.

use super::definition::{load, Loaded};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

/// The most folder pairs remembered (one per session working directory in practice); past it the cache starts over.
const MAX_ENTRIES: usize = 32;

/// One `*.md` entry of a folder: its path, size and modification time.
type FileStamp = (PathBuf, u64, Option<SystemTime>);

/// What a definitions folder looked like: `None` when it cannot be listed (missing), else its own modification time
/// and each `*.md` entry, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp(Option<(Option<SystemTime>, Vec<FileStamp>)>);

fn stamp(dir: &Path) -> Stamp {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Stamp(None);
    };
    let own = std::fs::metadata(dir).and_then(|m| m.modified()).ok();
    let mut files: Vec<FileStamp> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let m = std::fs::metadata(&p).ok();
            let len = m.as_ref().map_or(u64::MAX, |m| m.len());
            let modified = m.and_then(|m| m.modified().ok());
            (p, len, modified)
        })
        .collect();
    files.sort();
    Stamp(Some((own, files)))
}

type Key = (PathBuf, Option<PathBuf>);
type Entry = ([Stamp; 2], Arc<Loaded>);

fn cache() -> &'static Mutex<HashMap<Key, Entry>> {
    static C: OnceLock<Mutex<HashMap<Key, Entry>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// The definitions of `agent_dir` and `project_dir` ([`load`]), from memory while neither folder changed.
pub fn load_cached(agent_dir: &Path, project_dir: Option<&Path>) -> Arc<Loaded> {
    let user = agent_dir.join("agents");
    let project = project_dir.map(|p| p.join(".pi").join("agents"));
    // Stamped before reading: a change during the read shows as a different stamp next time.
    let now = [stamp(&user), project.as_deref().map_or(Stamp(None), stamp)];
    let key: Key = (agent_dir.to_path_buf(), project_dir.map(Path::to_path_buf));
    if let Some((seen, loaded)) = cache().lock().get(&key) {
        if *seen == now {
            return loaded.clone();
        }
    }
    let loaded = Arc::new(load(agent_dir, project_dir));
    let mut c = cache().lock();
    if c.len() >= MAX_ENTRIES && !c.contains_key(&key) {
        c.clear();
    }
    c.insert(key, (now, loaded.clone()));
    loaded
}
