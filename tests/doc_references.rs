//! Every reference from a code comment to a document section resolves.
//!
//! Comments cite sections by anchor: `design.md#read-path`, `docs/format.md#sst-footer`
//! (any `docs/*.md` file). Each anchor must exist in the cited document as
//! `<a id="...">`. The older free-text form (the document's name, then a heading in quotes)
//! must name a heading of design.md. The walk covers every `.rs` file of the repository, skipping `target` and
//! `.git`, so a renamed or removed section fails here instead of leaving a dangling pointer.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && name != ".git" && !name.starts_with("target-") {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The comment text of a file: each comment line's text after its marker, lines joined by
/// spaces (so a citation broken across two comment lines reads as one), code lines as a
/// separator that no citation crosses.
fn comment_text(source: &str) -> String {
    let mut text = String::new();
    for line in source.lines() {
        let trimmed = line.trim_start();
        let rest = trimmed
            .strip_prefix("//!")
            .or_else(|| trimmed.strip_prefix("///"))
            .or_else(|| trimmed.strip_prefix("//"));
        match rest {
            Some(rest) => {
                text.push_str(rest.trim());
                text.push(' ');
            }
            None => text.push('\u{0}'),
        }
    }
    text
}

/// The anchors a document defines: every `<a id="...">`.
fn anchors(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = doc;
    while let Some(i) = rest.find("<a id=\"") {
        rest = &rest[i + 7..];
        let end = rest.find('"').expect("an unterminated anchor id");
        out.insert(rest[..end].to_string());
    }
    out
}

/// The headings of a document, without their `#` marks.
fn headings(doc: &str) -> BTreeSet<String> {
    doc.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .collect()
}

fn is_anchor_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

/// Every `doc#anchor` citation in `text`, for documents named `design.md` or `docs/*.md`.
fn anchor_citations(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(".md#") {
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-'))
            .map_or(0, |j| j + 1);
        let doc = &text[start..i + 3];
        let anchor: String = text[i + 4..].chars().take_while(|&c| is_anchor_char(c)).collect();
        if doc == "design.md" || (doc.starts_with("docs/") && !doc.contains("results")) {
            out.push((doc.to_string(), anchor));
        }
    }
    out
}

/// Every old-style citation in `text`: the document's name, a comma or `'s`, a quoted heading.
fn free_text_citations(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("design.md") {
        let after = &text[i + "design.md".len()..];
        let after = after.strip_prefix('`').unwrap_or(after);
        let after = after.strip_prefix("'s").unwrap_or(after);
        let after = after.trim_start_matches([' ', ',', '(']);
        let after = after.strip_prefix("section ").unwrap_or(after);
        if let Some(quoted) = after.strip_prefix('"') {
            if let Some(end) = quoted.find('"') {
                out.push(quoted[..end].to_string());
            }
        }
    }
    out
}

#[test]
fn every_section_cited_from_code_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |doc: &str| {
        fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc} is cited: {e}"))
    };
    let design_headings = headings(&read("design.md"));
    let mut files = Vec::new();
    rust_files(root, &mut files);
    assert!(files.len() > 100, "the walk found only {} .rs files", files.len());

    let mut citations = 0;
    let mut broken = Vec::new();
    for file in &files {
        let text = comment_text(&fs::read_to_string(file).unwrap());
        let shown = file.strip_prefix(root).unwrap().display();
        for (doc, anchor) in anchor_citations(&text) {
            citations += 1;
            if anchor.is_empty() || !anchors(&read(&doc)).contains(&anchor) {
                broken.push(format!("{shown}: {doc}#{anchor}"));
            }
        }
        for name in free_text_citations(&text) {
            citations += 1;
            if !design_headings.contains(&name) {
                broken.push(format!("{shown}: design.md, \"{name}\" (not a heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "citations of missing sections:\n{}", broken.join("\n"));
    assert!(citations > 100, "only {citations} citations found: the scan is broken");
}

#[test]
fn the_scanner_sees_both_forms_across_lines() {
    let text = comment_text(
        "/// read (design.md#read-path) and (docs/format.md#sst-footer), and design.md,\n\
         /// \"Old name\"\nfn x() {}\n// design.md's \"Other\"",
    );
    assert_eq!(
        anchor_citations(&text),
        [
            ("design.md".to_string(), "read-path".to_string()),
            ("docs/format.md".to_string(), "sst-footer".to_string())
        ]
    );
    assert_eq!(free_text_citations(&text), ["Old name", "Other"]);
    let doc = "<a id=\"sst-footer\"></a>\n\n## Footer\n";
    assert!(anchors(doc).contains("sst-footer"));
    assert!(headings(doc).contains("Footer"));
}
