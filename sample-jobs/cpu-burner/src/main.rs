//! Spins forever without any system call: only fuel-based yielding lets the executor's
//! timeout or kill stop it.

use jobwheel_guest_sdk::log;

jobwheel_guest_sdk::main!(|_ctx| {
    log!("burning CPU until stopped");
    let mut x: u64 = 1;
    // Endless in practice (2^64 iterations), and a `for` keeps the closure's type `()`.
    for _ in 0u64.. {
        // `black_box` keeps the optimizer from proving the loop useless.
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
    }
});
