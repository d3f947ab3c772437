//! The admin's top-level modules (`admin/src/<name>.rs` or `admin/src/<name>/`) import one
//! another without a circle, so each can be read, tested and changed from the ground up: a
//! circle once tied 38 files together (the HTTP edge, the engine, metrics, the token store) and
//! no layer could be understood without the others.
//!
//! The same holds one level down, between folders (`http/mgmt/`, `http/mcp/`, `store/sql/`, …):
//! a folder may use its ancestors' items (that is how a Rust module tree is built), but two
//! folders, or a folder and a top-level module, never import each other round a circle — the
//! HTTP edge's rooms were once tied by one token type the management room took from MCP's.
//!
//! Inside the engine, one step further, its files import one another without a circle: each
//! role depends on another only one way, and what several share (a fire, trigger times, a
//! resolved trigger) lives below them (`mod.rs`, the facade that wires them, is left out).
//!
//! An edge is any `crate::<module>` path in a file's code (comments are left out); between
//! folders also `super::` paths. A test of source text rather than of the compiler's view: it
//! needs no extra tool, and imports are how this crate names its dependencies (no glob
//! re-exports across modules).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{repo_root, rust_files};

/// `module → (module it uses → files that use it)`.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The top-level module a file of `admin/src` belongs to (`None` for the crate roots).
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

/// The code of a file without its `//` comments (doc comments included).
fn without_comments(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

/// The modules `code` names through `crate::`: `crate::a::…` and each item of `crate::{a, b::c}`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                out.insert(leading_ident(item.trim()));
            }
        } else {
            out.insert(leading_ident(rest));
        }
    }
    out.retain(|name| !name.is_empty());
    out
}

fn leading_ident(text: &str) -> String {
    text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

fn admin_graph() -> Graph {
    let src = repo_root().join("admin/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> =
        files.iter().filter_map(|file| top_module(file.strip_prefix(&src).ok()?)).collect();
    let mut graph = Graph::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under admin/src");
        let Some(from) = top_module(relative) else { continue };
        let code = without_comments(&std::fs::read_to_string(&file).expect("readable source"));
        for to in named_modules(&code) {
            if to != from && modules.contains(&to) {
                let uses = graph.entry(from.clone()).or_default();
                uses.entry(to).or_default().insert(relative.display().to_string());
            }
        }
    }
    graph
}

/// A circle of `graph`, as the modules along it, if there is one (depth-first search).
fn find_circle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node.to_owned());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

/// The module path of a file of `admin/src` (`http/mgmt/mod.rs` → `[http, mgmt]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> =
        relative.components().filter_map(|c| c.as_os_str().to_str()).map(str::to_owned).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_owned());
    }
    parts
}

/// The absolute module paths `code`, written in the module at `here`, names through `crate::`
/// or `super::` (each item of a `{…}` group at the first level is a path of its own).
fn named_paths(code: &str, here: &[String]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    for (start, _) in code.char_indices() {
        let at_word = start == 0
            || !(bytes[start - 1].is_ascii_alphanumeric()
                || bytes[start - 1] == b'_'
                || bytes[start - 1] == b':');
        if !at_word || !(code[start..].starts_with("crate::") || code[start..].starts_with("super::")) {
            continue;
        }
        let mut base: Vec<String> = here.to_vec();
        let mut rest = &code[start..];
        if let Some(after) = rest.strip_prefix("crate::") {
            base.clear();
            rest = after;
        } else {
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
        }
        let mut prefix = base;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let mut path = prefix.clone();
                    path.extend(item.trim().split("::").map(leading_ident).filter(|s| !s.is_empty()));
                    out.insert(path);
                }
                break;
            }
            let ident = leading_ident(rest);
            if ident.is_empty() {
                out.insert(prefix.clone());
                break;
            }
            prefix.push(ident.clone());
            rest = &rest[ident.len()..];
            match rest.strip_prefix("::") {
                Some(after) => rest = after,
                None => {
                    out.insert(prefix.clone());
                    break;
                }
            }
        }
    }
    out
}

/// The folder (or top-level file module) a module path lives in: its longest prefix that is a
/// folder of `admin/src`, else its first segment.
fn folder_of(path: &[String], folders: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("/"))
        .find(|prefix| folders.contains(prefix))
        .or_else(|| path.first().cloned())
}

/// `folder → (folder or top-level module it uses → files that use it)`, leaving out what a
/// folder takes from its own ancestors.
fn folder_graph() -> Graph {
    let src = repo_root().join("admin/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let relative: Vec<_> =
        files.iter().map(|f| f.strip_prefix(&src).expect("under admin/src").to_path_buf()).collect();
    let folders: BTreeSet<String> = relative
        .iter()
        .filter_map(|r| r.parent())
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    let mut graph = Graph::new();
    for (file, relative) in files.iter().zip(&relative) {
        let here = module_path(relative);
        let Some(from) = folder_of(&here, &folders) else { continue };
        let code = without_comments(&std::fs::read_to_string(file).expect("readable source"));
        for path in named_paths(&code, &here) {
            let Some(to) = folder_of(&path, &folders) else { continue };
            let ancestor = from.starts_with(&format!("{to}/"));
            if to != from
                && !ancestor
                && (folders.contains(&to) || to.chars().all(|c| c.is_alphanumeric() || c == '_'))
            {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    graph
}

/// Panics naming the circle of `graph`, if it has one, with the files behind each arrow.
fn assert_no_circle(graph: &Graph, what: &str) {
    if let Some(circle) = find_circle(graph) {
        let edges: Vec<String> = circle
            .windows(2)
            .map(|pair| {
                let files = &graph[&pair[0]][&pair[1]];
                format!(
                    "{} -> {} (in {})",
                    pair[0],
                    pair[1],
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            })
            .collect();
        panic!("{what} import each other in a circle:\n{}", edges.join("\n"));
    }
}

/// `file → (file of the same folder it uses → itself)` for the files of `admin/src/<folder>`
/// but its `mod.rs`: a `super::<file>` path, or `crate::<folder>::<file>`.
fn file_graph(folder: &str) -> Graph {
    let dir = repo_root().join("admin/src").join(folder);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let stem = |file: &Path| file.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
    let names: BTreeSet<String> = files.iter().map(|f| stem(f)).filter(|n| n != "mod").collect();
    let mut graph = Graph::new();
    for file in &files {
        let from = stem(file);
        if from == "mod" {
            continue;
        }
        let here: Vec<String> = folder.split('/').map(str::to_owned).chain([from.clone()]).collect();
        let code = without_comments(&std::fs::read_to_string(file).expect("readable source"));
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for path in named_paths(code, &here) {
            let Some(to) = path.get(here.len() - 1).filter(|_| path.starts_with(&here[..here.len() - 1]))
            else {
                continue;
            };
            if *to != from && names.contains(to) {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_default()
                    .insert(format!("{from}.rs"));
            }
        }
    }
    graph
}

#[test]
fn the_engines_files_import_one_another_without_a_circle() {
    let graph = file_graph("engine");
    assert!(graph.len() > 25, "found only {} engine files that import others", graph.len());
    assert_no_circle(&graph, "the engine's files");
}

#[test]
fn the_admins_folders_import_one_another_without_a_circle() {
    let graph = folder_graph();
    assert!(
        graph.contains_key("http/mcp") && graph.contains_key("http/mgmt"),
        "folders not found: {:?}",
        graph.keys()
    );
    assert_no_circle(&graph, "the admin's folders");
}

#[test]
fn the_admins_modules_import_one_another_without_a_circle() {
    let graph = admin_graph();
    assert!(graph.len() > 15, "found only {} modules that import others", graph.len());
    assert_no_circle(&graph, "the admin's modules");
}

#[test]
fn a_circle_is_found_and_named() {
    let mut graph = Graph::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        graph.entry(from.into()).or_default().entry(to.into()).or_default().insert(format!("{from}.rs"));
    }
    assert_eq!(find_circle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    graph.get_mut("c").expect("c").remove("a");
    assert_eq!(find_circle(&graph), None);
    assert_eq!(
        named_modules("use crate::{alarm::Mail, lang};\nlet x = crate::store::Backend::Sqlite;"),
        ["alarm", "lang", "store"].map(String::from).into()
    );
    let here = ["http".to_owned(), "mcp".to_owned()];
    let paths = named_paths("use super::mgmt::auth::{bearer, digest};\nuse crate::store::Store;", &here);
    let expected: BTreeSet<Vec<String>> = [
        vec!["http", "mgmt", "auth", "bearer"],
        vec!["http", "mgmt", "auth", "digest"],
        vec!["store", "Store"],
    ]
    .map(|p| p.into_iter().map(String::from).collect())
    .into();
    assert_eq!(paths, expected);
}
