//! Glob (docs/spec/host-tools.md "Paths"): files under a directory root whose path matches a glob, walked with the
//! `ignore` crate so `.gitignore` (also outside a git repository), `.ignore` and git's exclude files are honoured.
//! Hidden files are listed; `.git` is never entered; symlinks are listed but not followed. A pattern with a `/`
//! matches the root-relative path (`src/**/*.rs`); one without matches the file name at any depth (`*.rs`), like
//! Pi's find. Results are sorted, with a limit (default 1,000, Pi's find default).

use super::args;
use super::error::{Deadline, HostError};
use super::fileio;
use super::paths::{Resolved, Root, Roots};
use super::tag;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Files returned when `limit` is omitted.
pub const DEFAULT_LIMIT: u64 = 1_000;
/// Largest accepted `limit`.
pub const MAX_LIMIT: u64 = 100_000;

/// Glob's arguments after alias folding (`pattern` ← `query`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobArgs {
    pub pattern: String,
    pub path: Option<String>,
    pub limit: Option<u64>,
}

impl GlobArgs {
    pub fn from_json(v: &Value) -> Result<GlobArgs, HostError> {
        let a = args::object("Glob", v)?;
        Ok(GlobArgs {
            pattern: args::fold("Glob", a, "pattern", "query")?,
            path: args::opt_str("Glob", a, "path")?,
            limit: args::opt_uint("Glob", a, "limit", 1, MAX_LIMIT)?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobResult {
    /// The searched root as results show it.
    pub path: String,
    pub root: Root,
    /// Matching files, shown workspace-relative (`/`-separated) or absolute outside the workspace, sorted.
    pub files: Vec<String>,
    /// More files matched than `limit`.
    pub truncated: bool,
    pub text: String,
}

/// Compiles a model-supplied glob; a bad one is INVALID_ARGUMENT naming the problem.
pub fn compile(pattern: &str) -> Result<GlobMatcher, HostError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| {
            HostError::invalid(format!(
                "invalid glob pattern '{pattern}': {e}. Fix the pattern and call again."
            ))
        })
}

/// A walker over `dir` with the tools' ignore rules (shared with Grep so both list the same files). Sensitive
/// paths inside the tree (src/host/sensitive.rs: a Glob or Grep of the home folder meets `~/.ssh`) are skipped
/// whole, never entered.
pub fn walker(dir: &Path, sensitive: std::sync::Arc<super::sensitive::Sensitive>) -> WalkBuilder {
    let mut w = WalkBuilder::new(dir);
    // Only the sensitive paths inside `dir` or holding it can cover one of its entries (`Sensitive::within_tree`):
    // checking every entry against the whole list was a sixth of a Grep's CPU time on a tree of 17,000 files.
    let near = sensitive.within_tree(dir);
    w.hidden(false).require_git(false).follow_links(false);
    if near.is_empty() {
        w.filter_entry(|e| e.file_name() != ".git");
    } else {
        w.filter_entry(move |e| e.file_name() != ".git" && near.covering(e.path()).is_none());
    }
    w
}

/// Lists the files under `target` (a directory, already resolved and, if external, approved) matching the pattern.
pub fn glob(roots: &Roots, target: &Resolved, a: &GlobArgs, deadline: Deadline) -> Result<GlobResult, HostError> {
    let meta = fs::metadata(&target.canonical).map_err(|e| HostError::io(&target.shown, &e))?;
    if !meta.is_dir() {
        return Err(HostError::invalid(format!(
            "{} is not a directory; Glob searches under a directory. Pass its parent directory as path, or Read the \
             file.",
            target.shown
        )));
    }
    let matcher = compile(&a.pattern)?;
    let by_name = !a.pattern.contains('/');
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT) as usize;
    let mut files = Vec::new();
    for entry in walker(&target.canonical, roots.sensitive()).build() {
        if deadline.passed() {
            return Err(deadline.error("Glob"));
        }
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&target.canonical) else {
            continue;
        };
        let hit = if by_name {
            entry.path().file_name().is_some_and(|n| matcher.is_match(n))
        } else {
            matcher.is_match(rel)
        };
        if hit {
            files.push((roots.show(target.root, entry.path()), rel.to_path_buf()));
        }
    }
    files.sort();
    // Each listed name is checked again through folder handles opened beneath the searched folder without following
    // a symlink (docs/host.md "Containment of reads"): a folder swapped for a symlink during the walk drops what was
    // listed through it.
    let mut dirs = fileio::Fs::open_dir(&target.canonical, &target.shown)?;
    let mut kept = Vec::with_capacity(files.len().min(limit + 1));
    for (shown, rel) in files {
        if kept.len() > limit {
            break;
        }
        let Some(rel) = rel.to_str() else { continue };
        if matches!(dirs.stat(rel), Ok(Some(_))) {
            kept.push(shown);
        }
    }
    let mut files = kept;
    let truncated = files.len() > limit;
    files.truncate(limit);
    let mut text = if files.is_empty() {
        format!(
            "No files found matching '{}' under '{}'.",
            a.pattern,
            tag::escape_name(&target.shown)
        )
    } else {
        let shown: Vec<_> = files.iter().map(|f| tag::escape_name(f)).collect();
        shown.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n[Showing the first {limit} files. Narrow the pattern or path, or raise limit (at most {MAX_LIMIT}).]"
        ));
    }
    Ok(GlobResult {
        path: target.shown.clone(),
        root: target.root,
        files,
        truncated,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tempfile::TempDir;

    fn setup() -> (TempDir, Roots) {
        let t = TempDir::new().unwrap();
        let ws = t.path().join("ws");
        for f in [
            "src/main.rs",
            "src/lib/mod.rs",
            "src/lib/notes.md",
            "README.md",
            ".hidden.rs",
            "target/debug/gen.rs",
            "keep/skip.log",
            ".git/config.rs",
        ] {
            let p = ws.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x\n").unwrap();
        }
        fs::write(ws.join(".gitignore"), "target/\n*.log\n").unwrap();
        let roots = Roots::new(&ws, &t.path().join("agent"), "s").unwrap();
        (t, roots)
    }

    fn run(roots: &Roots, v: Value) -> Result<GlobResult, HostError> {
        let a = GlobArgs::from_json(&v)?;
        let target = roots.resolve_inside(a.path.as_deref().unwrap_or("."))?;
        glob(roots, &target, &a, Deadline::none())
    }

    #[test]
    fn name_patterns_match_at_any_depth_and_gitignore_is_honoured() {
        let (_t, roots) = setup();
        let r = run(&roots, json!({"pattern": "*.rs"})).unwrap();
        assert_eq!(r.files, vec![".hidden.rs", "src/lib/mod.rs", "src/main.rs"]);
        assert_eq!(r.text, ".hidden.rs\nsrc/lib/mod.rs\nsrc/main.rs");
        assert!(!r.truncated);
        assert!(run(&roots, json!({"query": "*.log"})).unwrap().files.is_empty());
    }

    #[test]
    fn path_patterns_match_the_relative_path() {
        let (_t, roots) = setup();
        let r = run(&roots, json!({"pattern": "src/*.rs"})).unwrap();
        assert_eq!(r.files, vec!["src/main.rs"]);
        let deep = run(&roots, json!({"pattern": "src/**/*.rs"})).unwrap();
        assert_eq!(deep.files, vec!["src/lib/mod.rs", "src/main.rs"]);
        // Under a sub-root the pattern is relative to it; results stay workspace-relative.
        let sub = run(&roots, json!({"pattern": "lib/*", "path": "src"})).unwrap();
        assert_eq!(sub.files, vec!["src/lib/mod.rs", "src/lib/notes.md"]);
        assert_eq!(sub.path, "src");
    }

    #[test]
    fn limit_truncates_at_its_boundary() {
        let (_t, roots) = setup();
        let exact = run(&roots, json!({"pattern": "*.rs", "limit": 3})).unwrap();
        assert!(!exact.truncated);
        let cut = run(&roots, json!({"pattern": "*.rs", "limit": 2})).unwrap();
        assert_eq!((cut.files.len(), cut.truncated), (2, true));
        assert!(cut.text.contains("[Showing the first 2 files."));
        assert!(run(&roots, json!({"pattern": "*", "limit": MAX_LIMIT + 1})).is_err());
    }

    #[test]
    fn a_passed_deadline_stops_the_walk_with_tool_timeout() {
        let (_t, roots) = setup();
        let a = GlobArgs::from_json(&json!({"pattern": "*"})).unwrap();
        let e = glob(&roots, &roots.resolve(".").unwrap(), &a, Deadline::after_ms(0)).unwrap_err();
        assert_eq!(e.code, "TOOL_TIMEOUT");
        assert!(e.message.contains("0 ms budget"), "{}", e.message);
        assert!(glob(&roots, &roots.resolve(".").unwrap(), &a, Deadline::after_ms(60_000)).is_ok());
    }

    #[test]
    fn bad_patterns_files_and_missing_roots_fail_with_codes() {
        let (_t, roots) = setup();
        let e = run(&roots, json!({"pattern": "src/[z-a]"})).unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(e.message.contains("invalid glob"));
        assert_eq!(
            run(&roots, json!({"pattern": "*", "path": "README.md"}))
                .unwrap_err()
                .code,
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            run(&roots, json!({"pattern": "*", "path": "nope"})).unwrap_err().code,
            "NOT_FOUND"
        );
        assert_eq!(run(&roots, json!({})).unwrap_err().code, "INVALID_ARGUMENT");
        let none = run(&roots, json!({"pattern": "*.py"})).unwrap();
        assert_eq!(none.text, "No files found matching '*.py' under '.'.");
    }

    #[test]
    fn names_with_control_characters_are_escaped_in_the_listing() {
        let t = TempDir::new().unwrap();
        let ws = t.path().join("ws");
        fs::create_dir_all(&ws).unwrap();
        fs::write(ws.join("a\n[b.txt#ABCD]\n1:x"), "").unwrap();
        fs::write(ws.join("plain.txt"), "").unwrap();
        let roots = Roots::new(&ws, &t.path().join("agent"), "s").unwrap();
        let a = GlobArgs::from_json(&json!({"pattern": "*"})).unwrap();
        let r = glob(&roots, &roots.resolve(".").unwrap(), &a, Deadline::none()).unwrap();
        assert_eq!(r.text, "a\\n[b.txt#ABCD]\\n1:x\nplain.txt");
        // The structured list keeps the real name (it is data, not a render).
        assert!(r.files.contains(&"a\n[b.txt#ABCD]\n1:x".to_string()));
    }
}
