//! The layering design.md states ("Architecture in a page"), checked on the source: every
//! `crate::` path of the engine's non-test code goes from a module to one of the same or a
//! lower layer, the top-level modules of src/ import each other without a cycle, and no
//! workspace crate under crates/ depends on a crate above it. A failure prints each offending
//! `file:line` and its arrow.
//!
//! The check reads files, not the compiler's view: it strips comments and `#[cfg(test)]`
//! modules (tests may reach anywhere), skips test-only files, and takes the first segment
//! after `crate::` (also inside `use crate::{a, b::c}`) as the module imported. Folders and
//! crates that do not exist (src/filter and src/query once they are crates of their own) are
//! skipped, so the table may name them before and after they move.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers of the engine, lowest first: a module may import its own layer and those below.
/// Modules design.md does not name sit with the layer they serve.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "error",
            "rng",
            "coding",
            "heap",
            "huge_arena",
            "stripe",
            "read_section",
            "limits",
            "testing",
        ],
    ),
    ("filter", &["filter"]),
    (
        "storage, WAL, memtable, SST",
        &[
            "storage",
            "wal",
            "memtable",
            "sst",
            "radix",
            "ikey",
            "batch",
            "prefix",
            "merge",
            "range_del",
            "cache",
            "cache_admission",
            "filename",
            "options",
            "keyspace_options",
            "table_cache",
            "compaction_filter",
            "write_time",
        ],
    ),
    ("version, manifest, compaction", &["version", "manifest", "compaction", "filter_plan"]),
    ("Db", &["db", "txn", "ingest"]),
    ("query, tools", &["query", "inspect"]),
];

/// Files that are one module with another: `options_validate.rs` is `Options::validate`, split
/// out of options.rs for its length.
const PARTS: &[(&str, &str)] = &[("options_validate", "options")];

/// Arrows the check tolerates, each with why: `(file, module imported, reason)`.
const EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "src/testing.rs",
    "wal",
    "a re-export for tests that craft logs (`siftdb::testing::WalWriter`), not a use: \
         every layer reads testing's switches",
)];

/// Workspace crates, lowest first: a crate may depend only on crates before it.
const CRATES: &[&str] =
    &["siftdb-filter", "siftdb", "siftdb-query", "siftdb-bench-kit", "siftdb-cli"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

/// One `crate::` reference: where, and the top-level module it names.
#[derive(Debug, Clone)]
struct Arrow {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Test-only files: a `tests` folder inside src/, and `tests.rs`, `*_tests.rs`, `tests_*.rs`.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    rel.contains("/tests/")
        || name == "tests.rs"
        || name.ends_with("_tests.rs")
        || name.starts_with("tests_")
}

/// The top-level module of a file under src/ (`src/db/read.rs` -> `db`, `src/version.rs` ->
/// `version`); `None` for the crate root and the binaries.
fn module_of(rel: &str) -> Option<String> {
    let rest = rel.strip_prefix("src/")?;
    if rest == "lib.rs" || rest.starts_with("bin/") || rest == "main.rs" {
        return None;
    }
    let first = rest.split('/').next()?.trim_end_matches(".rs");
    let module = PARTS.iter().find(|(part, _)| *part == first).map_or(first, |&(_, whole)| whole);
    Some(module.to_string())
}

/// The source with comments blanked and `#[cfg(test)]` items removed, line numbers kept.
fn code_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_depth: Option<i64> = None;
    let mut pending_cfg_test = false;
    let mut in_block_comment = false;
    for raw in text.lines() {
        let mut line = String::new();
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if in_block_comment {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block_comment = false;
                }
                continue;
            }
            if c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '/' && chars.peek() == Some(&'*') {
                chars.next();
                in_block_comment = true;
                continue;
            }
            line.push(c);
        }
        let trimmed = line.trim();
        if let Some(depth) = skip_depth.as_mut() {
            *depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if *depth <= 0 && (line.contains('}') || trimmed.ends_with(';')) {
                skip_depth = None;
            }
            out.push(String::new());
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test") {
            pending_cfg_test = true;
            out.push(String::new());
            continue;
        }
        if pending_cfg_test && !trimmed.is_empty() && !trimmed.starts_with("#[") {
            pending_cfg_test = false;
            let depth = line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if depth > 0 {
                skip_depth = Some(depth);
            }
            out.push(String::new());
            continue;
        }
        out.push(line);
    }
    out
}

/// The modules named after `crate::` on a line, including each of `crate::{a, b::c}`.
fn crate_refs(line: &str) -> Vec<String> {
    let mut refs = Vec::new();
    let ident = |s: &str| -> String {
        s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    };
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `siftdb_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && !c.is_whitespace() => {
                        start = false;
                        let id = ident(&group[j..]);
                        if !id.is_empty() && id != "self" {
                            refs.push(id);
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let id = ident(rest);
            if !id.is_empty() {
                refs.push(id);
            }
        }
    }
    refs
}

/// Every `crate::` arrow between two top-level modules of src/ (non-test code).
fn arrows() -> Vec<Arrow> {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut out = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let Some(from) = module_of(&rel) else { continue };
        if is_test_file(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in code_lines(&text).iter().enumerate() {
            for to in crate_refs(line) {
                let to =
                    PARTS.iter().find(|(part, _)| *part == to).map_or(to, |(_, w)| w.to_string());
                if to != from {
                    out.push(Arrow { file: rel.clone(), line: i + 1, from: from.clone(), to });
                }
            }
        }
    }
    out
}

fn pending(a: &Arrow) -> bool {
    EXCEPTIONS.iter().any(|&(file, to, _)| a.file == file && a.to == to)
}

/// The upward arrows among `arrows` (to a higher layer), as report lines; a module the table
/// does not place is reported too, so a new module must be given a layer.
fn layer_violations(arrows: &[Arrow], present: &BTreeSet<String>) -> Vec<String> {
    let mut bad = Vec::new();
    for m in present {
        if layer_of(m).is_none() {
            bad.push(format!("src/{m}: module has no layer in tests/layering.rs's LAYERS"));
        }
    }
    for a in arrows {
        let (Some(from), Some(to)) = (layer_of(&a.from), layer_of(&a.to)) else { continue };
        if to > from && !pending(a) {
            bad.push(format!(
                "{}:{}: {} ({}) -> {} ({}) imports upward",
                a.file, a.line, a.from, LAYERS[from].0, a.to, LAYERS[to].0
            ));
        }
    }
    bad
}

/// A cycle among the modules (each arrow with one of its sites), if any.
fn find_cycle(arrows: &[Arrow]) -> Option<Vec<Arrow>> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &Arrow>> = BTreeMap::new();
    for a in arrows.iter().filter(|a| !pending(a)) {
        graph.entry(&a.from).or_default().entry(&a.to).or_insert(a);
    }
    // Depth-first search with colours: 1 on the stack, 2 done.
    fn visit<'a>(
        n: &'a str,
        graph: &BTreeMap<&'a str, BTreeMap<&'a str, &'a Arrow>>,
        colour: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a Arrow>,
    ) -> Option<Vec<Arrow>> {
        colour.insert(n, 1);
        for (&m, &a) in graph.get(n).into_iter().flatten() {
            match colour.get(m).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s.from == m).unwrap_or(stack.len());
                    let mut cycle: Vec<Arrow> = stack[start..].iter().map(|&s| s.clone()).collect();
                    cycle.push(a.clone());
                    return Some(cycle);
                }
                0 => {
                    stack.push(a);
                    if let Some(c) = visit(m, graph, colour, stack) {
                        return Some(c);
                    }
                    stack.pop();
                }
                _ => {}
            }
        }
        colour.insert(n, 2);
        None
    }
    let mut colour = BTreeMap::new();
    for &n in graph.keys() {
        if colour.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, &graph, &mut colour, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn present_modules() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    files
        .iter()
        .filter_map(|p| module_of(&p.strip_prefix(root()).unwrap().to_string_lossy()))
        .collect()
}

#[test]
fn modules_import_only_their_own_layer_and_those_below() {
    let bad = layer_violations(&arrows(), &present_modules());
    assert!(
        bad.is_empty(),
        "layering broken (design.md, \"Architecture in a page\"):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_top_level_modules_import_each_other_without_a_cycle() {
    if let Some(cycle) = find_cycle(&arrows()) {
        let lines: Vec<String> = cycle
            .iter()
            .map(|a| format!("{}:{}: {} -> {}", a.file, a.line, a.from, a.to))
            .collect();
        panic!("import cycle between top-level modules of src/:\n{}", lines.join("\n"));
    }
}

/// The workspace crates a manifest depends on (normal and build dependencies; a renamed
/// dependency by its `package`), with the line of each.
fn crate_dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut deps = Vec::new();
    let mut section = String::new();
    for (i, raw) in manifest.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            // `[dependencies.name]` names its dependency in the header.
            let table = section.rsplit_once('.').map(|(head, name)| (head.to_string(), name));
            if let Some((head, name)) = table {
                if head.ends_with("dependencies") && !head.ends_with("dev-dependencies") {
                    deps.push((i + 1, name.trim_matches('"').to_string()));
                }
            }
            continue;
        }
        let normal = section == "dependencies"
            || section == "build-dependencies"
            || (section.starts_with("target.") && section.ends_with(".dependencies"));
        if !normal || line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim().split('.').next().unwrap_or("").trim_matches('"').to_string();
        let package = value.split("package").nth(1).and_then(|v| v.split('"').nth(1));
        deps.push((i + 1, package.map_or(key, str::to_string)));
    }
    deps
}

fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && line.starts_with("name") {
            return line.split('"').nth(1).map(str::to_string);
        }
    }
    None
}

/// Upward dependencies among the workspace's crates (the root package and crates/*).
fn crate_violations(manifests: &[(String, String)]) -> Vec<String> {
    let rank = |name: &str| CRATES.iter().position(|&c| c == name);
    let mut bad = Vec::new();
    for (path, text) in manifests {
        let Some(name) = package_name(text) else { continue };
        let Some(own) = rank(&name) else { continue };
        for (line, dep) in crate_dependencies(text) {
            if rank(&dep).is_some_and(|r| r >= own) {
                bad.push(format!("{path}:{line}: crate {name} depends on {dep}, not below it"));
            }
        }
    }
    bad
}

fn workspace_manifests() -> Vec<(String, String)> {
    let root = root();
    let mut paths = vec![root.join("Cargo.toml")];
    if let Ok(dirs) = std::fs::read_dir(root.join("crates")) {
        let mut dirs: Vec<PathBuf> = dirs.filter_map(|e| e.ok().map(|e| e.path())).collect();
        dirs.sort();
        paths.extend(dirs.into_iter().map(|d| d.join("Cargo.toml")).filter(|p| p.exists()));
    }
    paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

#[test]
fn no_workspace_crate_depends_on_a_crate_above_it() {
    let bad = crate_violations(&workspace_manifests());
    assert!(bad.is_empty(), "crate layering broken:\n{}", bad.join("\n"));
}

/// The checks themselves find what they are for: an upward import, a cycle, an upward crate
/// dependency (planted in memory, never in the tree).
#[test]
fn the_checks_catch_planted_breaks() {
    let arrow = |file: &str, from: &str, to: &str| Arrow {
        file: file.into(),
        line: 7,
        from: from.into(),
        to: to.into(),
    };
    let present: BTreeSet<String> = ["sst", "db"].map(String::from).into();
    let up = layer_violations(&[arrow("src/sst/reader.rs", "sst", "db")], &present);
    assert_eq!(up.len(), 1, "{up:?}");
    assert!(up[0].starts_with("src/sst/reader.rs:7: sst"), "{up:?}");
    let unknown: BTreeSet<String> = ["newthing"].map(String::from).into();
    assert_eq!(layer_violations(&[], &unknown).len(), 1);
    let cycle = find_cycle(&[
        arrow("src/a.rs", "version", "manifest"),
        arrow("src/m/x.rs", "manifest", "version"),
    ]);
    assert_eq!(cycle.map(|c| c.len()), Some(2));
    assert!(find_cycle(&[arrow("src/a.rs", "db", "sst")]).is_none());
    let filter = "[package]\nname = \"siftdb-filter\"\n[dependencies]\nxxhash-rust = \"0.8\"\nsiftdb = { path = \"../..\" }\n[dev-dependencies]\nsiftdb = { path = \"../..\" }\n";
    let bad = crate_violations(&[("crates/siftdb-filter/Cargo.toml".into(), filter.into())]);
    assert_eq!(bad, vec!["crates/siftdb-filter/Cargo.toml:5: crate siftdb-filter depends on siftdb, not below it"]);
    let renamed = "[package]\nname = \"siftdb\"\n[dependencies]\nq = { package = \"siftdb-query\", path = \"x\" }\n";
    assert_eq!(crate_violations(&[("Cargo.toml".into(), renamed.into())]).len(), 1);
    // Comments, test modules and grouped imports.
    let code = "// crate::db\nuse crate::{sst::Table, db::X};\n#[cfg(test)]\nmod tests {\n    use crate::query;\n}\nfn f() { crate::version::f() }\n";
    let refs: Vec<Vec<String>> = code_lines(code).iter().map(|l| crate_refs(l)).collect();
    assert_eq!(refs[0], Vec::<String>::new());
    assert_eq!(refs[1], vec!["sst", "db"]);
    assert!(refs[4].is_empty());
    assert_eq!(refs[6], vec!["version"]);
}
