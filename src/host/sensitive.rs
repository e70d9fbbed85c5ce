//! Sensitive paths (docs/permissions.md "Sensitive paths"): the folders and files where credentials and keys live —
//! `~/.ssh`, `~/.aws`, `~/.gnupg`, `~/.config/gcloud`, `~/.kube`, `~/.docker/config.json`, `~/.netrc`,
//! `~/.git-credentials`, `~/.npmrc`, `~/.pypirc`, the agent dir's own credential files, browser profiles and
//! keychains. The host file tools refuse them in every permission mode, `auto` included (`SENSITIVE_PATH`): no
//! card, no session grant and no mode opens them. A command that names one is never allowed without a card
//! (src/host/permission.rs). The config can add paths (`permissions.sensitivePaths`), never remove one: the seed
//! list is compiled in, and the toolkit reads only its one global config file, so nothing a project ships can
//! shrink it.
//!
//! Why here and not in the glue: every host tool resolves its paths through [`super::paths::Roots`], so the check
//! sits on the one door every Read, Glob, Grep, Write, Edit and `MV` goes through (Glob and Grep also skip the
//! sensitive entries of a tree they walk), and a symlink inside the workspace that leads into `~/.ssh` is refused
//! by its canonical path.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, RwLock};

/// The seed list, relative to the home folder: credentials of the common clients, browser profiles (cookies,
/// saved passwords) and keychains.
pub const SEED: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    // Browser profiles (Linux, Flatpak and Snap installs, macOS).
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    ".var/app/org.mozilla.firefox",
    ".var/app/com.google.Chrome",
    "snap/firefox",
    "snap/chromium",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Firefox",
    "Library/Application Support/BraveSoftware",
    "Library/Application Support/Microsoft Edge",
    "Library/Safari",
    "Library/Cookies",
    // Keychains and secret stores.
    "Library/Keychains",
    ".local/share/keyrings",
    ".password-store",
];

/// The agent dir's own credential files (Pi keeps provider keys and OAuth tokens there; `models.json` may carry
/// API keys and headers).
pub const AGENT_DIR_FILES: &[&str] = &["auth.json", "oauth.json", "mcp-auth.json", "models.json"];

/// Most entries `permissions.sensitivePaths` may add.
pub const MAX_EXTRA: usize = 64;
/// Longest entry of `permissions.sensitivePaths`.
pub const MAX_EXTRA_CHARS: usize = 4096;

/// Whether `s` is a valid `permissions.sensitivePaths` entry: absolute (`/…`) or home-relative (`~/…`), 2 to
/// [`MAX_EXTRA_CHARS`] characters, no control characters. `Err` says which rule it breaks.
pub fn check_extra(s: &str) -> Result<(), &'static str> {
    if s.chars().count() > MAX_EXTRA_CHARS || s.chars().any(char::is_control) {
        return Err("must be a path of at most 4096 characters without control characters");
    }
    if !(s.starts_with('/') || s.starts_with("~/")) || s.len() < 2 {
        return Err("must be an absolute path or start with ~/");
    }
    Ok(())
}

/// One sensitive path: where it is and how messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Absolute, lexically normalised.
    pub path: PathBuf,
    /// The same place resolved through its symlinks (when it exists and differs).
    pub canonical: Option<PathBuf>,
    /// How the user knows it: `~/.ssh`, `<agent dir>/auth.json`, or the configured spelling.
    pub shown: String,
}

/// A set of sensitive paths: the seed under one home folder, the agent dir's files, and the configured extras.
#[derive(Debug, Clone, Default)]
pub struct Sensitive {
    entries: Vec<Entry>,
    /// The seed as component lists, for a command whose path's prefix is not known (`/root/.ssh`, `$D/.aws`).
    seed_components: Vec<Vec<String>>,
}

/// Compares as the file system does: case-insensitively on macOS and Windows (their default volumes are).
fn fold(s: &str) -> String {
    if cfg!(any(target_os = "macos", windows)) {
        s.to_lowercase()
    } else {
        s.to_string()
    }
}

fn components(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(fold(&n.to_string_lossy())),
            _ => None,
        })
        .collect()
}

/// Whether `path` is `base` or inside it, component by component (folded as the platform compares names).
fn within(path: &Path, base: &Path) -> bool {
    if cfg!(any(target_os = "macos", windows)) {
        let p = components(path);
        let b = components(base);
        path.is_absolute() == base.is_absolute() && p.len() >= b.len() && p[..b.len()] == b[..]
    } else {
        path.starts_with(base)
    }
}

impl Sensitive {
    /// The seed under `home` (none: only the agent dir's files and the extras), the agent dir's credential files,
    /// and `extra` (`~/…` expands under `home`; entries that are not absolute are ignored, the config refuses them).
    pub fn new(home: Option<&Path>, agent_dir: Option<&Path>, extra: &[String]) -> Sensitive {
        let mut entries = Vec::new();
        let mut add = |path: PathBuf, shown: String| {
            let path = super::paths::lexical_normalize(&path);
            let canonical = std::fs::canonicalize(&path).ok().filter(|c| *c != path);
            entries.push(Entry { path, canonical, shown });
        };
        if let Some(h) = home {
            for rel in SEED {
                add(h.join(rel), format!("~/{rel}"));
            }
        }
        if let Some(a) = agent_dir {
            for f in AGENT_DIR_FILES {
                add(a.join(f), format!("<agent dir>/{f}"));
            }
        }
        for e in extra {
            if check_extra(e).is_err() {
                continue;
            }
            match (e.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => add(h.join(rest), e.clone()),
                (Some(_), None) => {}
                (None, _) => add(PathBuf::from(e), e.clone()),
            }
        }
        Sensitive {
            entries,
            seed_components: SEED.iter().map(|s| components(Path::new(s))).collect(),
        }
    }

    /// The entry that covers `path` (it, or a folder holding it); `path` is absolute and lexically normalised.
    pub fn covering(&self, path: &Path) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| within(path, &e.path) || e.canonical.as_deref().is_some_and(|c| within(path, c)))
    }

    /// The entries that can cover a path inside the folder `dir` (absolute, lexically normalised): those inside it
    /// and those holding it, by their path or their canonical form. A path beneath `dir` is covered by an entry only
    /// if the entry is one of these (both are prefixes of the path, so one holds the other), so a walk of `dir`
    /// checks each of its entries against these alone: usually none, where every entry was compared with all of the
    /// seed list before.
    pub fn within_tree(&self, dir: &Path) -> Sensitive {
        let near = |p: &Path| within(p, dir) || within(dir, p);
        Sensitive {
            entries: self
                .entries
                .iter()
                .filter(|e| near(&e.path) || e.canonical.as_deref().is_some_and(near))
                .cloned()
                .collect(),
            seed_components: Vec::new(),
        }
    }

    /// Whether no entry is left (a walk then checks nothing per entry).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in order (seed, agent dir, extras).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The sensitive path a shell command names, if any: each word of the command (shell quoting and escapes
    /// undone, split at the operators `; | & < > ( )`, backquotes and `=`) with `~`, `$HOME` and `${HOME}`
    /// expanded and a relative word taken from `cwd`; and, whatever its prefix, a word that holds a seed path's
    /// components in a row (`/root/.ssh/id_rsa`, `$D/.aws/credentials`, `.ssh/config` after a `cd ~`). A name the
    /// command computes (globs, variables, `base64 -d`) is not seen: docs/permissions.md "What the toolkit does not
    /// guarantee".
    pub fn named_in_command(&self, command: &str, cwd: &Path, home: Option<&Path>) -> Option<&Entry> {
        for word in shell_words(command) {
            let expanded = expand_home(&word, home);
            let p = Path::new(&expanded);
            let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
            if let Some(e) = self.covering(&super::paths::lexical_normalize(&abs)) {
                return Some(e);
            }
            let comps = components(p);
            for (i, seed) in self.seed_components.iter().enumerate() {
                if comps.windows(seed.len()).any(|w| w == &seed[..]) {
                    return self.entries.iter().find(|e| e.shown == format!("~/{}", SEED[i]));
                }
            }
        }
        None
    }
}

/// `~`, `~/…`, `$HOME…` and `${HOME}…` with the home folder put in (unchanged without one).
fn expand_home(word: &str, home: Option<&Path>) -> String {
    let Some(h) = home else {
        return word.to_string();
    };
    let h = h.display().to_string();
    for prefix in ["${HOME}", "$HOME", "~"] {
        if let Some(rest) = word.strip_prefix(prefix) {
            if rest.is_empty() || rest.starts_with('/') {
                return format!("{h}{rest}");
            }
        }
    }
    word.to_string()
}

/// The words of a shell command, quotes and backslash escapes undone. Splits at blanks and at the operators a path
/// cannot hold unquoted (`; | & < > ( )`, backquotes) and at `=` (`--file=~/.netrc`, `KEY=~/.aws/x`).
pub fn shell_words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => cur.push(c),
            (Some('"'), '"') => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), _) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        cur.push(n);
                    }
                }
            }
            (None, c) if c.is_whitespace() || ";|&<>()`=".contains(c) => flush(&mut cur, &mut out),
            (None, c) => cur.push(c),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// The home folder: `HOME` (`USERPROFILE` on Windows); none when unset or not absolute.
pub fn home() -> Option<PathBuf> {
    let v = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    let p = PathBuf::from(v);
    p.is_absolute().then_some(p)
}

/// The configured extras in force for the process (`permissions.sensitivePaths`, set by the glue whenever the
/// config is applied).
static EXTRA: LazyLock<RwLock<Arc<Vec<String>>>> = LazyLock::new(|| RwLock::new(Arc::new(Vec::new())));

/// Sets the configured extras (entries that are not valid are dropped; the config refuses them before this).
pub fn set_extra(extra: Vec<String>) {
    let list: Vec<String> = extra
        .into_iter()
        .filter(|e| check_extra(e).is_ok())
        .take(MAX_EXTRA)
        .collect();
    *EXTRA.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(list);
}

/// The configured extras in force.
pub fn extra() -> Arc<Vec<String>> {
    EXTRA.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The last set built, for its inputs: building one resolves every entry through its symlinks, and the set is
/// consulted by every path a tool call resolves.
type Cached = (Option<PathBuf>, Option<PathBuf>, Arc<Vec<String>>, Arc<Sensitive>);
static CACHE: LazyLock<std::sync::Mutex<Option<Cached>>> = LazyLock::new(|| std::sync::Mutex::new(None));

/// The set in force for a session whose agent dir is `agent_dir`: the seed under [`home`], the agent dir's files
/// and the configured extras.
pub fn current(agent_dir: Option<&Path>) -> Arc<Sensitive> {
    let (h, x) = (home(), extra());
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((ch, ca, cx, set)) = cache.as_ref() {
        if *ch == h && ca.as_deref() == agent_dir && Arc::ptr_eq(cx, &x) {
            return set.clone();
        }
    }
    let set = Arc::new(Sensitive::new(h.as_deref(), agent_dir, &x));
    *cache = Some((h, agent_dir.map(Path::to_path_buf), x, set.clone()));
    set
}

#[cfg(test)]
mod tests;
