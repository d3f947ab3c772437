//! House rules checked as tests: every Rust file of the workspace opens with a `//!` line that
//! says what the file is (rust-analyzer's tidy test, and how a newcomer finds their way), the
//! store never reads the clock, the admin's modules import one another without a circle
//! (`module_graph`), every repository path the docs name exists (`doc_paths`), ARCHITECTURE.md
//! stays a map that names every source folder (`architecture`), and nothing but
//! the CI entry point reaches outside the clone (a user's clone has nothing beside it).

#[cfg(test)]
mod architecture;
#[cfg(test)]
mod doc_paths;
#[cfg(test)]
mod module_graph;

/// The workspace's root directory.
#[cfg(test)]
fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Directories that hold no source of ours.
#[cfg(test)]
const SKIPPED: [&str; 4] = ["target", ".git", "node_modules", "corpus"];

/// Every file under `dir` (outside [`SKIPPED`] and hidden directories) whose name ends with
/// `.rs`.
#[cfg(test)]
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    files_where(dir, &|name| name.ends_with(".rs"), out);
}

/// Every file under `dir` (outside [`SKIPPED`] and hidden directories) whose name `keep` accepts.
#[cfg(test)]
fn files_where(dir: &std::path::Path, keep: &dyn Fn(&str) -> bool, out: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !SKIPPED.contains(&name) && !name.starts_with('.') {
                files_where(&path, keep, out);
            }
        } else if keep(name) {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{files_where, repo_root, rust_files};

    /// README's test command must pass in a clone with nothing beside it: only `.ci/run` (which
    /// looks for the advisory database there, and goes on without it) may name the folder
    /// the development machine keeps beside the repository.
    #[test]
    fn no_file_but_the_ci_entry_point_names_the_folder_beside_the_clone() {
        let root = repo_root();
        let needle = ["..", "/shared"].concat();
        let mut files = Vec::new();
        files_where(&root, &|_| true, &mut files);
        assert!(files.len() > 200, "found only {} files under {}", files.len(), root.display());
        let naming: Vec<String> = files
            .iter()
            .filter(|path| {
                std::fs::read(path).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&needle))
            })
            .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
            .collect();
        assert!(
            naming.is_empty(),
            "these files name {needle}, which a user's clone does not have:\n{}",
            naming.join("\n")
        );
    }

    #[test]
    fn every_rust_file_opens_with_a_module_doc_line() {
        let root = repo_root();
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(files.len() > 100, "found only {} .rs files under {}", files.len(), root.display());
        let missing: Vec<String> = files
            .iter()
            .filter(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                !text.trim_start().starts_with("//!")
            })
            .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
            .collect();
        assert!(missing.is_empty(), "these files do not open with a `//!` line:\n{}", missing.join("\n"));
    }

    /// The clock reads a folder's code may not make (timing a statement or a request with a
    /// stopwatch is not reading the clock; the admin's is `metrics::Stopwatch`).
    const CLOCK_READS: [&str; 4] = ["Utc::now", "Local::now", "SystemTime::now", "Instant::now"];

    /// The files under `folder` whose code before their test module reads one of `reads`.
    fn files_reading_the_clock(folder: &str, reads: &[&str]) -> (usize, Vec<String>) {
        let root = repo_root();
        let mut files = Vec::new();
        rust_files(&root.join(folder), &mut files);
        let readers = files
            .iter()
            .filter(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                reads.iter().any(|call| code.contains(call))
            })
            .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
            .collect();
        (files.len(), readers)
    }

    /// ARCHITECTURE.md's invariant: every time the store writes is a parameter, so the engine's
    /// tests control time completely. (Timing a statement with `Instant` is not reading it.)
    #[test]
    fn the_store_never_reads_the_clock() {
        let (count, readers) = files_reading_the_clock("admin/src/store", &CLOCK_READS[..3]);
        assert!(count > 20, "found only {count} store files");
        assert!(readers.is_empty(), "these store files read the clock:\n{}", readers.join("\n"));
    }

    /// The HTTP edge reads time only through its state's clock (the core's), so a test with a
    /// manual clock steps stamps, expiries and throttle windows alike.
    #[test]
    fn the_http_edge_reads_time_only_through_its_clock() {
        let (count, readers) = files_reading_the_clock("admin/src/http", &CLOCK_READS);
        assert!(count > 40, "found only {count} files of the HTTP edge");
        assert!(readers.is_empty(), "these files of the HTTP edge read the clock:\n{}", readers.join("\n"));
    }

    /// Each room of the HTTP edge takes its own state (`FromRef`); only `http/mod.rs`, which
    /// hands the rooms their parts, and the rooms' routers, typed by it, name the whole.
    #[test]
    fn the_rooms_of_the_http_edge_take_only_their_own_state() {
        let root = repo_root();
        let mut files = Vec::new();
        for room in ["executor_api", "mgmt", "mcp"] {
            rust_files(&root.join("admin/src/http").join(room), &mut files);
        }
        assert!(files.len() > 40, "found only {} files in the rooms", files.len());
        let offenders: Vec<String> = files
            .iter()
            .filter(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                text.lines()
                    .filter(|line| !line.starts_with("use "))
                    .any(|line| line.replace("Router<HttpState>", "").contains("HttpState"))
            })
            .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
            .collect();
        assert!(
            offenders.is_empty(),
            "these files of a room use the whole edge's state:\n{}",
            offenders.join("\n")
        );
    }
}
