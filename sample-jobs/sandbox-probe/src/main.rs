//! Tries to reach the host (files, environment, network, processes) and succeeds only if
//! every attempt was denied; each attempt is logged with the error the sandbox gave. The same
//! source builds as a preview1 module and as a WASI 0.2 component (where `std::net` is
//! `wasi:sockets`, linked but denied); a job parameter `host:port` adds a TCP connect to it.

use jobwheel_guest_sdk::{log, report};

/// One escape attempt: a description and whether it got through.
fn probe(what: &str, attempt: impl FnOnce() -> Result<String, String>, escapes: &mut Vec<String>) {
    match attempt() {
        Ok(got) => {
            log!("ESCAPED: {what}: {got}");
            escapes.push(what.to_owned());
        }
        Err(denied) => log!("denied: {what}: {denied}"),
    }
}

fn ok_or_denied<T>(result: std::io::Result<T>, got: impl FnOnce(T) -> String) -> Result<String, String> {
    result.map(got).map_err(|e| e.to_string())
}

jobwheel_guest_sdk::main!(|ctx| {
    let mut escapes = Vec::new();
    let mut probes = 10;
    if !ctx.param().is_empty() {
        probes += 1;
        probe(
            &format!("TCP connect {}", ctx.param()),
            || ok_or_denied(std::net::TcpStream::connect(ctx.param()), |_| "connected".to_owned()),
            &mut escapes,
        );
    }
    probe(
        "read /etc/passwd",
        || ok_or_denied(std::fs::read("/etc/passwd"), |b| format!("{} bytes", b.len())),
        &mut escapes,
    );
    probe(
        "list /",
        || ok_or_denied(std::fs::read_dir("/"), |_| "directory listing".to_owned()),
        &mut escapes,
    );
    probe(
        "list .",
        || ok_or_denied(std::fs::read_dir("."), |_| "directory listing".to_owned()),
        &mut escapes,
    );
    probe(
        "create /tmp/jobwheel-probe",
        || ok_or_denied(std::fs::File::create("/tmp/jobwheel-probe"), |_| "created".to_owned()),
        &mut escapes,
    );
    probe(
        "host environment variables",
        || {
            let foreign: Vec<String> =
                std::env::vars().map(|(k, _)| k).filter(|k| !k.starts_with("JOBWHEEL_")).collect();
            if foreign.is_empty() {
                Err("only JOBWHEEL_* variables are visible".to_owned())
            } else {
                Ok(foreign.join(", "))
            }
        },
        &mut escapes,
    );
    probe("read $PATH", || std::env::var("PATH").map_err(|e| e.to_string()), &mut escapes);
    probe(
        "TCP connect 127.0.0.1:22",
        || ok_or_denied(std::net::TcpStream::connect("127.0.0.1:22"), |_| "connected".to_owned()),
        &mut escapes,
    );
    probe(
        "TCP listen 0.0.0.0:8080",
        || ok_or_denied(std::net::TcpListener::bind("0.0.0.0:8080"), |_| "listening".to_owned()),
        &mut escapes,
    );
    probe(
        "UDP bind 0.0.0.0:0",
        || ok_or_denied(std::net::UdpSocket::bind("0.0.0.0:0"), |_| "bound".to_owned()),
        &mut escapes,
    );
    probe(
        "spawn sh",
        || ok_or_denied(std::process::Command::new("sh").arg("-c").arg("id").output(), |o| format!("{o:?}")),
        &mut escapes,
    );

    if escapes.is_empty() {
        report(&format!("all {probes} probes were denied"));
        Ok(())
    } else {
        Err(format!("sandbox escapes: {}", escapes.join("; ")))
    }
});
