//! Writes a format fixture: a small database produced by this build from the fixed history in
//! tests/fixtures/history.rs. Run once per new on-disk format version and commit the output as
//! tests/fixtures/format_vN, so tests/format_fixtures.rs proves every later build opens it:
//!
//! ```sh
//! cargo run --release --example format_fixture -- tests/fixtures/format_v4 4
//! ```
//!
//! Refuses a path that already exists: it never writes into a directory it did not create.

use siftdb::Db;

include!("../tests/fixtures/history.rs");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: format_fixture OUT_DIR [FORMAT_VERSION] (OUT_DIR must not exist)";
    let out = std::env::args().nth(1).ok_or(usage)?;
    let version: u32 = match std::env::args().nth(2) {
        Some(v) => v.parse().map_err(|_| usage)?,
        None => LATEST_FIXTURE,
    };
    let out = std::path::Path::new(&out);
    if out.exists() {
        return Err(format!("{} exists; give a new path", out.display()).into());
    }
    let db = Db::open(out, fixture_options(version))?;
    write_fixture_history(&db, version)?;
    let stats = db.stats();
    drop(db);
    // The lock file is recreated by every open; a fixture does not need it.
    let _ = std::fs::remove_file(out.join("LOCK"));
    let files: Vec<_> =
        std::fs::read_dir(out)?.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>()?;
    println!(
        "wrote {} ({} files, {} flushes, {} compactions)",
        out.display(),
        files.len(),
        stats.flushes,
        stats.compactions
    );
    Ok(())
}
