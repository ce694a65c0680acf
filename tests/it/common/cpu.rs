//! CPU time, for the tests that bound work rather than measure it. Wall time on a loaded 2-core
//! machine is the machine's doing (CI saw these runs take 2-5 times their idle time at load
//! 15-78); the CPU a run spends is its own. "Benchmarks are benchmarks, not timed tests": a
//! bound here stands for a behaviour (bounded work, not the minutes the unbounded input took).

use std::time::Duration;

/// The CPU time (user + system) of every child process this test process has waited for: the
/// plugin (kubectl execs it), the probe's shell and its tools. Under nextest (the project's test
/// command, one process per test) that is this test's children only; under `cargo test` tests
/// run as threads of one process and another test's children count too: more than the run's
/// own, so a bound that holds under nextest may fail there.
pub fn children_cpu_time() -> Duration {
    // SAFETY: getrusage writes one rusage into the one we pass; RUSAGE_CHILDREN always exists.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_CHILDREN)");
    let of = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1_000);
    of(ru.ru_utime) + of(ru.ru_stime)
}
