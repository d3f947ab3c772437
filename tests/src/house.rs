//! House rules checked as tests: every Rust file of the workspace opens with a `//!` line that
//! says what the file is (rust-analyzer's tidy test, and how a newcomer finds their way).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Directories that hold no source of ours.
    const SKIPPED: [&str; 4] = ["target", ".git", "node_modules", "corpus"];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() {
                if !SKIPPED.contains(&name) && !name.starts_with('.') {
                    rust_files(&path, out);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_rust_file_opens_with_a_module_doc_line() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
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
}
