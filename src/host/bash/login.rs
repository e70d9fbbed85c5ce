//! The user's login-shell PATH (docs/spec/host-tools.md §Bash): Pi is often started from a desktop launcher or a
//! service whose PATH lacks what the user's profile adds (`~/.cargo/bin`, nvm, Homebrew), so Bash asks the login
//! shell once per process and injects what it prints. Best effort and bounded: a profile that hangs or fails costs
//! at most [`PROBE_BOUND`] once, and the command then runs with the inherited PATH.

use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::sync::OnceCell;

/// How long the one probe may take.
pub const PROBE_BOUND: Duration = Duration::from_secs(5);

/// Marks the PATH line among whatever the profile prints.
const SENTINEL: &str = "__PCT_LOGIN_PATH__=";

static PROBED: OnceCell<Option<String>> = OnceCell::const_new();

/// Whether `shell` understands `-l` (a login shell) the way bash does.
pub fn supports_login(shell: &str) -> bool {
    let base = std::path::Path::new(shell)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("");
    matches!(base, "bash" | "zsh" | "ksh" | "mksh" | "dash" | "sh")
}

/// The login shell's PATH, probed with the first shell asked about and remembered for the process (`None` when
/// the shell cannot be a login shell, the probe failed, or it took longer than [`PROBE_BOUND`]).
pub async fn login_path(shell: &str) -> Option<String> {
    PROBED
        .get_or_init(|| probe(shell.to_string(), PROBE_BOUND))
        .await
        .clone()
}

/// Runs `<shell> -lc` printing PATH behind a sentinel; kills the probe's whole process group if it overruns.
pub async fn probe(shell: String, bound: Duration) -> Option<String> {
    if !supports_login(&shell) {
        return None;
    }
    let script = format!("printf '\\n{SENTINEL}%s\\n' \"$PATH\"");
    let mut child = tokio::process::Command::new(&shell)
        .args(["-l", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .env(
            crate::shell::watchdog::MARKER_VAR,
            format!("{}:bash-probe", crate::shell::watchdog::instance()),
        )
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let pgid = child.id().map(|p| p as i32).unwrap_or(0);
    let mut out = child.stdout.take()?;
    let read = async {
        let mut buf = Vec::new();
        // a profile that floods output is cut off: the PATH line comes last and is short
        let _ = (&mut out).take(1 << 20).read_to_end(&mut buf).await;
        let _ = child.wait().await;
        buf
    };
    let buf = match tokio::time::timeout(bound, read).await {
        Ok(b) => b,
        Err(_) => {
            crate::shell::process::signal_group(pgid, libc::SIGKILL);
            return None;
        }
    };
    parse(&String::from_utf8_lossy(&buf))
}

/// The PATH after the last sentinel, if it is a plausible non-empty value.
fn parse(out: &str) -> Option<String> {
    let line = out.lines().rev().find_map(|l| l.strip_prefix(SENTINEL))?;
    let line = line.trim_end_matches('\r');
    (!line.is_empty() && !line.contains('\0')).then(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_takes_the_sentinel_line_only() {
        assert_eq!(parse("motd\n__PCT_LOGIN_PATH__=/a:/b\n"), Some("/a:/b".into()));
        assert_eq!(parse("no sentinel"), None);
        assert_eq!(parse("__PCT_LOGIN_PATH__=\n"), None);
        assert!(supports_login("/bin/bash") && !supports_login("/usr/bin/fish"));
    }

    #[tokio::test]
    async fn probe_reads_path_and_a_hanging_profile_is_bounded() {
        let p = probe("/bin/sh".into(), PROBE_BOUND).await;
        assert!(p.is_some_and(|p| p.contains('/')));
        // a "shell" whose login start never ends: it records its pid, then sleeps far past any test timeout
        let dir = tempfile::tempdir().unwrap();
        let sh = dir.path().join("sh");
        let pidfile = dir.path().join("pid");
        std::fs::write(
            &sh,
            format!("#!/bin/sh\necho $$ > '{}'\nexec sleep 3000\n", pidfile.display()),
        )
        .unwrap();
        std::fs::set_permissions(&sh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(probe(sh.display().to_string(), Duration::from_secs(1)).await, None);
        let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        // the overrun probe's group was killed: the sleeping "profile" is gone (reaped or a zombie)
        let mut gone = false;
        for _ in 0..200 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty()
                || stat
                    .rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "the probe's process survived its bound");
    }
}
