//! ARCHITECTURE.md stays a map: short enough to read in one sitting (35 KB; it once grew to
//! 54 KB with plans and benchmark numbers that belong in docs/), and complete where a newcomer
//! looks first — every folder of the three crates' sources and every file of the engine is named
//! in it (a file added to `engine/` without a line in the map once went unnoticed for weeks).
//! That the paths it names exist is `doc_paths`' rule.

use std::path::Path;

use super::repo_root;

/// The most ARCHITECTURE.md may weigh, in bytes: 35 KB as the issue that set it counts them
/// (35 000, not 35 KiB).
const MAX_BYTES: usize = 35_000;

/// The source trees whose every folder the map names.
const SOURCE_TREES: [&str; 4] = ["admin/src", "executor/src", "wasm/src", "protocol/src"];

/// The folder whose every file the map names: the engine's roles live in files, not folders.
const EVERY_FILE_OF: &str = "admin/src/engine";

fn architecture() -> String {
    std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

/// The folders under `dir`, relative to `base` with `/` separators.
fn folders(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            out.push(path.strip_prefix(base).expect("under base").to_string_lossy().replace('\\', "/"));
            folders(&path, base, out);
        }
    }
}

/// Whether the map names `folder` (a path under a source tree) in backticks: as its whole path,
/// or as a tail of it, each with a trailing `/` (`admin/src/http/`, `http/mgmt/`, `net/`).
fn names_folder(map: &str, tree: &str, folder: &str) -> bool {
    let whole = format!("`{tree}/{folder}/`");
    let mut tails = folder.split('/').rev().scan(String::new(), |tail, part| {
        *tail = if tail.is_empty() { format!("{part}/") } else { format!("{part}/{tail}") };
        Some(tail.clone())
    });
    map.contains(&whole) || tails.any(|tail| map.contains(&format!("`{tail}`")))
}

#[test]
fn the_map_is_at_most_35_kb() {
    let bytes = architecture().len();
    assert!(
        bytes <= MAX_BYTES,
        "ARCHITECTURE.md is {bytes} bytes, over {MAX_BYTES}: move plans and numbers to docs/"
    );
}

#[test]
fn the_map_names_every_source_folder_and_every_engine_file() {
    let root = repo_root();
    let map = architecture();
    let mut unnamed = Vec::new();
    for tree in SOURCE_TREES {
        let mut found = Vec::new();
        folders(&root.join(tree), &root.join(tree), &mut found);
        unnamed.extend(found.iter().filter(|f| !names_folder(&map, tree, f)).map(|f| format!("{tree}/{f}/")));
    }
    let engine = std::fs::read_dir(root.join(EVERY_FILE_OF)).expect("the engine folder");
    let mut files = 0;
    for entry in engine {
        let name = entry.expect("directory entry").file_name().to_string_lossy().into_owned();
        files += 1;
        if !map.contains(&format!("`{name}`")) && !map.contains(&format!("/{name}`")) {
            unnamed.push(format!("{EVERY_FILE_OF}/{name}"));
        }
    }
    assert!(files > 20, "found only {files} engine files");
    assert!(unnamed.is_empty(), "ARCHITECTURE.md's code map does not name:\n{}", unnamed.join("\n"));
}

#[test]
fn a_folder_is_named_by_its_path_or_its_tail() {
    let map = "the `http/mgmt/` room and `admin/src/store/sql/` and `net/`";
    assert!(names_folder(map, "admin/src", "http/mgmt"));
    assert!(names_folder(map, "admin/src", "store/sql"));
    assert!(names_folder(map, "wasm/src", "net"));
    assert!(!names_folder(map, "admin/src", "http"));
    assert!(!names_folder(map, "admin/src", "routing"));
}
