//! One job: a command started once in its own process group, with the tasks that drain its pipes, feed its stdin
//! and decide when it has settled.
//!
//! Settlement = the leader exited, its process group is gone and both stdout and stderr reached EOF. Descendants
//! left in the group and children holding the inherited pipes keep the job managed after the leader exits.

use super::process::{group_exists, group_has_live_member, marked_pids, pipe_holders};
use crate::output::budget::MAX_OUTPUT_BYTES;
use crate::output::{Capture, Utf8Decoder};
use parking_lot::Mutex;
use serde::Serialize;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot, watch};

/// Bytes of unread output kept per stream between reads (the largest preview). Anything beyond is counted as
/// dropped from the preview; the recovery capture still has it.
pub const PENDING_CAP: usize = MAX_OUTPUT_BYTES as usize;

/// How the leader process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderExit {
    /// Exited with a status code.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
    /// The wait itself failed.
    Unknown,
}

/// The state of a job's stdin pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StdinState {
    /// Input is accepted.
    Open,
    /// EOF was requested (closeStdin, or the stdin command transport consumed it).
    Closed,
    /// A write failed (broken pipe); input is refused.
    Broken,
}

/// `inputDelivery`: a transport fact, not an application acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Every byte was handed to the pipe.
    Written,
    /// The write failed part-way (EPIPE) or had not finished when the call returned.
    Unknown,
}

/// Stop progress of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopPhase {
    /// Never asked to stop.
    None,
    /// SIGTERM sent.
    Term,
    /// SIGKILL sent.
    Kill,
}

/// Unread output of one stream.
#[derive(Debug, Default)]
pub struct Pending {
    /// Decoded text not yet shown (at most [`PENDING_CAP`] bytes).
    pub text: String,
    /// Bytes that arrived while `text` was full.
    pub overflow: usize,
}

impl Pending {
    fn push(&mut self, s: &str) {
        let room = PENDING_CAP.saturating_sub(self.text.len());
        let keep = crate::output::cut_utf8(s, room);
        self.text.push_str(&s[..keep]);
        self.overflow += s.len() - keep;
    }
}

/// Mutable facts of a job, behind one lock (never held across an await).
#[derive(Debug)]
pub struct JobState {
    /// Unread stdout.
    pub stdout: Pending,
    /// Unread stderr.
    pub stderr: Pending,
    /// Recovery capture of everything decoded, in arrival order.
    pub capture: Capture,
    /// Set when the leader was reaped.
    pub leader: Option<LeaderExit>,
    /// stdout reached EOF.
    pub out_eof: bool,
    /// stderr reached EOF.
    pub err_eof: bool,
    /// No process remains in the group.
    pub group_gone: bool,
    /// When the job settled.
    pub settled_at: Option<Instant>,
    /// The terminal result was delivered (or the handle pruned): later observers get `stale-session`.
    pub released: bool,
    /// stdin pipe state.
    pub stdin: StdinState,
    /// Admitted stdin bytes whose call or transport has not settled.
    pub stdin_pending_bytes: usize,
    /// Admitted input calls whose call or transport has not settled.
    pub stdin_pending_calls: usize,
    /// Stop progress.
    pub stop: StopPhase,
    /// A stop finished without confirming the group, the pipes and the marked processes are gone.
    pub unknown_outcome: bool,
    /// With `unknown_outcome`: the pids still alive that the stop could not end (marked processes outside the
    /// group, or processes holding the output pipes).
    pub survivors: Vec<i32>,
    /// Any read returned while the job was still running (a yield).
    pub yielded: bool,
    /// Set when `terminate` came after the job had completed on its own: the marked pids it found still running
    /// outside the group (the command's result stays `completed`; only these leftovers were being stopped).
    pub leftover_stop: Option<Vec<i32>>,
}

impl JobState {
    /// Whether the job settled.
    pub fn settled(&self) -> bool {
        self.settled_at.is_some()
    }
    /// Unread bytes across both streams (shown or overflowing).
    pub fn pending_len(&self) -> usize {
        self.stdout.text.len() + self.stderr.text.len()
    }
}

/// One queued stdin write.
pub struct StdinOp {
    /// Bytes to write (may be empty when only closing).
    pub bytes: Vec<u8>,
    /// Close stdin after the write.
    pub close: bool,
    /// Receives the delivery fact.
    pub done: oneshot::Sender<Delivery>,
    /// Admission held until the transport settles.
    pub ticket: Option<Arc<Ticket>>,
}

/// Stdin admission held by a call and by its queued write; released when both are done.
pub struct Ticket {
    job: Weak<Job>,
    bytes: usize,
}

impl Ticket {
    /// Admits `bytes` for `job` (the caller checked the limits under the state lock).
    pub fn new(job: &Arc<Job>, st: &mut JobState, bytes: usize) -> Arc<Ticket> {
        st.stdin_pending_bytes += bytes;
        st.stdin_pending_calls += 1;
        Arc::new(Ticket {
            job: Arc::downgrade(job),
            bytes,
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(job) = self.job.upgrade() {
            let mut st = job.state.lock();
            st.stdin_pending_bytes -= self.bytes;
            st.stdin_pending_calls -= 1;
        }
    }
}

/// A started command.
pub struct Job {
    /// Opaque handle `pct-shell-<hex>`.
    pub id: String,
    /// Leader pid = process group id.
    pub pgid: i32,
    /// The value of `PCT_JOB` in the job's environment (`<instance>:<manager>:<id>`), inherited by every
    /// descendant, so the ones that leave the process group can still be found (docs/shell.md).
    pub marker: String,
    /// Inode numbers of the stdout and stderr pipes, to name processes still holding them after a stop.
    pub pipe_inodes: [u64; 2],
    /// The command went through stdin (which is therefore closed to input).
    pub stdin_transport: bool,
    /// Mutable facts.
    pub state: Mutex<JobState>,
    /// Bumped on every change (output, EOF, exit, settlement, stop outcome).
    pub version: watch::Sender<u64>,
    /// Serializes observations (reads) of this job.
    pub observe_lock: tokio::sync::Mutex<()>,
    /// Queue of the stdin writer task.
    pub stdin_tx: mpsc::UnboundedSender<StdinOp>,
}

impl Job {
    /// Wakes every waiter.
    pub fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Settles the job if every condition holds. Call after any of them changes.
    pub fn try_settle(&self) {
        let mut st = self.state.lock();
        if st.settled_at.is_none() && st.leader.is_some() && st.group_gone && st.out_eof && st.err_eof {
            st.settled_at = Some(Instant::now());
            // survivors outside the group keep an unconfirmed stop unconfirmed until a retry confirms it
            if st.survivors.is_empty() {
                st.unknown_outcome = false;
            }
            st.capture.finish();
        }
    }

    /// Waits up to `dur` for settlement; returns whether it settled.
    pub async fn wait_settled(&self, dur: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + dur;
        let mut rx = self.version.subscribe();
        loop {
            if self.state.lock().settled() {
                return true;
            }
            tokio::select! {
                r = rx.changed() => { if r.is_err() { return self.state.lock().settled(); } }
                _ = tokio::time::sleep_until(deadline) => return self.state.lock().settled(),
            }
        }
    }
}

impl Job {
    /// Live processes carrying this job's marker (in the group or not).
    pub fn marked(&self) -> Vec<i32> {
        marked_pids(|v| v == self.marker)
    }

    /// What keeps a stop from being confirmed: marked processes still alive plus processes holding the output
    /// pipes (the group's own members count too while it exists).
    pub fn survivors(&self) -> Vec<i32> {
        let mut v = self.marked();
        let (out_eof, err_eof) = {
            let st = self.state.lock();
            (st.out_eof, st.err_eof)
        };
        if !(out_eof && err_eof) {
            v.extend(pipe_holders(&self.pipe_inodes));
        }
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Which pipe a reader drains.
#[derive(Debug, Clone, Copy)]
pub enum Stream {
    /// stdout
    Out,
    /// stderr
    Err,
}

/// Drains one pipe: decodes UTF-8 across reads, captures before any preview limit, keeps unread text bounded.
pub async fn pump(job: Arc<Job>, mut r: impl AsyncRead + Unpin, which: Stream) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut dec = Utf8Decoder::new();
    let mut text = String::new();
    let mut failed = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                text.clear();
                dec.push(&buf[..n], &mut text);
                append(&job, which, &text);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    text.clear();
    dec.finish(&mut text);
    append(&job, which, &text);
    {
        let mut st = job.state.lock();
        if failed {
            st.capture.fail_source();
        }
        match which {
            Stream::Out => st.out_eof = true,
            Stream::Err => st.err_eof = true,
        }
    }
    job.try_settle();
    job.bump();
}

fn append(job: &Job, which: Stream, text: &str) {
    if text.is_empty() {
        return;
    }
    {
        let mut st = job.state.lock();
        st.capture.append(text.as_bytes());
        match which {
            Stream::Out => st.stdout.push(text),
            Stream::Err => st.stderr.push(text),
        }
    }
    job.bump();
}

/// Reaps the leader, then waits for the process group to disappear (polling with backoff), then settles.
pub async fn supervise(job: Arc<Job>, mut child: Child) {
    use std::os::unix::process::ExitStatusExt;
    let exit = match child.wait().await {
        Ok(st) => match (st.code(), st.signal()) {
            (Some(c), _) => LeaderExit::Code(c),
            (None, Some(s)) => LeaderExit::Signal(s),
            _ => LeaderExit::Unknown,
        },
        Err(_) => LeaderExit::Unknown,
    };
    job.state.lock().leader = Some(exit);
    job.bump();
    // kill(-pgid, 0) every few ms (backing off to 50 ms); the /proc scan that tells a zombie-only group from a
    // live one costs more, so it runs at most every 200 ms.
    let mut delay = Duration::from_millis(1);
    let mut last_scan: Option<Instant> = None;
    while group_exists(job.pgid) {
        if last_scan.is_none_or(|t| t.elapsed() >= Duration::from_millis(200)) {
            last_scan = Some(Instant::now());
            if !group_has_live_member(job.pgid) {
                break;
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    }
    job.state.lock().group_gone = true;
    super::watchdog::remove_group(job.pgid);
    job.try_settle();
    job.bump();
}

/// Feeds stdin in admission order. Holds only a weak reference so a released job can be dropped.
pub async fn stdin_writer(job: Weak<Job>, stdin: Option<ChildStdin>, mut rx: mpsc::UnboundedReceiver<StdinOp>) {
    let mut stdin = stdin;
    while let Some(op) = rx.recv().await {
        let mut delivery = Delivery::Written;
        if !op.bytes.is_empty() {
            match stdin.as_mut() {
                Some(w) => {
                    let r = async {
                        w.write_all(&op.bytes).await?;
                        w.flush().await
                    }
                    .await;
                    if r.is_err() {
                        delivery = Delivery::Unknown;
                        stdin = None;
                        if let Some(j) = job.upgrade() {
                            j.state.lock().stdin = StdinState::Broken;
                        }
                    }
                }
                None => delivery = Delivery::Unknown,
            }
        }
        if op.close {
            if let Some(mut w) = stdin.take() {
                let _ = w.shutdown().await;
            }
        }
        let _ = op.done.send(delivery);
        drop(op.ticket);
        if let Some(j) = job.upgrade() {
            j.bump();
        }
    }
}
