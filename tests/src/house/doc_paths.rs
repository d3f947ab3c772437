//! Every repository path that README.md, ARCHITECTURE.md and `docs/*.md` name exists: a doc
//! that points a reader at a moved or deleted file is worse than one that says nothing.
//!
//! A path is a backticked word or a link target with a `/` that ends in a file extension or a
//! `/`. It may be written from the repository's root, from the doc's directory, or as the tail
//! of a real path (the code map writes `http/mgmt/jobs.rs` in the row of `admin/src/http/`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::{files_where, repo_root};

/// What a named file may end with.
const EXTENSIONS: [&str; 20] = [
    ".rs", ".md", ".toml", ".sql", ".sh", ".wit", ".py", ".js", ".mjs", ".json", ".yml", ".yaml", ".service",
    ".html", ".css", ".txt", ".ics", ".lock", ".conf", ".php",
];

/// Directories the daemons create at run time, which the docs name but the repository cannot
/// hold: the executor's script sources and callback spools (upstream's names), and an example
/// value of `--path-prefix`.
const RUNTIME_DIRECTORIES: [&str; 4] = ["gluesource/", "callbacklogs/", "callbacklog/", "x/"];

/// The page about upstream xxl-job, whose paths are upstream's except links to our own docs.
const UPSTREAM_PAGE: &str = "docs/upstream.md";

/// The docs whose paths are checked.
fn docs(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    files_where(&root.join("docs"), &|name| name.ends_with(".md"), &mut docs);
    docs
}

/// The backticked words and link targets of `text` that look like repository paths.
fn named_paths(text: &str) -> BTreeSet<String> {
    let mut words: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    for (at, _) in text.match_indices("](") {
        let rest = &text[at + 2..];
        words.push(&rest[..rest.find(')').unwrap_or(rest.len())]);
    }
    words
        .into_iter()
        .map(|word| word.split('#').next().unwrap_or_default().trim())
        .map(without_line_number)
        .filter(|word| looks_like_a_path(word))
        .map(str::to_owned)
        .collect()
}

/// `path` without a `:<line>` suffix.
fn without_line_number(word: &str) -> &str {
    match word.rsplit_once(':') {
        Some((path, line)) if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) => path,
        _ => word,
    }
}

fn looks_like_a_path(word: &str) -> bool {
    // `:` left after the line number is gone: an IPv6 prefix, a cron field, a URL.
    let forbidden = |c: char| c.is_whitespace() || "*<>{}…=$%?|\\'\"()[],;:".contains(c);
    word.contains('/')
        && !word.contains("://")
        && !word.starts_with(['/', '~', '-'])
        && !word.contains(forbidden)
        && (word.ends_with('/') || EXTENSIONS.iter().any(|ext| word.ends_with(ext)))
}

/// Every file and directory of the repository, relative to its root with `/` separators.
fn repository_paths(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    files_where(root, &|_| true, &mut files);
    let mut all = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
        let mut dir = relative.as_str();
        while let Some(cut) = dir.rfind('/') {
            dir = &dir[..cut];
            all.insert(format!("{dir}/"));
        }
        all.insert(relative);
    }
    all.into_iter().collect()
}

/// Whether `named` (in `doc`) is a path of the repository.
fn resolves(named: &str, doc: &Path, root: &Path, paths: &[String]) -> bool {
    if named.starts_with("target/") || RUNTIME_DIRECTORIES.contains(&named) {
        return true;
    }
    let exists = |base: &Path| base.join(named).exists();
    exists(root)
        || doc.parent().is_some_and(exists)
        || paths.iter().any(|path| path.ends_with(&format!("/{named}")))
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = repo_root().canonicalize().expect("the repository root");
    let paths = repository_paths(&root);
    let mut checked = 0;
    let mut missing = Vec::new();
    for doc in docs(&root) {
        let text = std::fs::read_to_string(&doc).expect("a readable doc");
        let upstream_page = doc.ends_with(UPSTREAM_PAGE);
        for named in named_paths(&text) {
            if upstream_page && !named.starts_with("docs/") {
                continue;
            }
            checked += 1;
            if !resolves(&named, &doc, &root, &paths) {
                let outside = if named.contains("shared/") { " (outside this repository)" } else { "" };
                missing.push(format!(
                    "{}: `{named}`{outside}",
                    doc.strip_prefix(&root).unwrap_or(&doc).display()
                ));
            }
        }
    }
    assert!(checked > 200, "only {checked} paths found in the docs");
    assert!(missing.is_empty(), "the docs name paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn paths_are_told_from_other_words() {
    let text = "see `admin/src/app.rs:12`, [tests](docs/testing.md#cold), `/api/v1/jobs`, \
        `Path=/`, `{yyyy-MM-dd}/{logId}.log`, `10.0.0.0/8`, `fd00::/8`, `store/`, `a b/c.rs` and `https://x.org/a.md`";
    let expected: BTreeSet<String> =
        ["admin/src/app.rs", "docs/testing.md", "store/"].map(String::from).into();
    assert_eq!(named_paths(text), expected);
}
