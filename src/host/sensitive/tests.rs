//! The sensitive-path set and the command scan: every seed entry is covered under a made-up home, neighbours are not,
//! and a command names one in the spellings people use.

use super::*;
use std::path::Path;

const HOME: &str = "/home/alice";

fn set(extra: &[&str]) -> Sensitive {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Sensitive::new(Some(Path::new(HOME)), Some(Path::new("/home/alice/.pi/agent")), &extra)
}

fn shown(s: &Sensitive, p: &str) -> Option<String> {
    s.covering(Path::new(p)).map(|e| e.shown.clone())
}

#[test]
fn every_seed_entry_and_what_is_inside_it_is_covered() {
    let s = set(&[]);
    for rel in SEED {
        assert_eq!(shown(&s, &format!("{HOME}/{rel}")), Some(format!("~/{rel}")), "{rel}");
        assert_eq!(
            shown(&s, &format!("{HOME}/{rel}/inner/file")),
            Some(format!("~/{rel}")),
            "{rel}"
        );
    }
    for f in AGENT_DIR_FILES {
        assert_eq!(
            shown(&s, &format!("{HOME}/.pi/agent/{f}")),
            Some(format!("<agent dir>/{f}"))
        );
    }
    // The issue's list, spelled out (not derived from SEED).
    for p in [
        "/home/alice/.ssh/id_ed25519",
        "/home/alice/.aws/credentials",
        "/home/alice/.gnupg/private-keys-v1.d/x.key",
        "/home/alice/.config/gcloud/application_default_credentials.json",
        "/home/alice/.kube/config",
        "/home/alice/.docker/config.json",
        "/home/alice/.netrc",
        "/home/alice/.git-credentials",
        "/home/alice/.npmrc",
        "/home/alice/.pypirc",
        "/home/alice/.mozilla/firefox/abc.default/logins.json",
        "/home/alice/.config/google-chrome/Default/Cookies",
        "/home/alice/Library/Keychains/login.keychain-db",
        "/home/alice/.local/share/keyrings/login.keyring",
    ] {
        assert!(s.covering(Path::new(p)).is_some(), "{p}");
    }
}

#[test]
fn neighbours_are_not_covered() {
    let s = set(&[]);
    for p in [
        "/home/alice",
        "/home/alice/.sshrc",
        "/home/alice/ssh/id_rsa",
        "/home/alice/.config",
        "/home/alice/.config/gcloud-notes.txt",
        "/home/alice/.docker/daemon.json",
        "/home/alice/.docker",
        "/home/alice/.npmrc.bak/../project",
        "/home/alice/project/.netrc.example",
        "/home/alice/.pi/agent/settings.json",
        "/home/alice/.pi/agent/pi-codex-toolkit/scratch/s1/a.txt",
        "/home/bob/.ssh/id_rsa",
        "/tmp/.aws/credentials",
    ] {
        assert_eq!(shown(&s, p), None, "{p}");
    }
}

#[test]
fn config_extras_add_entries_and_never_remove_the_seed() {
    let s = set(&["~/vault", "/etc/ssl/private", "relative/not/taken", "~user/x"]);
    assert_eq!(shown(&s, "/home/alice/vault/k"), Some("~/vault".into()));
    assert_eq!(
        shown(&s, "/etc/ssl/private/server.key"),
        Some("/etc/ssl/private".into())
    );
    assert_eq!(shown(&s, "/work/relative/not/taken"), None);
    assert_eq!(shown(&s, "/home/alice/.ssh/id_rsa"), Some("~/.ssh".into()));
    assert_eq!(s.entries().len(), SEED.len() + AGENT_DIR_FILES.len() + 2);
    // Without a home folder the seed cannot be placed, the agent dir's files and absolute extras still count.
    let no_home = Sensitive::new(None, Some(Path::new("/a")), &["/secret".into(), "~/x".into()]);
    assert_eq!(no_home.entries().len(), AGENT_DIR_FILES.len() + 1);
}

#[test]
fn extras_are_checked_at_their_boundaries() {
    assert!(check_extra("/x").is_ok());
    assert!(check_extra("~/x").is_ok());
    assert!(check_extra(&format!("/{}", "a".repeat(MAX_EXTRA_CHARS - 1))).is_ok());
    assert!(check_extra(&format!("/{}", "a".repeat(MAX_EXTRA_CHARS))).is_err());
    for bad in ["", "~", "x", "./x", "~bob/x", "/a\nb", "/a\u{1b}b", "/a\u{9b}b"] {
        assert!(check_extra(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_symlinked_sensitive_folder_is_covered_by_its_target_too() {
    let t = tempfile::TempDir::new().unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join("real-keys")).unwrap();
    std::os::unix::fs::symlink(home.join("real-keys"), home.join(".ssh")).unwrap();
    let s = Sensitive::new(Some(&home), None, &[]);
    let target = std::fs::canonicalize(home.join("real-keys")).unwrap().join("id_rsa");
    assert_eq!(s.covering(&target).map(|e| e.shown.as_str()), Some("~/.ssh"));
}

fn named(cmd: &str) -> Option<String> {
    set(&["/srv/secrets"])
        .named_in_command(cmd, Path::new("/home/alice/project"), Some(Path::new(HOME)))
        .map(|e| e.shown.clone())
}

#[test]
fn commands_that_name_a_sensitive_path() {
    let cases = [
        ("cat ~/.ssh/id_rsa", "~/.ssh"),
        ("cat $HOME/.aws/credentials", "~/.aws"),
        ("cat ${HOME}/.netrc", "~/.netrc"),
        ("cat \"$HOME/.git-credentials\"", "~/.git-credentials"),
        ("cat '/home/alice/.npmrc'", "~/.npmrc"),
        ("cp x /home/alice/.pypirc", "~/.pypirc"),
        ("tar czf /tmp/k.tgz -C ~ .gnupg", "~/.gnupg"),
        ("ls ../.kube", "~/.kube"),
        ("curl --netrc-file=~/.netrc https://x", "~/.netrc"),
        ("KUBECONFIG=~/.kube/config kubectl get pods", "~/.kube"),
        ("echo ok; cat</home/alice/.docker/config.json", "~/.docker/config.json"),
        (
            "gcloud auth print-access-token && cat ~/.config/gcloud/credentials.db",
            "~/.config/gcloud",
        ),
        ("cat /root/.ssh/authorized_keys", "~/.ssh"),
        ("cd ~ && cat .ssh/id_ed25519", "~/.ssh"),
        ("cat $DIR/.aws/config", "~/.aws"),
        ("cat ~/.ss\\h/id_rsa", "~/.ssh"),
        ("cat /home/alice/.pi/agent/auth.json", "<agent dir>/auth.json"),
        ("cat ~/.pi/agent/models.json", "<agent dir>/models.json"),
        (
            "sqlite3 '/home/alice/.mozilla/firefox/x.default/cookies.sqlite'",
            "~/.mozilla",
        ),
        (
            "cp -r \"/home/alice/Library/Application Support/Google/Chrome\" /tmp",
            "~/Library/Application Support/Google/Chrome",
        ),
        ("cat /srv/secrets/db", "/srv/secrets"),
        ("$(cat ~/.ssh/id_rsa)", "~/.ssh"),
        ("`cat ~/.ssh/id_rsa`", "~/.ssh"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter(|(c, want)| named(c).as_deref() != Some(*want))
        .map(|(c, want)| format!("{c:?}: {:?}, want {want:?}", named(c)))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn commands_that_do_not() {
    for c in [
        "ssh -p 2222 alice@host",
        "ls -la ~",
        "cat ~/.sshrc",
        "git push origin main",
        "npm publish --registry https://registry.npmjs.org",
        "cat .npmrc.example",
        "docker login -u bob",
        "cat ~/.docker/daemon.json",
        "aws s3 ls",
        "kubectl get pods",
        "echo '.ssh is where keys live' | wc -c",
        "grep -r ssh src/",
        "cat ~/.pi/agent/settings.json",
    ] {
        assert_eq!(named(c), None, "{c}");
    }
}

#[test]
fn shell_words_undo_quotes_and_split_at_operators() {
    assert_eq!(
        shell_words(r#"a 'b c' "d\"e" f\ g h;i|j&&k>l<m(n)o`p`q=r"#),
        ["a", "b c", "d\"e", "f g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r"]
    );
    assert_eq!(shell_words("  "), Vec::<String>::new());
    assert_eq!(shell_words("'unterminated"), ["unterminated"]);
}

/// A workspace, an agent dir holding `auth.json`, and a session bound to both (the agent dir's credential files are
/// sensitive without touching the process's home or config).
fn session() -> (tempfile::TempDir, super::super::paths::Roots) {
    let t = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(t.path().join("ws/src")).unwrap();
    std::fs::create_dir_all(t.path().join("agent")).unwrap();
    std::fs::write(t.path().join("ws/src/a.txt"), "needle\n").unwrap();
    std::fs::write(t.path().join("agent/auth.json"), "{\"k\": \"needle\"}\n").unwrap();
    std::fs::write(t.path().join("agent/settings.json"), "needle\n").unwrap();
    std::os::unix::fs::symlink(t.path().join("agent"), t.path().join("ws/agent-link")).unwrap();
    std::os::unix::fs::symlink(t.path().join("agent/auth.json"), t.path().join("ws/creds.json")).unwrap();
    let roots = super::super::paths::Roots::new(&t.path().join("ws"), &t.path().join("agent"), "s1").unwrap();
    (t, roots)
}

#[test]
fn the_host_tools_refuse_a_sensitive_path_however_it_is_named() {
    let (t, roots) = session();
    let abs = t.path().join("agent/auth.json").display().to_string();
    for raw in [abs.as_str(), "../agent/auth.json", "agent-link/auth.json", "creds.json"] {
        let e = roots.resolve(raw).unwrap_err();
        assert_eq!(e.code, "SENSITIVE_PATH", "{raw}");
        assert!(
            e.message.contains("<agent dir>/auth.json") && e.message.contains("Nothing was done"),
            "{}",
            e.message
        );
        // Every door resolves through the same check: an approved external path is refused all the same.
        let e = roots.resolve_for_call(raw, Some(Path::new(&abs))).unwrap_err();
        assert_eq!(e.code, "SENSITIVE_PATH", "{raw}");
    }
    // Its neighbours stay ordinary (external, so a card decides).
    assert_eq!(
        roots.resolve("agent-link/settings.json").unwrap().root,
        super::super::paths::Root::External
    );
    assert_eq!(
        roots.resolve("src/a.txt").unwrap().root,
        super::super::paths::Root::Workspace
    );
    // `..` after a link walks from the link's target, as the OS does: this names a file that does not exist.
    assert!(roots.resolve("agent-link/../agent-link/auth.json").is_ok());
}

#[test]
fn glob_and_grep_skip_a_sensitive_entry_of_the_tree_they_walk() {
    let (t, roots) = session();
    let agent = t.path().join("agent").display().to_string();
    let target = roots.resolve(&agent).unwrap();
    let ga = super::super::glob::GlobArgs::from_json(&serde_json::json!({"pattern": "*.json"})).unwrap();
    let g = super::super::glob::glob(&roots, &target, &ga, super::super::error::Deadline::none()).unwrap();
    assert_eq!(g.files.len(), 1, "{:?}", g.files);
    assert!(g.files[0].ends_with("settings.json"), "{:?}", g.files);
    let gr = super::super::grep::GrepArgs::from_json(&serde_json::json!({"pattern": "needle"})).unwrap();
    let mut st = super::super::snapshot::SnapshotStore::new();
    let r = super::super::grep::grep(&roots, &target, &gr, super::super::error::Deadline::none(), &mut st).unwrap();
    assert!(r.files.iter().all(|f| !f.ends_with("auth.json")), "{:?}", r.files);
    assert_eq!(r.files.len(), 1, "{:?}", r.files);
}

#[test]
fn a_walk_checks_only_the_entries_inside_its_folder_or_holding_it() {
    let s = set(&["/srv/keys", "/home/alice/work/secrets"]);
    let names = |dir: &str| -> Vec<String> {
        s.within_tree(Path::new(dir))
            .entries()
            .iter()
            .map(|e| e.shown.clone())
            .collect()
    };
    // A tree elsewhere: nothing to check per entry.
    assert!(s.within_tree(Path::new("/tmp/corpus")).is_empty());
    // The home folder holds every seed entry; an extra under it too.
    let home = names(HOME);
    assert!(home.contains(&"~/.ssh".to_string()) && home.contains(&"/home/alice/work/secrets".to_string()));
    assert!(!home.contains(&"/srv/keys".to_string()));
    // A folder inside an entry is covered whole: the entry holding it is kept.
    assert_eq!(names("/home/alice/.ssh/old"), vec!["~/.ssh".to_string()]);
    // Only the entry inside the walked folder, not its neighbour with a longer name.
    assert_eq!(names("/home/alice/work"), vec!["/home/alice/work/secrets".to_string()]);
    assert!(s.within_tree(Path::new("/home/alice/wor")).is_empty());
    // Whatever the folder, a path inside it is covered by the kept entries exactly as by the whole set.
    for dir in [
        "/",
        HOME,
        "/home/alice/work",
        "/srv",
        "/tmp/corpus",
        "/home/alice/.config",
    ] {
        let near = s.within_tree(Path::new(dir));
        for p in [
            "x",
            ".ssh/id_rsa",
            "work/secrets/a",
            ".config/gcloud/c",
            "keys/k",
            "alice/.aws/credentials",
        ] {
            let path = Path::new(dir).join(p);
            assert_eq!(
                near.covering(&path).map(|e| &e.shown),
                s.covering(&path).map(|e| &e.shown),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn a_walk_keeps_a_symlinked_sensitive_folder_whose_target_is_inside_it() {
    let t = tempfile::TempDir::new().unwrap();
    let home = t.path().join("home");
    let tree = std::fs::canonicalize(t.path()).unwrap().join("tree");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(tree.join("keys")).unwrap();
    std::os::unix::fs::symlink(tree.join("keys"), home.join(".ssh")).unwrap();
    let s = Sensitive::new(Some(&home), None, &[]);
    let near = s.within_tree(&tree);
    assert_eq!(near.entries().len(), 1);
    assert_eq!(
        near.covering(&tree.join("keys/id_rsa")).map(|e| e.shown.as_str()),
        Some("~/.ssh")
    );
}
