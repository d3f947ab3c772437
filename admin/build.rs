//! Rebuilds the crate when a migration changes: `sqlx::migrate!` embeds the files at compile time.

#![allow(clippy::print_stdout, reason = "cargo reads build-script instructions from stdout")]

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
