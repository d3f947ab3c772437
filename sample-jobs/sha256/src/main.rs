//! CPU-bound real work for the fuel-overhead benchmark: SHA-256 over the parameter's number
//! of MiB (default 64) of deterministic pseudo-random data generated in 64 KiB chunks.

use jobwheel_guest_sdk::{log, report};
use sha2::{Digest, Sha256};

jobwheel_guest_sdk::main!(|ctx| {
    let mib: usize = match ctx.param().trim() {
        "" => 64,
        text => text.parse().map_err(|_| format!("parameter {text:?} is not a number of MiB"))?,
    };
    let mut hasher = Sha256::new();
    let mut chunk = vec![0u8; 64 << 10];
    // xorshift64: cheap next to SHA-256, so the hash dominates the run time.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..mib * 16 {
        for word in chunk.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            word.copy_from_slice(&state.to_le_bytes());
        }
        hasher.update(&chunk);
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    log!("sha256 of {mib} MiB: {digest}");
    report(&digest);
    Ok::<(), String>(())
});
