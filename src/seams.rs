//! Test seams (docs/release.md "Test seams"): the few environment variables that let the test suites reach states a
//! real run cannot be forced into on demand (a rename failing with ENOSPC, a crash mid-write, a panic inside an
//! export, a server that never answers within 30 s, Computer Use on a Linux machine). They exist only in builds
//! with the cargo feature `test-seams` (and in `cargo test`); the release build, `build:all` and the published
//! packages are compiled without it, so there no environment variable changes the engine's behaviour. Every seam
//! site reads its variable through [`var`], and [`ALL`] lists them so a test can set each one against a seam-less
//! binary and show it is ignored.

/// Whether this build reads the test seams.
pub const ENABLED: bool = cfg!(any(test, feature = "test-seams"));

/// Every seam variable, with the module that reads it (docs/release.md lists the same set).
pub const ALL: &[(&str, &str)] = &[
    (
        "PCT_TEST_PANIC",
        "bind/guard.rs, host/bash/tasks.rs: the named export guards (and the task waiter) panic",
    ),
    (
        "PCT_TEST_PATCH_FAULT",
        "patch/commit.rs: a staging, commit or cleanup step fails, or the process aborts",
    ),
    (
        "PCT_TEST_PATCH_DELAY_MS",
        "patch/commit.rs: a pause between preflight and staging",
    ),
    (
        "PCT_TEST_NET_TIMEOUT_MS",
        "bind/net.rs: replaces the network request timeouts",
    ),
    (
        "PCT_TEST_NET_BODY_CAP_BYTES",
        "bind/net.rs: replaces the network response-body caps",
    ),
    (
        "PCT_TEST_COMPUTER_USE",
        "computer/mod.rs: the platform and the app-server program",
    ),
    (
        "PCT_TEST_LOCK_HOLD_MS",
        "config/store.rs: the config lock is held that long inside a save",
    ),
    (
        "PCT_TEST_HOST_STALL",
        "host/write.rs, bind/host_edit.rs, host/bash/stream.rs: a named site sleeps, as on a stalled disk",
    ),
    (
        "PCT_TEST_WATCHDOG_SH",
        "shell/watchdog.rs: the program that runs the watchdog script",
    ),
];

/// Panics when `PCT_TEST_PANIC` lists `site` (comma-separated): the export guards (src/bind/guard.rs) and a few
/// engine sites outside them (the background-task waiter of src/host/bash/tasks.rs) call it, so a suite can show a
/// panic there is contained.
pub fn panic_at(site: &str) {
    if let Some(v) = var("PCT_TEST_PANIC") {
        if v.split(',').any(|s| s.trim() == site) {
            panic!("PCT_TEST_PANIC trigger at {site}");
        }
    }
}

/// Sleeps when `PCT_TEST_HOST_STALL` (`site:ms`, comma-separated) names `site`: a write or read stuck on a stalled
/// disk or mount, for the tool timeouts' tests (docs/host.md "Timeouts").
pub fn stall(site: &str) {
    let Some(v) = var("PCT_TEST_HOST_STALL") else {
        return;
    };
    for item in v.split(',') {
        if let Some((name, ms)) = item.trim().split_once(':') {
            if name == site {
                if let Ok(ms) = ms.parse::<u64>() {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
        }
    }
}

/// The value of the seam variable `name`, when this build has seams and the variable is set to valid UTF-8;
/// `None` in a release build whatever the environment says.
pub fn var(name: &str) -> Option<String> {
    debug_assert!(ALL.iter().any(|(n, _)| *n == name), "{name} is not a listed seam");
    if ENABLED {
        std::env::var(name).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_seam_site_uses_a_listed_variable_and_the_docs_list_them_all() {
        let docs = include_str!("../docs/release.md");
        for (name, _) in super::ALL {
            assert!(name.starts_with("PCT_TEST_"));
            assert!(docs.contains(name), "docs/release.md names {name}");
        }
        // No seam read bypasses `var`: the only `std::env::var("PCT_TEST_…` left in src is this module's doc text.
        let mut stack = vec![std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("seams.rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for pat in ["env::var(\"PCT_TEST", "env::var_os(\"PCT_TEST"] {
                        assert!(!text.contains(pat), "{} reads a seam around seams::var", p.display());
                    }
                }
            }
        }
    }
}
