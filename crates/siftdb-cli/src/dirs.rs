//! What a command may do with a directory it was handed (design.md#tool-safety): the CLI
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

/// A directory a tool may keep its own database in, as [`tool_dir`] classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDir {
    /// Absent or empty: the tool creates its database and then writes its marker.
    New,
    /// The tool's marker and otherwise only siftdb's own names: an earlier run of the tool
    /// (`CURRENT` may be missing, after an interrupted run).
    Ours,
    /// A siftdb database without the tool's marker: a database the tool did not create.
    ForeignDatabase,
    /// Anything else, with the reason.
    Other(String),
}

/// Classifies `dir` for a tool whose databases carry the file `marker`, changing nothing.
pub fn tool_dir(dir: &Path, marker: &str) -> Result<ToolDir> {
    Ok(match classify(dir)? {
        DirState::Absent | DirState::Empty => ToolDir::New,
        DirState::Database => ToolDir::ForeignDatabase,
        DirState::Other(why) => {
            let names = entries(dir)?;
            let ours = names.iter().any(|n| n == marker)
                && names.iter().all(|n| n == marker || filename::parse_file_name(n).is_some());
            // The marker must be a plain file, not a link or directory planted under its name.
            let plain = std::fs::symlink_metadata(dir.join(marker)).is_ok_and(|m| m.is_file());
            let foreign =
                names.iter().find(|n| *n != marker && filename::parse_file_name(n).is_none());
            match foreign {
                _ if ours && plain => ToolDir::Ours,
                // Name what is not the tool's own, rather than its marker.
                Some(name) if names.iter().any(|n| n == marker) => {
                    ToolDir::Other(format!("it holds {name:?}, which siftdb did not create"))
                }
                _ => ToolDir::Other(why),
            }
        }
    })
}

/// Writes `marker` into `dir` (a database the tool just created), saying which tool made it.
pub fn write_marker(dir: &Path, marker: &str, tool: &str) -> Result<()> {
    let path = dir.join(marker);
    std::fs::write(&path, format!("a database created by `siftdb {tool}`\n"))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// For a tool that writes test data into `--db`-like directory `dir` but never deletes: `Ok(true)`
/// if the directory is new or empty (create the database, then [`write_marker`]), `Ok(false)`
/// if it holds an earlier run's database; any other directory, a siftdb database the tool did
/// not create included, is refused naming `marker`.
pub fn check_writable_tool_dir(dir: &Path, flag: &str, marker: &str, tool: &str) -> Result<bool> {
    let accepted = format!(
        "{tool} writes only into a new or empty directory or a database an earlier {tool} run \
         created (holding {marker})"
    );
    match tool_dir(dir, marker)? {
        ToolDir::New => Ok(true),
        ToolDir::Ours => Ok(false),
        ToolDir::ForeignDatabase => Err(refuse(
            flag,
            dir,
            &format!("it holds a siftdb database {tool} did not create (no {marker})"),
            &accepted,
        )),
        ToolDir::Other(why) => Err(refuse(flag, dir, &why, &accepted)),
    }
}

/// For a tool that kills and damages the database it runs on: `dir` must be new or empty (it
/// never runs on a database it did not just create).
pub fn check_new_or_empty(dir: &Path, flag: &str, tool: &str) -> Result<()> {
    let accepted = format!("{tool} runs only in a new or empty directory");
    match classify(dir)? {
        DirState::Absent | DirState::Empty => Ok(()),
        DirState::Database => Err(refuse(flag, dir, "it holds a siftdb database", &accepted)),
        DirState::Other(why) => Err(refuse(flag, dir, &why, &accepted)),
    }
}
