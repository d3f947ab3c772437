//! Writes the parameter's number of MiB (default 16) to stdout as 1 KiB lines, to show that
//! the job log is bounded; succeeds afterwards.

use std::io::Write;

use jobwheel_guest_sdk::report;

jobwheel_guest_sdk::main!(|ctx| {
    let mib: usize = match ctx.param().trim() {
        "" => 16,
        text => text.parse().map_err(|_| format!("parameter {text:?} is not a number of MiB"))?,
    };
    let line = format!("{}\n", "flood ".repeat(170));
    let mut out = std::io::stdout().lock();
    let mut written = 0;
    while written < mib << 20 {
        out.write_all(line.as_bytes()).map_err(|e| format!("stdout write failed: {e}"))?;
        written += line.len();
    }
    drop(out);
    report(&format!("wrote {written} bytes"));
    Ok::<(), String>(())
});
