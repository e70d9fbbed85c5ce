//! The JavaScript engine boundary of code cells (QuickJS-NG through `rquickjs`).
//!
//! This is the only file that knows the engine: the rest of `src/code/` sees a cell as a thread that emits text,
//! asks for nested calls and finishes with an [`Outcome`]. Replacing the engine is a change to this file only.
//!
//! Each cell runs on its own OS thread (8 MB stack) with a fresh runtime and context, a QuickJS stack limit
//! below the thread stack, a heap limit (an allocation bomb becomes a contained "out of memory" error) and an
//! interrupt handler that stops CPU-bound code as soon as the cancel flag is raised (the interrupt is not
//! catchable by `try/catch`). A cell parked on a host call is cancelled by a message on its inbox; the thread
//! then drops the context and runtime without waiting for the runtime to go idle.
//!
//! The heap limit is enforced by the cell's own allocator ([`HeapLimit`]) so a bomb is reported as out of memory
//! even when QuickJS cannot build the error. After the body returns, the thread keeps delivering replies of nested
//! calls still in flight so work chained on them runs (docs/code.md, "Results"); a stop that arrives after the body
//! returned keeps the body's result.
//!
//! Over 600 lines only with its inline tests (the code itself is about 500 lines).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use rquickjs::allocator::{Allocator, RustAllocator};
use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Promise, Runtime, Value};

/// Resource limits of one cell's engine, fixed when the cell starts.
#[derive(Clone, Debug)]
pub struct EngineLimits {
    /// OS thread stack of the cell thread.
    pub thread_stack_bytes: usize,
    /// QuickJS's own stack limit; must stay well below the thread stack.
    pub js_stack_bytes: usize,
    /// Heap limit of the runtime; exceeding it throws "out of memory" inside the cell.
    pub memory_bytes: usize,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits {
            thread_stack_bytes: 8 << 20,
            js_stack_bytes: 2 << 20,
            memory_bytes: 256 << 20,
        }
    }
}

/// Why a nested call was refused synchronously (the promise in the cell rejects with this code and message).
#[derive(Clone, Debug, PartialEq)]
pub struct CallRefusal {
    pub code: crate::code::errors::ErrorCode,
    pub message: String,
}

/// What the cell reports to its owner. Implemented by the cell manager; called on the cell thread.
pub trait EngineSink: Send + Sync + 'static {
    /// Text the program emitted through print/console/text (already formatted, newlines included).
    fn text(&self, text: &str);
    /// The program called `tools.<name>(args)`; `args_json` is the JSON text of the argument. Returning an
    /// error rejects the call's promise at once; `Ok` means a reply will arrive later through [`EngineHandle::reply`].
    fn call(&self, id: u64, name: &str, args_json: String) -> Result<(), CallRefusal>;
    /// The program finished (or could not start, or was stopped). Called exactly once, last.
    fn done(&self, outcome: Outcome);
}

/// How a cell's program ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The async body resolved; the returned value formatted as text (None for `undefined`).
    Returned(Option<String>),
    /// The async body rejected or threw; the formatted error text (name, message, code, stack).
    Threw(String),
    /// Stopped by [`EngineHandle::cancel`] (busy loop interrupted or parked cell dropped).
    Terminated,
}

enum Inbox {
    Reply { id: u64, ok: bool, payload: String },
    Cancel,
}

/// The owner's side of a running cell thread.
pub struct EngineHandle {
    inbox: Sender<Inbox>,
    interrupt: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The cell thread's kernel thread id once it started (0 before, and on systems without one): the footer's
    /// CPU figure for a long-running cell reads it (docs/render.md "Running work").
    tid: Arc<std::sync::atomic::AtomicI32>,
}

impl EngineHandle {
    /// Delivers the settlement of nested call `id`: `ok` with the reply's JSON text, or an error JSON
    /// `{"code","message"}`. Ignored when the cell already ended.
    pub fn reply(&self, id: u64, ok: bool, payload: String) {
        let _ = self.inbox.send(Inbox::Reply { id, ok, payload });
    }

    /// Stops the cell: interrupts running JavaScript and wakes a cell parked on a host call. Idempotent.
    pub fn cancel(&self) {
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.inbox.send(Inbox::Cancel);
    }

    /// CPU time the cell thread has used so far, in milliseconds (Linux: `/proc/self/task/<tid>/stat`); None
    /// elsewhere, before the thread recorded its id, or once it ended.
    pub fn cpu_ms(&self) -> Option<f64> {
        thread_cpu_ms(self.tid.load(Ordering::SeqCst))
    }
}

/// utime + stime of thread `tid` of this process, in milliseconds.
#[cfg(target_os = "linux")]
fn thread_cpu_ms(tid: i32) -> Option<f64> {
    if tid <= 0 {
        return None;
    }
    let st = crate::shell::process::ProcStat::read(&format!("/proc/self/task/{tid}/stat"))?;
    Some(st.cpu_ticks as f64 * crate::shell::process::ms_per_tick()?)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ms(_tid: i32) -> Option<f64> {
    None
}

/// The calling thread's kernel id (Linux), 0 elsewhere.
fn current_tid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        // Never block the owner on a cell: raise the flag and let the thread unwind on its own.
        self.interrupt.store(true, Ordering::SeqCst);
        let _ = self.inbox.send(Inbox::Cancel);
        self.thread.take();
    }
}

const PRELUDE: &str = include_str!("engine_prelude.js");

/// The cell's heap limit, enforced in the allocator rather than by QuickJS's own `set_memory_limit` so that a
/// refused allocation is *known*: when the heap is so full that even the "out of memory" error object cannot be
/// allocated, QuickJS throws `null`, and the flag lets the cell still report `out of memory` instead of
/// `Uncaught null`. Hand-written: rquickjs offers the allocator seam but no limiting allocator.
struct HeapLimit {
    limit: usize,
    used: usize,
    hit: Arc<AtomicBool>,
}

impl HeapLimit {
    /// Whether `more` bytes (rounded like `RustAllocator` does) still fit; raises the flag when not.
    fn admit(&mut self, more: usize) -> bool {
        let rounded = more.div_ceil(8).saturating_mul(8);
        if self.used.saturating_add(rounded) > self.limit {
            self.hit.store(true, Ordering::SeqCst);
            return false;
        }
        true
    }
}

// SAFETY: every pointer comes from `RustAllocator` and goes back to it; this wrapper only counts sizes.
unsafe impl Allocator for HeapLimit {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size) {
            return std::ptr::null_mut();
        }
        let p = RustAllocator.alloc(size);
        if !p.is_null() {
            // SAFETY: `p` is a live, non-null allocation RustAllocator just returned.
            self.used += unsafe { RustAllocator::usable_size(p) };
        }
        p
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.admit(total) {
            return std::ptr::null_mut();
        }
        let p = RustAllocator.calloc(count, size);
        if !p.is_null() {
            // SAFETY: `p` is a live, non-null allocation RustAllocator just returned.
            self.used += unsafe { RustAllocator::usable_size(p) };
        }
        p
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        self.used = self.used.saturating_sub(RustAllocator::usable_size(ptr));
        RustAllocator.dealloc(ptr)
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        let old = RustAllocator::usable_size(ptr);
        if new_size > old && !self.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        let p = RustAllocator.realloc(ptr, new_size);
        if !p.is_null() {
            self.used = self.used.saturating_sub(old) + RustAllocator::usable_size(p);
        }
        p
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        RustAllocator::usable_size(ptr)
    }
}

/// The error text of a cell that ran out of heap. QuickJS throws `null` when even its error object does not fit.
fn oom_text(limits: &EngineLimits) -> String {
    format!(
        "InternalError: out of memory (the cell reached its heap limit of {} MB; build less data in the cell, or do heavy work in the shell)",
        limits.memory_bytes >> 20
    )
}

/// Globals that QuickJS-NG may provide but that cells must not see (timers, host objects, module loading).
const REMOVED_GLOBALS: &[&str] = &[
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "queueMicrotask",
    "performance",
    "navigator",
    "gc",
    "os",
    "std",
    "bjson",
    "scriptArgs",
    "process",
    "require",
    "fetch",
    "store",
    "load",
    "notify",
    "yield_control",
    "ALL_TOOLS",
    "image",
    "audio",
    "exit",
    "WebAssembly",
    "__loadScript",
    "Worker",
];

/// Starts `program` (the body of an async function) on a new cell thread. `declared` is the list of tool
/// names the cell declared (used only for `Object.keys(tools)`; admission is the sink's decision).
pub fn start(
    program: &str,
    declared: Vec<String>,
    limits: EngineLimits,
    sink: Arc<dyn EngineSink>,
) -> std::io::Result<EngineHandle> {
    let (tx, rx) = channel::<Inbox>();
    let interrupt = Arc::new(AtomicBool::new(false));
    // Same line numbers as the program: the wrapper's first line is the program's first line.
    let source = format!("(async function () {{{}\n}})()", program);
    let flag = interrupt.clone();
    let tid = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let tid_set = tid.clone();
    let thread = std::thread::Builder::new()
        .name("pct-code-cell".into())
        .stack_size(limits.thread_stack_bytes)
        .spawn(move || {
            tid_set.store(current_tid(), Ordering::SeqCst);
            // A panic anywhere in the run (engine, sink) must still end the cell, or it stays "running" forever
            // and keeps a cell-limit slot.
            let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
                run_cell(&source, declared, &limits, flag, rx, sink.clone())
            }));
            let outcome = run.unwrap_or_else(|p| {
                Outcome::Threw(format!(
                    "InternalError: the code cell engine failed: {}",
                    panic_text(&*p)
                ))
            });
            // done() itself may panic (a broken sink): nothing more can be reported then.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| sink.done(outcome)));
        })?;
    Ok(EngineHandle {
        inbox: tx,
        interrupt,
        thread: Some(thread),
        tid,
    })
}

/// The message of a caught panic payload.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unexpected panic".into())
}

fn run_cell(
    source: &str,
    declared: Vec<String>,
    limits: &EngineLimits,
    interrupt: Arc<AtomicBool>,
    inbox: Receiver<Inbox>,
    sink: Arc<dyn EngineSink>,
) -> Outcome {
    // Test seam: a panic outside any JS callback (rquickjs turns callback panics into JS exceptions itself).
    #[cfg(test)]
    if source.contains("/*pct-test-panic*/") {
        panic!("test panic in the cell thread");
    }
    let oom = Arc::new(AtomicBool::new(false));
    let heap = HeapLimit {
        limit: limits.memory_bytes,
        used: 0,
        hit: oom.clone(),
    };
    let rt = match Runtime::new_with_alloc(heap) {
        Ok(rt) => rt,
        Err(e) => return Outcome::Threw(format!("InternalError: the engine could not start: {e}")),
    };
    rt.set_max_stack_size(limits.js_stack_bytes);
    let flag = interrupt.clone();
    rt.set_interrupt_handler(Some(Box::new(move || flag.load(Ordering::Relaxed))));
    let ctx = match Context::full(&rt) {
        Ok(c) => c,
        Err(e) => return Outcome::Threw(format!("InternalError: the engine could not start: {e}")),
    };
    let outcome = ctx.with(|ctx| drive(&ctx, source, declared, &interrupt, &inbox, sink));
    // A heap bomb whose error object itself did not fit is thrown as `null`: report what really happened.
    let outcome = match outcome {
        Outcome::Threw(t) if oom.load(Ordering::SeqCst) && is_valueless_throw(&t) => Outcome::Threw(oom_text(limits)),
        o => o,
    };
    // Dropped here without waiting for the runtime to go idle (pending jobs are simply freed).
    drop(ctx);
    drop(rt);
    outcome
}

/// Error texts of a throw that carried no error object (what QuickJS leaves when it cannot allocate one).
fn is_valueless_throw(t: &str) -> bool {
    t == "Uncaught null" || t == "Uncaught undefined" || t == NO_ERROR_TEXT || t.starts_with("Error: (the thrown error")
}

const NO_ERROR_TEXT: &str = "Error: the program failed before it could report an error";

fn eval_options(filename: &str) -> EvalOptions {
    let mut o = EvalOptions::default();
    o.global = true;
    o.strict = false;
    o.backtrace_barrier = true;
    o.filename = Some(filename.to_string());
    o
}

fn exception_text(ctx: &Ctx<'_>) -> String {
    let v = ctx.catch();
    if let Some(obj) = v.as_object() {
        let name: Option<String> = obj.get("name").ok();
        let message: Option<String> = obj.get("message").ok();
        let stack: Option<String> = obj.get("stack").ok();
        let mut s = format!(
            "{}: {}",
            name.unwrap_or_else(|| "Error".into()),
            message.unwrap_or_default()
        );
        if let Some(st) = stack.filter(|s| !s.is_empty()) {
            s.push('\n');
            s.push_str(st.trim_end_matches('\n'));
        }
        return s;
    }
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return format!("Uncaught {s}");
    }
    NO_ERROR_TEXT.into()
}

fn drive<'js>(
    ctx: &Ctx<'js>,
    source: &str,
    declared: Vec<String>,
    interrupt: &AtomicBool,
    inbox: &Receiver<Inbox>,
    sink: Arc<dyn EngineSink>,
) -> Outcome {
    let cancelled = || interrupt.load(Ordering::SeqCst);
    let globals = ctx.globals();
    for name in REMOVED_GLOBALS {
        let _ = globals.remove(*name);
    }
    let emit_sink = sink.clone();
    let emit = match Function::new(ctx.clone(), move |text: String| emit_sink.text(&text)) {
        Ok(f) => f,
        Err(_) => return Outcome::Threw(exception_text(ctx)),
    };
    let next_id = AtomicU64::new(1);
    let call_sink = sink.clone();
    let call = match Function::new(ctx.clone(), move |name: String, args: String| -> String {
        let id = next_id.fetch_add(1, Ordering::Relaxed);
        match call_sink.call(id, &name, args) {
            Ok(()) => format!("{{\"id\":{id}}}"),
            Err(r) => serde_json::json!({"error": {"code": r.code, "message": r.message}}).to_string(),
        }
    }) {
        Ok(f) => f,
        Err(_) => return Outcome::Threw(exception_text(ctx)),
    };
    let factory: Function = match ctx.eval_with_options(PRELUDE, eval_options("cell-prelude")) {
        Ok(f) => f,
        Err(_) => return Outcome::Threw(format!("InternalError: prelude failed: {}", exception_text(ctx))),
    };
    let harness: Object = match factory.call((emit, call, declared)) {
        Ok(h) => h,
        Err(_) => return Outcome::Threw(format!("InternalError: prelude failed: {}", exception_text(ctx))),
    };
    // Under the heap limit even these lookups can fail: a thrown outcome, never a panic.
    let (settle, deliver, pending): (Function, Function, Function) =
        match (harness.get("settle"), harness.get("deliver"), harness.get("pending")) {
            (Ok(s), Ok(d), Ok(p)) => (s, d, p),
            _ => return Outcome::Threw(format!("InternalError: prelude failed: {}", exception_text(ctx))),
        };
    #[cfg(test)]
    test_seams(ctx);

    let body: Value = match ctx.eval_with_options::<Value, _>(source, eval_options("cell")) {
        Ok(v) => v,
        Err(_) => {
            if cancelled() {
                return Outcome::Terminated;
            }
            return Outcome::Threw(exception_text(ctx));
        }
    };
    let settled: Promise = match settle.call((body,)) {
        Ok(p) => p,
        Err(_) => {
            if cancelled() {
                return Outcome::Terminated;
            }
            return Outcome::Threw(exception_text(ctx));
        }
    };
    // Nested calls sent and not yet answered (0 when the count itself cannot be read).
    let in_flight = || pending.call::<_, f64>(()).unwrap_or(0.0) > 0.0;
    // The program's own result once its body returned; reported even when a stop arrives later (a stop after the
    // program ended returns the program's result, docs/spec/toolkit.md §7).
    let mut finished: Option<Outcome> = None;
    loop {
        while ctx.execute_pending_job() {
            if cancelled() {
                break;
            }
        }
        if finished.is_none() {
            match settled.state() {
                PromiseState::Pending => {}
                PromiseState::Resolved => {
                    let rec: Object = match settled.result::<Object>() {
                        Some(Ok(o)) => o,
                        _ => return Outcome::Threw(exception_text(ctx)),
                    };
                    let ok: bool = rec.get("ok").unwrap_or(false);
                    if !ok {
                        // Failure seals undelivered work: chained reactions do not run.
                        return Outcome::Threw(rec.get::<_, String>("error").unwrap_or_else(|_| exception_text(ctx)));
                    }
                    let outcome = match rec.get::<_, Option<String>>("result") {
                        Ok(r) => Outcome::Returned(r),
                        Err(_) => Outcome::Threw(format!(
                            "InternalError: the returned value could not be handed over ({}); return less data, or print it",
                            exception_text(ctx)
                        )),
                    };
                    // Work chained on nested calls still in flight runs before the cell completes.
                    if !matches!(outcome, Outcome::Returned(_)) || !in_flight() {
                        return outcome;
                    }
                    finished = Some(outcome);
                }
                PromiseState::Rejected => {
                    let _ = settled.result::<Value>();
                    return Outcome::Threw(exception_text(ctx));
                }
            }
        } else if !in_flight() {
            return finished.unwrap_or(Outcome::Terminated);
        }
        if cancelled() {
            return finished.unwrap_or(Outcome::Terminated);
        }
        // Parked: nothing runnable until a nested call settles or the owner cancels.
        match inbox.recv() {
            Ok(Inbox::Reply { id, ok, payload }) => {
                if deliver.call::<_, ()>((id as f64, ok, payload)).is_err() {
                    if let Some(done) = finished {
                        // Chained work failed after the program returned: the program's result stands.
                        return done;
                    }
                    if cancelled() {
                        return Outcome::Terminated;
                    }
                    // The delivery itself failed (e.g. out of memory parsing the reply): fail the cell.
                    return Outcome::Threw(exception_text(ctx));
                }
            }
            Ok(Inbox::Cancel) | Err(_) => return finished.unwrap_or(Outcome::Terminated),
        }
    }
}

/// Test seam: `__pctTestBlock(ms)` blocks the cell thread in native code (no interrupt check), the way a long
/// native operation would, so tests can produce a stop that is not confirmed in time.
#[cfg(test)]
fn test_seams(ctx: &Ctx<'_>) {
    let f = Function::new(ctx.clone(), |ms: f64| {
        std::thread::sleep(std::time::Duration::from_millis(ms as u64));
    })
    .unwrap();
    ctx.globals().set("__pctTestBlock", f).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::time::{Duration, Instant};

    #[derive(Default)]
    struct Rec {
        text: Mutex<String>,
        calls: Mutex<Vec<(u64, String, String)>>,
        done: Mutex<Option<Outcome>>,
        refuse: bool,
    }
    impl EngineSink for Rec {
        fn text(&self, t: &str) {
            self.text.lock().push_str(t);
        }
        fn call(&self, id: u64, name: &str, args: String) -> Result<(), CallRefusal> {
            if self.refuse {
                return Err(CallRefusal {
                    code: crate::code::errors::CellCode::UnknownAdapter.into(),
                    message: format!("no {name}"),
                });
            }
            self.calls.lock().push((id, name.into(), args));
            Ok(())
        }
        fn done(&self, o: Outcome) {
            *self.done.lock() = Some(o);
        }
    }

    /// A sink whose text() panics (like a poisoned mutex would): rquickjs turns it into a JS exception.
    struct PanickingSink(Mutex<Option<Outcome>>);
    impl EngineSink for PanickingSink {
        fn text(&self, _t: &str) {
            panic!("sink exploded");
        }
        fn call(&self, _id: u64, _name: &str, _args: String) -> Result<(), CallRefusal> {
            Ok(())
        }
        fn done(&self, o: Outcome) {
            *self.0.lock() = Some(o);
        }
    }

    fn wait_outcome(slot: &Mutex<Option<Outcome>>) -> Outcome {
        let t = Instant::now();
        while slot.lock().is_none() {
            // Generous upper bound only: without an outcome the cell would stay running forever.
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the cell never reported an outcome"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let o = slot.lock().clone().unwrap();
        o
    }

    #[test]
    fn a_panic_in_the_cell_thread_ends_the_cell_as_an_internal_error() {
        let rec = Arc::new(Rec::default());
        let h = start(
            "/*pct-test-panic*/ return 1",
            vec![],
            EngineLimits::default(),
            rec.clone(),
        )
        .unwrap();
        let o = wait_outcome(&rec.done);
        drop(h);
        assert_eq!(
            o,
            Outcome::Threw("InternalError: the code cell engine failed: test panic in the cell thread".into())
        );
        // A panicking sink callback ends the cell as a failure too.
        let sink = Arc::new(PanickingSink(Mutex::new(None)));
        let h = start("print('boom'); return 1", vec![], EngineLimits::default(), sink.clone()).unwrap();
        let o = wait_outcome(&sink.0);
        drop(h);
        assert!(matches!(o, Outcome::Threw(_)), "{o:?}");
    }

    fn run_with(program: &str, refuse: bool) -> (String, Outcome) {
        let rec = Arc::new(Rec {
            refuse,
            ..Default::default()
        });
        let h = start(program, vec![], EngineLimits::default(), rec.clone()).unwrap();
        let t = Instant::now();
        while rec.done.lock().is_none() {
            assert!(t.elapsed() < Duration::from_secs(60), "cell did not finish");
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(h);
        let text = rec.text.lock().clone();
        let o = rec.done.lock().clone().unwrap();
        (text, o)
    }
    fn run(program: &str) -> (String, Outcome) {
        run_with(program, false)
    }

    #[test]
    fn text_print_console_formatting() {
        let (t, o) = run(r#"text("a"); text("b"); text(7); text({n:1}); text(undefined); print("p")"#);
        assert_eq!(t, "ab7{\"n\":1}undefined\np\n");
        assert_eq!(o, Outcome::Returned(None));
        let (t, _) = run(r#"console.log("x", 1, [2], null); console.warn("w"); console.error("e"); print()"#);
        assert_eq!(t, "x 1 [2] null\nw\ne\n\n");
    }

    #[test]
    fn return_and_top_level_await() {
        let (_, o) = run("const x = await Promise.resolve(20); return {v: x + 1};");
        assert_eq!(o, Outcome::Returned(Some("{\"v\":21}".into())));
        let (_, o) = run("return 'plain';");
        assert_eq!(o, Outcome::Returned(Some("plain".into())));
    }

    #[test]
    fn thrown_error_is_formatted_with_stack_and_line() {
        let (_, o) = run("\n\nthrow new TypeError('bad thing');");
        match o {
            Outcome::Threw(s) => {
                assert!(s.starts_with("TypeError: bad thing"), "{s}");
                assert!(s.contains(":3"), "line 3 expected in stack: {s}");
            }
            o => panic!("{o:?}"),
        }
        let (_, o) = run_with("await tools.x()", true);
        match o {
            Outcome::Threw(s) => assert!(
                s.starts_with("Error: no x [unknown-adapter]") && !s.contains("prelude"),
                "{s}"
            ),
            o => panic!("{o:?}"),
        }
        let (_, o) = run("throw 'str'");
        assert_eq!(o, Outcome::Threw("Uncaught str".into()));
    }

    #[test]
    fn syntax_error_fails_the_cell() {
        let (_, o) = run("let = = 1");
        assert!(
            matches!(o, Outcome::Threw(ref s) if s.starts_with("SyntaxError")),
            "{o:?}"
        );
    }

    #[test]
    fn refused_call_rejects_inside_the_cell() {
        let (t, o) = run_with(
            "try { await tools.nope({}) } catch (e) { print(e.code, e.message) }",
            true,
        );
        assert_eq!(t, "unknown-adapter no nope\n");
        assert_eq!(o, Outcome::Returned(None));
    }

    #[test]
    fn excluded_globals_are_absent() {
        let (t, _) = run(
            "for (const n of ['process','require','fetch','setTimeout','setInterval','clearTimeout','queueMicrotask','store','load','notify','yield_control','ALL_TOOLS','image','audio','exit','performance','os','std','WebAssembly']) if (typeof globalThis[n] !== 'undefined') print('present', n);\ntry { await import('fs'); print('import worked') } catch (e) { print('import refused') }",
        );
        assert_eq!(t, "import refused\n");
    }

    #[test]
    fn busy_loop_is_interrupted_and_not_catchable() {
        let rec = Arc::new(Rec::default());
        let h = start(
            "print('looping'); while (true) { try { while(true){} } catch (e) { print('caught') } }",
            vec![],
            EngineLimits::default(),
            rec.clone(),
        )
        .unwrap();
        // Cancel once the program is past its print, in the loop (not before it started).
        let t = Instant::now();
        while rec.text.lock().is_empty() {
            assert!(t.elapsed() < Duration::from_secs(60), "the program never printed");
            std::thread::sleep(Duration::from_millis(1));
        }
        h.cancel();
        let t = Instant::now();
        while rec.done.lock().is_none() {
            assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(*rec.done.lock(), Some(Outcome::Terminated));
        assert_eq!(*rec.text.lock(), "looping\n", "the interrupt is not caught");
    }

    #[test]
    fn heap_bomb_is_contained() {
        let (_, o) = run("const a = []; while (true) a.push(new Array(100000).fill(1));");
        assert!(
            matches!(o, Outcome::Threw(ref s) if s.contains("out of memory")),
            "{o:?}"
        );
    }

    #[test]
    fn lone_surrogates_print_as_replacement_characters() {
        // Before: "TypeError: Conversion from string failed: invalid utf-8 sequence" failed the whole cell.
        let (t, o) = run(r#"print("\uD800"); text("a\uDC00b"); print(); print("ok \uD83D\uDE00"); return "r\uD800""#);
        assert_eq!(t, "\u{FFFD}\na\u{FFFD}b\n\nok \u{1F600}\n");
        assert_eq!(o, Outcome::Returned(Some("r\u{FFFD}".into())));
        let (_, o) = run(r#"throw new Error("bad \uDBFF")"#);
        assert!(
            matches!(o, Outcome::Threw(ref s) if s.starts_with("Error: bad \u{FFFD}")),
            "{o:?}"
        );
    }

    #[test]
    fn a_surrogate_pair_is_never_split_between_chunks() {
        // 65535 ASCII bytes then an emoji: the pair straddles the 65536-unit chunk boundary.
        let (t, o) = run(r#"print("a".repeat(65535) + "\uD83D\uDE00")"#);
        assert_eq!(o, Outcome::Returned(None));
        assert_eq!(t.len(), 65535 + 4 + 1);
        assert!(t.ends_with("a\u{1F600}\n") && !t.contains('\u{FFFD}'));
    }

    #[test]
    fn printing_a_100_mb_string_is_delivered_in_chunks() {
        // Before: "InternalError: QuickJS library created a unknown error" failed the cell.
        let (t, o) = run("print('x'.repeat(100 * 1024 * 1024)); return 2");
        assert_eq!(o, Outcome::Returned(Some("2".into())));
        assert_eq!(t.len(), 100 * 1024 * 1024 + 1);
    }

    #[test]
    fn a_heap_bomb_that_leaves_no_room_for_its_error_still_reports_out_of_memory() {
        // Before: this bomb failed with "Uncaught null" (the error object itself did not fit).
        for bomb in [
            "const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
            "let o = {}; let i = 0; while (true) o['k' + i++] = i;",
        ] {
            let (_, o) = run(bomb);
            assert!(
                matches!(o, Outcome::Threw(ref s) if s.contains("out of memory")),
                "{bomb}: {o:?}"
            );
        }
        // A program that throws null on its own is still reported as such.
        let (_, o) = run("throw null");
        assert_eq!(o, Outcome::Threw("Uncaught null".into()));
    }

    #[test]
    fn work_chained_after_the_last_nested_call_runs_before_the_cell_ends() {
        // Before: the cell ended as soon as the body returned; the reaction never ran.
        let rec = Arc::new(Rec::default());
        let h = start(
            "tools.echo({}).then((r) => { print('chained', r.v); return tools.echo({}) }).then((r) => print('second', r.v)); return 'body'",
            vec!["echo".into()],
            EngineLimits::default(),
            rec.clone(),
        )
        .unwrap();
        let t = Instant::now();
        for n in 1..=2 {
            while rec.calls.lock().len() < n {
                assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(rec.done.lock().is_none(), "the cell waits for its nested call");
            let id = rec.calls.lock()[n - 1].0;
            h.reply(id, true, format!("{{\"v\":{n}}}"));
        }
        let o = wait_outcome(&rec.done);
        assert_eq!(o, Outcome::Returned(Some("body".into())));
        assert_eq!(*rec.text.lock(), "chained 1\nsecond 2\n");
    }

    #[test]
    fn a_stop_after_the_body_returned_keeps_the_programs_result() {
        let rec = Arc::new(Rec::default());
        let h = start(
            "tools.echo({}).then(() => print('never')); return 7",
            vec!["echo".into()],
            EngineLimits::default(),
            rec.clone(),
        )
        .unwrap();
        let t = Instant::now();
        while rec.calls.lock().is_empty() {
            assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
            std::thread::sleep(Duration::from_millis(1));
        }
        h.cancel();
        assert_eq!(wait_outcome(&rec.done), Outcome::Returned(Some("7".into())));
    }

    #[test]
    fn deep_recursion_is_a_range_error() {
        let (_, o) = run("function f(n) { return f(n + 1) + 1 } f(0)");
        assert!(matches!(o, Outcome::Threw(ref s) if s.contains("stack")), "{o:?}");
    }

    #[test]
    fn nested_call_resolves_from_another_thread_and_cancel_drops_a_parked_cell() {
        let rec = Arc::new(Rec::default());
        let h = start(
            "const r = await tools.echo({a: 1}); print(r.got); const s = await tools.echo('x'); print('never')",
            vec!["echo".into()],
            EngineLimits::default(),
            rec.clone(),
        )
        .unwrap();
        let t = Instant::now();
        while rec.calls.lock().is_empty() {
            assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
            std::thread::sleep(Duration::from_millis(1));
        }
        let (id, name, args) = rec.calls.lock()[0].clone();
        assert_eq!((name.as_str(), args.as_str()), ("echo", "{\"a\":1}"));
        h.reply(id, true, "{\"got\":42}".into());
        while rec.calls.lock().len() < 2 {
            assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(rec.calls.lock()[1].2, "\"x\"");
        h.cancel();
        while rec.done.lock().is_none() {
            assert!(t.elapsed() < Duration::from_secs(60), "generous upper bound only");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(*rec.text.lock(), "42\n");
        assert_eq!(*rec.done.lock(), Some(Outcome::Terminated));
    }
}
