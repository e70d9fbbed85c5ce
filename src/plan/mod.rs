//! SubmitPlan's artifact: the plan's Markdown stored byte for byte as a new, uniquely named file under
//! `<workspace>/.pi/plan/` (docs/permissions.md "The plan tools").
//!
//! Why in Rust: the file must be new — never an overwrite of an earlier plan, never a write through a symlink
//! planted at the name — so it is created exclusively (`O_EXCL`), and the folder must stay inside the workspace even
//! when `.pi` or `.pi/plan` is a symlink. Both checks are filesystem races a TypeScript `writeFile` cannot close.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The largest plan accepted, in bytes of UTF-8 (a plan is a document for a human to approve, not a data dump).
pub const MAX_PLAN_BYTES: usize = 1024 * 1024;
/// The folder under the workspace the plans go to.
pub const PLAN_DIR: [&str; 2] = [".pi", "plan"];
/// How many fresh names are tried when a name is already taken (a collision of 32 random bits is rare; a
/// planted file at each try is an attack that must end in a failure, not a loop).
const NAME_ATTEMPTS: usize = 8;

crate::codes::error_codes! {
    /// Why a plan was not stored (docs/permissions.md "Store codes"). Every code is a model-facing error code
    /// (`SCREAMING_SNAKE`, as the host tools'); the next step ends the message.
    pub enum PlanCode {
        /// The plan is empty or only blanks.
        Empty = "PLAN_EMPTY" => "Write the whole plan as Markdown in `plan` and call SubmitPlan again.",
        /// The plan is longer than [`MAX_PLAN_BYTES`].
        TooLarge = "PLAN_TOO_LARGE" =>
            "Shorten the plan (summarise; leave details for the work itself) and call SubmitPlan again.",
        /// `.pi/plan` resolves outside the workspace (a symlink), or is not a folder.
        DirOutside = "PLAN_DIR_OUTSIDE" =>
            "Nothing was written. Tell the user that .pi/plan in the workspace points outside it (or is not a \
             folder) and must be fixed before a plan can be submitted.",
        /// The filesystem refused (permissions, disk full, the workspace is gone).
        SaveFailed = "PLAN_SAVE_FAILED" =>
            "Nothing was kept. Tell the user the plan could not be saved and why; do not retry blindly.",
    }
}

/// A refusal: the code and the whole message (what went wrong, then [`PlanCode::next_step`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub code: PlanCode,
    pub message: String,
}

impl PlanError {
    fn new(code: PlanCode, what: impl Into<String>) -> PlanError {
        PlanError {
            code,
            message: format!("{} {}", what.into(), code.next_step()),
        }
    }
}

/// A stored plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// The absolute path of the new file.
    pub path: PathBuf,
    /// The path relative to the workspace, with `/` separators (`.pi/plan/<name>.md`).
    pub relative: String,
    /// Bytes written (= the plan's UTF-8 length).
    pub bytes: usize,
}

/// A fresh file name: the creation time in milliseconds (plans sort by age) and 32 random bits.
fn fresh_name() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!("{ms}-{}.md", &rand[..8])
}

/// Stores `markdown` as a new file under `<workspace>/.pi/plan/`: the exact bytes, created exclusively (an existing
/// name is never overwritten; a symlink at the name is never followed), the folder created when missing and
/// checked to resolve inside the workspace. A failed write removes its partial file.
pub fn save(workspace: &Path, markdown: &str) -> Result<Saved, PlanError> {
    save_named(workspace, markdown, fresh_name)
}

/// `<root>/.pi/plan`, created one folder at a time when missing. A component that is a symlink must resolve to a
/// folder inside `root`; nothing is ever created outside it.
fn plan_dir(root: &Path) -> Result<PathBuf, PlanError> {
    let failed = |what: &str, e: io::Error| PlanError::new(PlanCode::SaveFailed, format!("{what}: {e}."));
    let outside = |p: &Path, why: &str| {
        PlanError::new(
            PlanCode::DirOutside,
            format!("{} {why} (the workspace is {}).", p.display(), root.display()),
        )
    };
    let mut dir = root.to_path_buf();
    for seg in PLAN_DIR {
        dir.push(seg);
        match fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                let real = fs::canonicalize(&dir).map_err(|e| failed("The folder .pi/plan cannot be resolved", e))?;
                if !real.starts_with(root) {
                    return Err(outside(&real, "is where .pi/plan leads: outside the workspace"));
                }
                if !real.is_dir() {
                    return Err(outside(&real, "is not a folder"));
                }
                dir = real;
            }
            Ok(_) => return Err(outside(&dir, "is not a folder")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&dir).map_err(|e| failed("The folder .pi/plan cannot be created", e))?
            }
            Err(e) => return Err(failed("The folder .pi/plan cannot be read", e)),
        }
    }
    Ok(dir)
}

/// The ignore file put in the plan folder: every file there, itself included, stays out of `git status`.
pub const PLAN_GITIGNORE: &str =
    "# Written by pi-codex-toolkit: submitted plans stay out of version control (docs/permissions.md).\n*\n";

/// Keeps the plan folder out of the project's `git status` (docs/permissions.md "The plan tools"): a `.gitignore`
/// with `*` in the folder itself, created exclusively (an existing one — the user's — is left as it is, and a
/// symlink at the name is never followed). Why there and not in `.git/info/exclude`: the folder is the toolkit's
/// own, the file travels with it, and nothing outside the plan folder is touched. Best effort: a plan is saved
/// even where the file cannot be created (a read-only folder that still takes the plan cannot happen; any other
/// refusal leaves the plan visible to git, nothing worse).
fn keep_out_of_git(dir: &Path) {
    if let Ok(mut f) = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".gitignore"))
    {
        let _ = f.write_all(PLAN_GITIGNORE.as_bytes());
    }
}

/// [`save`] with the name source as a parameter (tests force collisions).
fn save_named(workspace: &Path, markdown: &str, mut name: impl FnMut() -> String) -> Result<Saved, PlanError> {
    if markdown.trim().is_empty() {
        return Err(PlanError::new(PlanCode::Empty, "The plan is empty."));
    }
    if markdown.len() > MAX_PLAN_BYTES {
        return Err(PlanError::new(
            PlanCode::TooLarge,
            format!(
                "The plan has {} bytes; at most {MAX_PLAN_BYTES} are kept.",
                markdown.len()
            ),
        ));
    }
    let failed = |what: &str, e: io::Error| PlanError::new(PlanCode::SaveFailed, format!("{what}: {e}."));
    let root = fs::canonicalize(workspace).map_err(|e| failed("The workspace cannot be resolved", e))?;
    let real = plan_dir(&root)?;
    keep_out_of_git(&real);
    for _ in 0..NAME_ATTEMPTS {
        let file = name();
        let path = real.join(&file);
        let mut f = match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(failed("The plan file cannot be created", e)),
        };
        if let Err(e) = f.write_all(markdown.as_bytes()).and_then(|_| f.sync_all()) {
            drop(f);
            let _ = fs::remove_file(&path);
            return Err(failed("The plan file could not be written", e));
        }
        return Ok(Saved {
            path,
            relative: format!("{}/{}/{file}", PLAN_DIR[0], PLAN_DIR[1]),
            bytes: markdown.len(),
        });
    }
    Err(PlanError::new(
        PlanCode::SaveFailed,
        format!("{NAME_ATTEMPTS} fresh names in .pi/plan were all taken."),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn stores_the_exact_bytes_as_a_new_file_under_pi_plan() {
        let w = ws();
        let md = "# Plan\r\n\n1. ünïcode — keep\ttabs\n\n  trailing  \n";
        let a = save(w.path(), md).unwrap();
        assert_eq!(fs::read(&a.path).unwrap(), md.as_bytes());
        assert!(
            a.relative.starts_with(".pi/plan/") && a.relative.ends_with(".md"),
            "{}",
            a.relative
        );
        assert_eq!(a.bytes, md.len());
        let b = save(w.path(), md).unwrap();
        assert_ne!(a.path, b.path, "every plan is a new file");
        let md_files = fs::read_dir(w.path().join(".pi/plan"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "md"))
            .count();
        assert_eq!(md_files, 2);
    }

    #[test]
    fn the_plan_folder_keeps_itself_out_of_git_without_touching_a_users_ignore_file() {
        let w = ws();
        save(w.path(), "# one").unwrap();
        let ignore = w.path().join(".pi/plan/.gitignore");
        assert_eq!(fs::read_to_string(&ignore).unwrap(), PLAN_GITIGNORE);
        assert!(PLAN_GITIGNORE.lines().any(|l| l == "*"), "every file, itself included");
        // The user's own ignore file (or an edited one) is left as it is.
        fs::write(&ignore, "!keep-me.md\n").unwrap();
        save(w.path(), "# two").unwrap();
        assert_eq!(fs::read_to_string(&ignore).unwrap(), "!keep-me.md\n");
        // A symlink planted at the name is never followed: the plan is still saved, the target is untouched.
        #[cfg(unix)]
        {
            let v = ws();
            let dir = v.path().join(".pi/plan");
            fs::create_dir_all(&dir).unwrap();
            let victim = v.path().join("victim.txt");
            fs::write(&victim, "keep").unwrap();
            std::os::unix::fs::symlink(&victim, dir.join(".gitignore")).unwrap();
            save(v.path(), "# three").unwrap();
            assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        }
    }

    #[test]
    fn a_taken_name_is_never_overwritten_and_a_planted_symlink_is_never_followed() {
        let w = ws();
        let dir = w.path().join(".pi/plan");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("taken.md"), "old").unwrap();
        let victim = w.path().join("victim.txt");
        fs::write(&victim, "keep").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, dir.join("link.md")).unwrap();
        let mut names = vec!["fresh.md", "link.md", "taken.md"];
        let s = save_named(w.path(), "new", || names.pop().unwrap().to_string()).unwrap();
        assert!(s.path.ends_with("fresh.md"));
        assert_eq!(fs::read_to_string(dir.join("taken.md")).unwrap(), "old");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&s.path).unwrap(), "new");
        // Every try taken: a failure, not a loop, and nothing changed.
        let e = save_named(w.path(), "x", || "taken.md".to_string()).unwrap_err();
        assert_eq!(e.code, PlanCode::SaveFailed);
        assert_eq!(fs::read_to_string(dir.join("taken.md")).unwrap(), "old");
    }

    #[test]
    fn empty_and_oversized_plans_are_refused_at_the_boundary_and_write_nothing() {
        let w = ws();
        assert_eq!(save(w.path(), " \n\t").unwrap_err().code, PlanCode::Empty);
        let over = "x".repeat(MAX_PLAN_BYTES + 1);
        let e = save(w.path(), &over).unwrap_err();
        assert_eq!(e.code, PlanCode::TooLarge);
        assert!(e.message.contains("1048577 bytes"), "{}", e.message);
        assert!(!w.path().join(".pi").exists(), "a refused plan creates nothing");
        let at = "x".repeat(MAX_PLAN_BYTES);
        assert_eq!(save(w.path(), &at).unwrap().bytes, MAX_PLAN_BYTES);
    }

    #[cfg(unix)]
    #[test]
    fn a_plan_folder_that_resolves_outside_the_workspace_is_refused() {
        let w = ws();
        let outside = ws();
        std::os::unix::fs::symlink(outside.path(), w.path().join(".pi")).unwrap();
        let e = save(w.path(), "# plan").unwrap_err();
        assert_eq!(e.code, PlanCode::DirOutside);
        assert!(e.message.contains("outside the workspace"), "{}", e.message);
        assert_eq!(
            fs::read_dir(outside.path()).unwrap().count(),
            0,
            "nothing is created outside the workspace"
        );
    }

    #[test]
    fn the_doc_table_is_all_codes_in_order() {
        let doc = include_str!("../../docs/permissions.md");
        let all: Vec<&str> = PlanCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(crate::codes::check::doc_table(doc, "### Store codes"), all);
    }

    #[test]
    fn index_d_ts_union_is_all_codes() {
        let all = PlanCode::ALL.iter().map(|c| c.as_str());
        assert_eq!(
            crate::codes::check::dts_union(include_str!("../../index.d.ts"), "PlanSaveResult", "code"),
            crate::codes::check::with_extra(all, &["internal-panic"])
        );
    }
}
