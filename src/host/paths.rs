//! Path containment of the host tools (docs/spec/host-tools.md "Paths"). Two legal roots: the workspace bound when the
//! session starts, and the session scratch directory `<agentDir>/pi-codex-toolkit/scratch/<sessionId>/` (absolute
//! paths only). A path is inside a root only if it is inside it twice: lexically (after `.`/`..` folding) and
//! canonically (every existing ancestor resolved through its symlinks, the way the OS walks it). Anything else is an
//! *external path request*, which only a permission decision can allow; `revalidate` resolves again right before an
//! approved call runs, so a symlink swapped after approval cannot redirect it.

use super::error::{HostError, PATH_OUTSIDE_WORKSPACE, SENSITIVE_PATH, TOOL_FAILED};
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Which legal root a path belongs to (the result field `root`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Workspace,
    Scratch,
    External,
}

impl Root {
    pub fn as_str(self) -> &'static str {
        match self {
            Root::Workspace => "workspace",
            Root::Scratch => "scratch",
            Root::External => "external",
        }
    }
}

/// Why a path is external; the permission card and the audit log name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum External {
    /// A relative path whose `..` segments leave the workspace.
    DotDotEscape,
    /// Lexically inside a root, but a symlink component resolves outside it.
    SymlinkEscape,
    /// An absolute path outside both roots.
    Absolute,
}

impl External {
    pub fn as_str(self) -> &'static str {
        match self {
            External::DotDotEscape => "dotdot-escape",
            External::SymlinkEscape => "symlink-escape",
            External::Absolute => "absolute-outside",
        }
    }
}

/// A classified path. `canonical` is what the tool touches; `shown` is what results print: workspace-relative with
/// `/` separators for the workspace (`.` for the root itself), the absolute canonical path otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub raw: String,
    pub root: Root,
    pub external: Option<External>,
    /// Lexically normalised absolute path (what the model named).
    pub lexical: PathBuf,
    /// The OS's view: existing components resolved through symlinks, the missing tail appended.
    pub canonical: PathBuf,
    pub shown: String,
}

/// The session's roots. Built once per session (the workspace never follows later cwd changes).
#[derive(Debug, Clone)]
pub struct Roots {
    workspace_given: PathBuf,
    workspace_canonical: PathBuf,
    scratch_given: PathBuf,
    scratch_canonical: PathBuf,
    /// The agent dir, whose credential files are sensitive paths (src/host/sensitive.rs).
    agent_dir: PathBuf,
}

/// Folds `.` and `..` without touching the filesystem; `..` at the root stays at the root.
pub fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves `path` the way the OS would walk it: each existing component through its symlinks (so `link/..` goes to
/// the link target's parent), the first missing component and everything after it appended lexically.
///
/// Cost (it runs on Node's main thread for every tool call's target, docs/host.md "Paths"): one `lstat` per
/// existing component, one `realpath` per symlink met and one for the existing prefix at the end, at most
/// [`MAX_LINK_DEPTH`] dangling-link hops; no file content is read and no directory listed. The answer is the one a
/// `realpath` of every prefix would give (`realpath` of a canonical directory joined with a name that is not a
/// symlink changes only that name's case, on a case-insensitive volume, which the final `realpath` applies too).
pub fn canonical_walk(path: &Path) -> io::Result<PathBuf> {
    walk(path, 0)
}

/// Dangling-link chains longer than this are a loop (the kernel's own limit is 40).
const MAX_LINK_DEPTH: usize = 40;

fn walk(path: &Path, depth: usize) -> io::Result<PathBuf> {
    if depth > MAX_LINK_DEPTH {
        return Err(io::Error::other("too many levels of symbolic links"));
    }
    let mut cur = PathBuf::new();
    // Whether `cur` is already what `realpath` answers for it (false once plain names were joined onto it).
    let mut exact = true;
    let mut missing = false;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => cur.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `cur` has no symlink past its last `realpath`, so its lexical parent is the physical one.
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                if missing {
                    cur = next;
                    continue;
                }
                match fs::symlink_metadata(&next) {
                    Ok(m) if !m.file_type().is_symlink() => {
                        cur = next;
                        exact = false;
                    }
                    Ok(_) => match fs::canonicalize(&next) {
                        Ok(c) => {
                            cur = c;
                            exact = true;
                        }
                        // A dangling symlink: where it points is not known to be inside anything.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            let target = fs::read_link(&next)?;
                            cur = walk(&cur.join(target), depth + 1)?;
                            missing = true;
                        }
                        Err(e) => return Err(e),
                    },
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        if !exact {
                            cur = fs::canonicalize(&cur)?;
                        }
                        cur = cur.join(name);
                        missing = true;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
    }
    if !missing && !exact {
        cur = fs::canonicalize(&cur)?;
    }
    Ok(cur)
}

/// `raw` as an absolute path (relative to the workspace as given).
fn raw_abs(workspace: &Path, raw: &str) -> PathBuf {
    let p = Path::new(raw);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    }
}

/// Shows `rel` (relative to a root) with `/` separators; the root itself is `.`.
fn slash_rel(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

impl Roots {
    /// Binds the workspace (must be an existing absolute directory) and the scratch path of `session_id` under
    /// `agent_dir` (not created here: scratch is created lazily by the first write there, `ensure_scratch`).
    pub fn new(workspace: &Path, agent_dir: &Path, session_id: &str) -> Result<Roots, HostError> {
        if !workspace.is_absolute() || !agent_dir.is_absolute() {
            return Err(HostError::invalid(
                "the workspace root and the agent dir must be absolute paths; pass ctx.cwd and the agent dir as given.",
            ));
        }
        // The one session-id rule (src/session_id.rs): the id names the scratch directory.
        crate::session_id::SessionId::parse(session_id).map_err(|e| HostError::invalid(e.to_string()))?;
        let workspace = lexical_normalize(workspace);
        let workspace_canonical =
            fs::canonicalize(&workspace).map_err(|e| HostError::io(&workspace.display().to_string(), &e))?;
        if !workspace_canonical.is_dir() {
            return Err(HostError::invalid(format!(
                "the workspace root {} is not a directory; start the session in a directory.",
                workspace.display()
            )));
        }
        let scratch = lexical_normalize(&agent_dir.join("pi-codex-toolkit").join("scratch").join(session_id));
        // A scratch root that is not a real folder of this user (a planted symlink) is never followed: its lexical
        // path stays the root, so nothing behind the link counts as scratch, and creating it refuses
        // (src/host/scratch.rs).
        let scratch_canonical = match super::scratch::check_root(&scratch) {
            Ok(()) => canonical_walk(&scratch).map_err(|e| HostError::io(&scratch.display().to_string(), &e))?,
            Err(_) => scratch.clone(),
        };
        Ok(Roots {
            workspace_given: workspace,
            workspace_canonical,
            scratch_given: scratch,
            scratch_canonical,
            agent_dir: lexical_normalize(agent_dir),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace_canonical
    }

    pub fn scratch(&self) -> &Path {
        &self.scratch_canonical
    }

    /// The sensitive paths in force for this session (the seed, the agent dir's credential files, the configured
    /// extras): no host tool reads, lists or writes under them (src/host/sensitive.rs).
    pub fn sensitive(&self) -> std::sync::Arc<super::sensitive::Sensitive> {
        super::sensitive::current(Some(&self.agent_dir))
    }

    /// Creates the scratch directory (mode 0700, verified and live-locked: src/host/scratch.rs) on first use and
    /// returns it.
    pub fn ensure_scratch(&self) -> Result<PathBuf, HostError> {
        super::scratch::create_root(&self.scratch_given)
    }

    /// Lexical containment: inside the root as given or as canonicalised (a workspace reached through its own
    /// symlinked alias, such as /tmp vs /private/tmp, is still the workspace).
    fn lexically_in(path: &Path, root: &Path, root_canonical: &Path) -> bool {
        path.starts_with(root) || path.starts_with(root_canonical)
    }

    /// Classifies `raw`. Relative paths always mean the workspace; the scratch root is reachable by absolute path
    /// only. Errors for malformed input (empty, NUL), an I/O failure other than "missing", and a sensitive path
    /// (lexically or through a symlink: SENSITIVE_PATH, in every permission mode).
    pub fn resolve(&self, raw: &str) -> Result<Resolved, HostError> {
        if raw.is_empty() {
            return Err(HostError::invalid(
                "path is empty; pass a workspace-relative or absolute path.",
            ));
        }
        if raw.contains('\0') {
            return Err(HostError::invalid(
                "path contains a NUL byte; pass the path without it.",
            ));
        }
        // A name holding a newline, ESC or C1 code is never created (Write, Edit's MV): shown anywhere later, it could
        // draw a forged line on the user's terminal (docs/permissions.md "What reaches the terminal"). An existing
        // file with such a name stays reachable; every display escapes it.
        if let Some(c) = raw.chars().find(|c| crate::display::is_unsafe(*c)) {
            if fs::symlink_metadata(raw_abs(&self.workspace_given, raw)).is_err() {
                return Err(HostError::invalid(format!(
                    "path contains the control character U+{:04X} and names nothing that exists; the host tools never \
                     create a name with a control character. Pass the path without it.",
                    c as u32
                )));
            }
        }
        let given = Path::new(raw);
        let relative = !given.is_absolute();
        let joined = if relative {
            self.workspace_given.join(given)
        } else {
            given.to_path_buf()
        };
        let lexical = lexical_normalize(&joined);
        let canonical = canonical_walk(&joined).map_err(|e| {
            HostError::new(
                TOOL_FAILED,
                format!("could not resolve '{raw}': {e}. Check the path, then call again."),
            )
        })?;
        let sensitive = self.sensitive();
        if let Some(e) = sensitive.covering(&lexical).or_else(|| sensitive.covering(&canonical)) {
            return Err(sensitive_error(raw, e));
        }
        let in_ws_lex = Self::lexically_in(&lexical, &self.workspace_given, &self.workspace_canonical);
        let in_scratch_lex = !relative && Self::lexically_in(&lexical, &self.scratch_given, &self.scratch_canonical);
        let (root, external) = if in_ws_lex {
            if canonical.starts_with(&self.workspace_canonical) {
                (Root::Workspace, None)
            } else {
                (Root::External, Some(External::SymlinkEscape))
            }
        } else if in_scratch_lex {
            if canonical.starts_with(&self.scratch_canonical) {
                (Root::Scratch, None)
            } else {
                (Root::External, Some(External::SymlinkEscape))
            }
        } else if relative {
            (Root::External, Some(External::DotDotEscape))
        } else {
            (Root::External, Some(External::Absolute))
        };
        let shown = match root {
            Root::Workspace => {
                let rel = lexical
                    .strip_prefix(&self.workspace_given)
                    .or_else(|_| lexical.strip_prefix(&self.workspace_canonical))
                    .unwrap_or(Path::new(""));
                slash_rel(rel)
            }
            _ => canonical.display().to_string(),
        };
        Ok(Resolved {
            raw: raw.to_string(),
            root,
            external,
            lexical,
            canonical,
            shown,
        })
    }

    /// `resolve`, refusing external paths: for callers without an external-path approval.
    pub fn resolve_inside(&self, raw: &str) -> Result<Resolved, HostError> {
        let r = self.resolve(raw)?;
        match r.external {
            None => Ok(r),
            Some(why) => Err(outside_error(&r, why)),
        }
    }

    /// Resolves an approved path again right before the call runs (docs/spec/host-tools.md "Paths"): the target must
    /// be the one that was approved. A symlink swapped in since then refuses the call instead of following it.
    pub fn revalidate(&self, approved: &Resolved) -> Result<Resolved, HostError> {
        let now = self.resolve(&approved.raw)?;
        if now.canonical != approved.canonical || now.root != approved.root {
            return Err(HostError::new(
                PATH_OUTSIDE_WORKSPACE,
                format!(
                    "'{}' now resolves to {} ({}) instead of the approved {} ({}): a path component changed since \
                     approval. Nothing was done; call the tool again so the new target is checked.",
                    approved.raw,
                    now.canonical.display(),
                    now.root.as_str(),
                    approved.canonical.display(),
                    approved.root.as_str()
                ),
            ));
        }
        Ok(now)
    }

    /// Resolves `raw` for a call about to run. Inside the session roots it runs as is. An external path runs only if
    /// `approved` is the canonical path the user approved (from an earlier `resolve`), compared against a fresh
    /// resolution so a symlink swapped since the approval refuses the call.
    pub fn resolve_for_call(&self, raw: &str, approved: Option<&Path>) -> Result<Resolved, HostError> {
        let r = self.resolve(raw)?;
        let Some(why) = r.external else { return Ok(r) };
        match approved {
            None => Err(outside_error(&r, why)),
            Some(a) if a == r.canonical => Ok(r),
            Some(a) => Err(HostError::new(
                PATH_OUTSIDE_WORKSPACE,
                format!(
                    "'{raw}' now resolves to {} instead of the approved {}: a path component changed since approval. \
                     Nothing was done; call the tool again so the new target is checked.",
                    r.canonical.display(),
                    a.display()
                ),
            )),
        }
    }

    /// Shows any canonical path the way results print it (used for files found by walking a resolved root).
    pub fn show(&self, root: Root, canonical: &Path) -> String {
        match root {
            Root::Workspace => match canonical.strip_prefix(&self.workspace_canonical) {
                Ok(rel) => slash_rel(rel),
                Err(_) => canonical.display().to_string(),
            },
            _ => canonical.display().to_string(),
        }
    }
}

/// The SENSITIVE_PATH refusal of `raw`, which lies under the sensitive path `e`.
pub fn sensitive_error(raw: &str, e: &super::sensitive::Entry) -> HostError {
    HostError::new(
        SENSITIVE_PATH,
        format!(
            "'{raw}' is under {}, a sensitive path (credentials and keys) that the toolkit's tools never read, list or \
             write, in any permission mode. Nothing was done. Do not look for another way to it; if the task needs \
             it, tell the user what to do there themselves.",
            e.shown
        ),
    )
}

/// The PATH_OUTSIDE_WORKSPACE failure for an external path that has no approval.
pub fn outside_error(r: &Resolved, why: External) -> HostError {
    let reason = match why {
        External::DotDotEscape => "its `..` segments leave the workspace",
        External::SymlinkEscape => "a symlink in it resolves outside the session roots",
        External::Absolute => "it is outside the workspace and the session scratch directory",
    };
    HostError::new(
        PATH_OUTSIDE_WORKSPACE,
        format!(
            "'{}' is an external path ({reason}; it resolves to {}). Use a path inside the workspace, or ask the user \
             to approve this external path.",
            r.raw,
            r.canonical.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use tempfile::TempDir;

    fn setup() -> (TempDir, Roots) {
        let t = TempDir::new().unwrap();
        fs::create_dir_all(t.path().join("ws/src")).unwrap();
        fs::create_dir_all(t.path().join("agent")).unwrap();
        fs::create_dir_all(t.path().join("outside")).unwrap();
        fs::write(t.path().join("ws/src/a.txt"), "a\n").unwrap();
        fs::write(t.path().join("outside/secret.txt"), "s\n").unwrap();
        let roots = Roots::new(&t.path().join("ws"), &t.path().join("agent"), "s1").unwrap();
        (t, roots)
    }

    #[test]
    fn a_name_with_a_control_character_is_never_created_but_an_existing_one_resolves() {
        let (t, roots) = setup();
        for raw in ["new\nAllow Read?.txt", "src/x\u{1b}]0;t\u{7}.txt", "a\u{9b}2J"] {
            let e = roots.resolve(raw).unwrap_err();
            assert_eq!(e.code, super::super::error::INVALID_ARGUMENT, "{raw:?}");
            assert!(e.message.contains("control character U+"), "{}", e.message);
        }
        fs::write(t.path().join("ws/odd\nname.txt"), "x").unwrap();
        assert_eq!(roots.resolve("odd\nname.txt").unwrap().root, Root::Workspace);
    }

    #[test]
    fn relative_paths_resolve_inside_the_workspace() {
        let (_t, roots) = setup();
        let r = roots.resolve("src/./a.txt").unwrap();
        assert_eq!(r.root, Root::Workspace);
        assert_eq!(r.shown, "src/a.txt");
        assert_eq!(r.canonical, roots.workspace().join("src/a.txt"));
        // A missing file inside the workspace is still the workspace (Write may create it).
        let m = roots.resolve("src/new/b.txt").unwrap();
        assert_eq!((m.root, m.shown.as_str()), (Root::Workspace, "src/new/b.txt"));
        assert_eq!(roots.resolve(".").unwrap().shown, ".");
    }

    #[test]
    fn dotdot_inside_stays_dotdot_outside_is_external() {
        let (_t, roots) = setup();
        let r = roots.resolve("src/../src/a.txt").unwrap();
        assert_eq!((r.root, r.shown.as_str()), (Root::Workspace, "src/a.txt"));
        let e = roots.resolve("../outside/secret.txt").unwrap();
        assert_eq!((e.root, e.external), (Root::External, Some(External::DotDotEscape)));
        assert!(e.shown.ends_with("outside/secret.txt") && e.shown.starts_with('/'));
        let err = roots.resolve_inside("../outside/secret.txt").unwrap_err();
        assert_eq!(err.code, PATH_OUTSIDE_WORKSPACE);
        assert!(err.message.contains("`..`"), "{}", err.message);
        // A prefix sibling (ws2 vs ws) is not inside ws.
        fs::create_dir_all(roots.workspace().parent().unwrap().join("ws2")).unwrap();
        let s = roots.resolve("../ws2/x").unwrap();
        assert_eq!(s.root, Root::External);
    }

    #[test]
    fn absolute_paths_are_classified_by_root() {
        let (t, roots) = setup();
        let inside = roots
            .resolve(&t.path().join("ws/src/a.txt").display().to_string())
            .unwrap();
        assert_eq!((inside.root, inside.shown.as_str()), (Root::Workspace, "src/a.txt"));
        let out = roots
            .resolve(&t.path().join("outside/secret.txt").display().to_string())
            .unwrap();
        assert_eq!((out.root, out.external), (Root::External, Some(External::Absolute)));
        let sc = roots
            .resolve(
                &t.path()
                    .join("agent/pi-codex-toolkit/scratch/s1/notes.md")
                    .display()
                    .to_string(),
            )
            .unwrap();
        assert_eq!(sc.root, Root::Scratch);
        assert!(sc.shown.ends_with("scratch/s1/notes.md"));
        // Another session's scratch is external.
        let other = roots
            .resolve(
                &t.path()
                    .join("agent/pi-codex-toolkit/scratch/s2/x")
                    .display()
                    .to_string(),
            )
            .unwrap();
        assert_eq!(other.root, Root::External);
    }

    #[test]
    fn scratch_is_absolute_only() {
        let (_t, roots) = setup();
        // ws/../agent/... is the scratch directory lexically, but relative paths always mean the workspace.
        let r = roots.resolve("../agent/pi-codex-toolkit/scratch/s1/x").unwrap();
        assert_eq!((r.root, r.external), (Root::External, Some(External::DotDotEscape)));
    }

    #[test]
    fn symlink_components_escaping_are_external() {
        let (t, roots) = setup();
        symlink(t.path().join("outside"), t.path().join("ws/link")).unwrap();
        let r = roots.resolve("link/secret.txt").unwrap();
        assert_eq!((r.root, r.external), (Root::External, Some(External::SymlinkEscape)));
        assert_eq!(
            r.canonical,
            fs::canonicalize(t.path().join("outside/secret.txt")).unwrap()
        );
        // A missing file under the escaping link is still external (a Write would land outside).
        let m = roots.resolve("link/new.txt").unwrap();
        assert_eq!(m.external, Some(External::SymlinkEscape));
        // `link/..` is the OS's parent of the target, not the workspace: resolved the way the kernel walks it.
        let up = roots.resolve("link/../outside/secret.txt").unwrap();
        assert_eq!(up.root, Root::External);
        assert!(roots
            .resolve_inside("link/secret.txt")
            .unwrap_err()
            .message
            .contains("symlink"));
    }

    #[test]
    fn symlinks_within_the_workspace_stay_inside() {
        let (t, roots) = setup();
        symlink(t.path().join("ws/src"), t.path().join("ws/alias")).unwrap();
        let r = roots.resolve("alias/a.txt").unwrap();
        assert_eq!((r.root, r.shown.as_str()), (Root::Workspace, "alias/a.txt"));
        assert_eq!(r.canonical, roots.workspace().join("src/a.txt"));
        // A dangling link pointing outside is external, one pointing inside is not.
        symlink("/nonexistent-pct-target/x", t.path().join("ws/dangling")).unwrap();
        assert_eq!(
            roots.resolve("dangling").unwrap().external,
            Some(External::SymlinkEscape)
        );
        symlink(t.path().join("ws/src/missing.txt"), t.path().join("ws/dangling_in")).unwrap();
        assert_eq!(roots.resolve("dangling_in").unwrap().root, Root::Workspace);
    }

    #[test]
    fn scratch_symlink_escape_is_external() {
        let (t, roots) = setup();
        let scratch = roots.ensure_scratch().unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&scratch).unwrap().permissions().mode() & 0o777, 0o700);
        symlink(t.path().join("outside"), scratch.join("out")).unwrap();
        let r = roots
            .resolve(&scratch.join("out/secret.txt").display().to_string())
            .unwrap();
        assert_eq!((r.root, r.external), (Root::External, Some(External::SymlinkEscape)));
    }

    #[test]
    fn revalidate_refuses_a_symlink_swapped_after_approval() {
        let (t, roots) = setup();
        fs::create_dir_all(t.path().join("ws/dir")).unwrap();
        fs::write(t.path().join("ws/dir/f.txt"), "x").unwrap();
        let approved = roots.resolve_inside("dir/f.txt").unwrap();
        assert_eq!(roots.revalidate(&approved).unwrap(), approved);
        fs::rename(t.path().join("ws/dir"), t.path().join("ws/dir.old")).unwrap();
        symlink(t.path().join("outside"), t.path().join("ws/dir")).unwrap();
        fs::write(t.path().join("outside/f.txt"), "y").unwrap();
        let err = roots.revalidate(&approved).unwrap_err();
        assert_eq!(err.code, PATH_OUTSIDE_WORKSPACE);
        assert!(err.message.contains("changed since approval"), "{}", err.message);
    }

    #[test]
    fn external_calls_run_only_with_the_approved_canonical_path() {
        let (t, roots) = setup();
        let raw = "../outside/secret.txt";
        assert_eq!(
            roots.resolve_for_call(raw, None).unwrap_err().code,
            PATH_OUTSIDE_WORKSPACE
        );
        let approved = roots.resolve(raw).unwrap().canonical;
        assert_eq!(
            roots.resolve_for_call(raw, Some(&approved)).unwrap().root,
            Root::External
        );
        // Swap the approved directory for a symlink elsewhere: the fresh resolution differs and is refused.
        fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        fs::write(t.path().join("elsewhere/secret.txt"), "e").unwrap();
        fs::rename(t.path().join("outside"), t.path().join("outside.old")).unwrap();
        symlink(t.path().join("elsewhere"), t.path().join("outside")).unwrap();
        let e = roots.resolve_for_call(raw, Some(&approved)).unwrap_err();
        assert!(e.message.contains("changed since approval"), "{}", e.message);
        // Inside paths ignore the approval argument.
        assert_eq!(roots.resolve_for_call("src/a.txt", None).unwrap().root, Root::Workspace);
    }

    #[test]
    fn bad_inputs_are_invalid_arguments() {
        let (t, roots) = setup();
        assert_eq!(roots.resolve("").unwrap_err().code, "INVALID_ARGUMENT");
        assert_eq!(roots.resolve("a\0b").unwrap_err().code, "INVALID_ARGUMENT");
        for bad in ["", "..", "a/b", "."] {
            assert_eq!(
                Roots::new(&t.path().join("ws"), &t.path().join("agent"), bad)
                    .unwrap_err()
                    .code,
                "INVALID_ARGUMENT"
            );
        }
        assert_eq!(
            Roots::new(Path::new("ws"), &t.path().join("agent"), "s")
                .unwrap_err()
                .code,
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            Roots::new(&t.path().join("nope"), &t.path().join("agent"), "s")
                .unwrap_err()
                .code,
            "NOT_FOUND"
        );
    }

    #[test]
    fn lexical_normalize_folds_dots() {
        assert_eq!(lexical_normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(lexical_normalize(Path::new("/../a")), PathBuf::from("/a"));
    }
}
