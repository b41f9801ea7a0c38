//! What a failed call was, in one line that names the cause: these messages reach
//! clients (in a `Status` under `failurePolicy: Fail`, in a `Warning` under `Ignore`), so
//! they never carry a backtrace (logged at debug instead).
//!
//! - `exited with code N`: the plugin called `exit` (WASI's `I32Exit`). WASI 0.2's `exit`
//!   says only success or failure: Rust's `std::process::exit(3)` reads as code 1.
//! - `stack overflow ...`: wasm's call stack ran out, or Rust's stack in linear memory
//!   did. Rust places that stack at the bottom of memory and grows it down, so its
//!   overflow is an out-of-bounds access just below 4 GiB (the stack pointer wrapped
//!   past 0). wasmtime says only "out of bounds memory access", with the address when
//!   the access faulted (not when a bulk-memory instruction, such as the `memory.fill`
//!   that zeroes a frame, checked it); so an out-of-bounds access is a stack overflow
//!   when it is just below 4 GiB, or when the wasm backtrace (its innermost frames, as
//!   many as wasmtime keeps) is one function, or a short cycle of them, calling itself.
//! - `panicked: MESSAGE (at FILE:LINE:COL)`: from the panic line Rust writes to stderr
//!   before it aborts.
//! - anything else: the trap (or host error), then the first of stderr, on one line.

use wasmtime::Trap;

/// How far from 4 GiB a faulting address counts as the stack pointer wrapped past 0.
const WRAPPED_STACK: u64 = 64 << 20;

/// The message of a failed call's [`CallError::Trap`](crate::CallError::Trap).
pub(crate) fn describe(plugin: &str, e: &wasmtime::Error, stderr: &[u8]) -> String {
    if let Some(bt) = e.downcast_ref::<wasmtime::WasmBacktrace>() {
        tracing::debug!(plugin, "plugin call failed: {}\n{bt}", e.root_cause());
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return match exit.0 {
            1 => "exited with code 1 (WASI 0.2 reports every failing exit code as 1)".into(),
            n => format!("exited with code {n}"),
        };
    }
    let stderr = String::from_utf8_lossy(stderr);
    match e.downcast_ref::<Trap>() {
        Some(Trap::StackOverflow) => {
            return "stack overflow (the wasm call stack is exhausted)".into();
        }
        Some(Trap::MemoryOutOfBounds) => {
            if let Some(addr) = fault_address(e)
                && addr.abs_diff(1 << 32) <= WRAPPED_STACK
            {
                return format!(
                    "stack overflow (the stack in linear memory ran out: access at 0x{addr:x})"
                );
            }
            if let Some(bt) = e.downcast_ref::<wasmtime::WasmBacktrace>()
                && let Some(f) = recursion(bt.frames())
            {
                return format!(
                    "stack overflow (the stack in linear memory ran out in a recursion of {f})"
                );
            }
        }
        _ => {}
    }
    if let Some(panic) = panic_message(&stderr) {
        return panic;
    }
    let mut msg = match e.downcast_ref::<Trap>() {
        Some(t) => t.to_string(),
        None => first_lines(e),
    };
    let said = one_line(&stderr);
    if !said.is_empty() {
        msg = format!("{msg}; stderr: {said}");
    }
    msg
}

/// The wasm address of a memory fault, from wasmtime's "memory fault at wasm address
/// 0x... in linear memory of size 0x..." context.
fn fault_address(e: &wasmtime::Error) -> Option<u64> {
    e.chain().find_map(|c| {
        let s = c.to_string();
        let hex = s.strip_prefix("memory fault at wasm address 0x")?;
        let hex = hex.split(' ').next()?;
        u64::from_str_radix(hex, 16).ok()
    })
}

/// Frames (innermost first) that are a recursion: as many as wasmtime keeps of a trace
/// (it keeps a deep one's innermost), repeating with a period of at most 4 functions.
/// Names the function where the trap was.
fn recursion(frames: &[wasmtime::FrameInfo]) -> Option<String> {
    const KEPT: usize = 20; // wasmtime's default `wasm_backtrace_max_frames`.
    if frames.len() < KEPT {
        return None;
    }
    let same = |a: &wasmtime::FrameInfo, b: &wasmtime::FrameInfo| {
        a.func_index() == b.func_index() && a.module().name() == b.module().name()
    };
    (1..=4)
        .any(|period| (period..frames.len()).all(|i| same(&frames[i], &frames[i - period])))
        .then(|| match frames[0].func_name() {
            Some(name) => name.to_owned(),
            None => format!("function {}", frames[0].func_index()),
        })
}

/// `panicked: MESSAGE (at LOCATION)` from Rust's `thread '...' panicked at LOCATION:` line
/// and the message lines after it (up to the `note:` line).
fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.find("panicked at ")?;
    let rest = &stderr[start + "panicked at ".len()..];
    let (location, message) = match rest.split_once(":\n") {
        Some((loc, msg)) if !loc.contains('\n') => (loc, msg),
        // Rust before 1.73: `panicked at 'MESSAGE', LOCATION`.
        _ => return Some(format!("panicked: {}", one_line(rest))),
    };
    let message: Vec<&str> = message
        .lines()
        .take_while(|l| !l.starts_with("note: "))
        .collect();
    Some(format!(
        "panicked: {} (at {location})",
        one_line(&message.join("\n"))
    ))
}

/// The error and its causes, first line of each, without wasmtime's backtrace.
fn first_lines(e: &wasmtime::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        let first = s.lines().next().unwrap_or("").trim().trim_end_matches(':');
        if first.is_empty() || first.starts_with("error while executing at wasm backtrace") {
            continue;
        }
        if !parts.iter().any(|p| p == first) {
            parts.push(first.to_owned());
        }
    }
    parts.join(": ")
}

/// `s` on one line: lines joined with ` | `, blank ones left out.
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_reads_as_its_message_and_location() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:30:17:\nhostile plugin panics on purpose\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            panic_message(stderr).as_deref(),
            Some("panicked: hostile plugin panics on purpose (at src/lib.rs:30:17)")
        );
        let two = "thread 'main' panicked at a.rs:1:2:\nfirst\nsecond\n";
        assert_eq!(
            panic_message(two).as_deref(),
            Some("panicked: first | second (at a.rs:1:2)")
        );
        assert_eq!(panic_message("just noise"), None);
    }
}
