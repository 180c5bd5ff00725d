//! Writes a query-layer fixture: a small database holding the table of
//! tests/fixtures/query_history.rs, written by this build. Run once per new query-layer storage
//! version and commit the output as tests/fixtures/query_vN, so tests/query_fixtures.rs proves
//! every later build still reads it:
//!
//! ```sh
//! cargo run --release -p siftdb-query --example query_fixture -- crates/siftdb-query/tests/fixtures/query_v2
//! ```
//!
//! Refuses a path that already exists: it never writes into a directory it did not create.

use siftdb::{Db, Options};
use siftdb_query::{Table, TableOptions};

include!("../tests/fixtures/query_history.rs");

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: query_fixture OUT_DIR (OUT_DIR must not exist)";
    let out = std::env::args().nth(1).ok_or(usage)?;
    let out = std::path::Path::new(&out);
    if out.exists() {
        return Err(format!("{} exists; give a new path", out.display()).into());
    }
    let db = Db::open(out, Options::default())?;
    let opts =
        TableOptions { chunk_rows: QUERY_FIXTURE_CHUNK_ROWS, page_rows: QUERY_FIXTURE_PAGE_ROWS };
    let mut t = Table::create(&db, QUERY_FIXTURE_TABLE, query_fixture_schema(), opts)?;
    t.append(&query_fixture_columns())?;
    let chunks = t.chunks().len();
    drop(t);
    db.flush()?;
    drop(db);
    // The lock file is recreated by every open; a fixture does not need it.
    let _ = std::fs::remove_file(out.join("LOCK"));
    println!("wrote {} ({chunks} chunks)", out.display());
    Ok(())
}
