//! What a command may do with a directory it was handed (design.md, "Safety of tools"): the CLI
//! writes only into a new or empty directory or one holding its own output, and deletes only a
//! siftdb database, through `Db::destroy` (which itself deletes only siftdb's file names).

use siftdb::inspect::filename;
use siftdb::{Error, Result};
use std::path::Path;

/// What a directory holds, as far as the tools are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirState {
    /// Nothing exists at the path.
    Absent,
    /// An empty directory.
    Empty,
    /// A siftdb database and nothing else: a `CURRENT` file, and only names siftdb produces.
    Database,
    /// Anything else, with the reason ("it holds \"precious.txt\"").
    Other(String),
}

/// The names of the entries of directory `dir`, sorted; entries whose names are not UTF-8 are
/// shown lossily (they are never siftdb's).
pub fn entries(dir: &Path) -> Result<Vec<String>> {
    let rd =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
    let mut names = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("listing {}", dir.display()), e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Classifies `dir` without changing anything.
pub fn classify(dir: &Path) -> Result<DirState> {
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(DirState::Absent),
        Err(e) => return Err(Error::io(format!("inspecting {}", dir.display()), e)),
    };
    if !meta.is_dir() {
        return Ok(DirState::Other("it is not a directory".into()));
    }
    let names = entries(dir)?;
    if names.is_empty() {
        return Ok(DirState::Empty);
    }
    if let Some(foreign) = names.iter().find(|n| filename::parse_file_name(n).is_none()) {
        return Ok(DirState::Other(format!("it holds {foreign:?}, which siftdb did not create")));
    }
    if !names.iter().any(|n| n == filename::CURRENT) {
        return Ok(DirState::Other(format!(
            "it holds siftdb-named files but no {} (a damaged database?)",
            filename::CURRENT
        )));
    }
    Ok(DirState::Database)
}

/// The one-line refusal for `--flag DIR` that holds something the command must not touch.
pub fn refuse(flag: &str, dir: &Path, why: &str, what_is_accepted: &str) -> Error {
    Error::InvalidArgument(format!(
        "refusing to use {flag} {}: {why}; {what_is_accepted}",
        dir.display()
    ))
}
