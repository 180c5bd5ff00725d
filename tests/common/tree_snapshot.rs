//! Shared by the tests that prove a tool left a directory alone (tests/db_destroy.rs,
//! crates/siftdb-cli/tests/tools_never_destroy.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `dir` (recursively) with its bytes, and every directory, so a test can
/// assert a tree is byte-identical before and after.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.insert(p.clone(), None);
                stack.push(p);
            } else {
                out.insert(p.clone(), Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    out
}
