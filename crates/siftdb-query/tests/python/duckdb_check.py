#!/usr/bin/env python3
"""DuckDB reads siftdb's Parquet export (run by .ci/run; needs the `duckdb` Python package).

Runs `crates/siftdb-query/examples/parquet_export.rs` into a temporary directory, asks DuckDB the
example's two queries on the exported file (`SELECT ... FROM read_parquet(?) WHERE ... ORDER BY key`) and
compares the rows exactly with the CSV siftdb's own scans wrote; then checks DuckDB's view of the
file's layout: one row group per siftdb chunk, a Bloom filter on every column chunk (which
DuckDB's `parquet_bloom_probe` finds the point key in, in its row group only), and the page
index (`parquet_page_index`) with one page per 4,096 rows. Exits 1 with a diff on any mismatch.

    python3 crates/siftdb-query/tests/python/duckdb_check.py          # from the repository root
"""

import csv
import difflib
import math
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

# The example's constants (examples/parquet_export.rs): change both together.
ROWS = 300_000
CHUNK_ROWS = 65_536
PAGE_ROWS = 4_096
POINT_ROW = 123_457
KEY_MULT = 0x9E3779B97F4A7C15
IN_LIST_TAGS = [b"tag7", b"tag123", b"nope", bytes([0xFF, 0x00, 0xE7])]
COLUMNS = ["key", "v", "x", "tag"]


def key_of(row):
    return (row * KEY_MULT) % (1 << 64)


def csv_line(query, key, v, x, tag):
    x_bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    tag = "NULL" if tag is None else bytes(tag).hex().upper()
    return f"{query},{key},{v},{x_bits:016x},{tag}"


failures = []


def check(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail and not ok else ''}")
    if not ok:
        failures.append(what)


def main():
    crate = Path(__file__).resolve().parents[2]  # crates/siftdb-query
    with tempfile.TemporaryDirectory(prefix="siftdb-duckdb-") as tmp:
        out = os.path.join(tmp, "export.parquet")
        expected_csv = os.path.join(tmp, "expected.csv")
        cmd = ["cargo", "run", "--release", "--features", "parquet", "--example",
               "parquet_export", "--", out, expected_csv]
        subprocess.run(cmd, cwd=crate, check=True)
        with open(expected_csv, newline="") as f:
            expected = [",".join(r) for r in csv.reader(f)]

        con = duckdb.connect()
        select = "SELECT key, v, x, tag FROM read_parquet(?) WHERE {} ORDER BY key"
        queries = [
            ("point", "key = ?", [key_of(POINT_ROW)]),
            ("in_list", "tag IN (?, ?, ?, ?)", IN_LIST_TAGS),
        ]
        got = ["query,key,v,x_bits,tag"]
        for name, where, params in queries:
            rows = con.execute(select.format(where), [out, *params]).fetchall()
            got += [csv_line(name, *r) for r in rows]
        same = got == expected
        check(f"DuckDB {duckdb.__version__} rows equal siftdb's ({len(expected) - 1} rows)", same)
        if not same:
            sys.stdout.writelines(difflib.unified_diff(
                [l + "\n" for l in expected], [l + "\n" for l in got],
                "siftdb scan", "duckdb"))

        types = con.execute(
            "SELECT name, type FROM parquet_schema(?) WHERE name IN ('key', 'v', 'x', 'tag') "
            "ORDER BY name", [out]).fetchall()
        check("schema", dict(types) == {"key": "INT64", "v": "INT64", "x": "DOUBLE",
                                        "tag": "BYTE_ARRAY"}, str(types))
        key_type = con.execute("SELECT typeof(key) FROM read_parquet(?) LIMIT 1",
                               [out]).fetchone()[0]
        check("key reads as UBIGINT", key_type == "UBIGINT", key_type)

        chunks = math.ceil(ROWS / CHUNK_ROWS)
        meta = con.execute("SELECT * FROM parquet_metadata(?)", [out])
        names = [d[0] for d in meta.description]
        meta = [dict(zip(names, r)) for r in meta.fetchall()]
        row_groups = sorted({m["row_group_id"] for m in meta})
        check(f"one row group per chunk ({chunks})", row_groups == list(range(chunks)),
              str(row_groups))
        sizes = sorted({(m["row_group_id"], m["row_group_num_rows"]) for m in meta})
        want_sizes = [(g, min(CHUNK_ROWS, ROWS - g * CHUNK_ROWS)) for g in range(chunks)]
        check("row group sizes", sizes == want_sizes, str(sizes))
        check("every column chunk zstd-compressed",
              all(m["compression"] == "ZSTD" for m in meta),
              str({m["compression"] for m in meta}))
        if "bloom_filter_offset" in names:
            missing = [(m["row_group_id"], m["path_in_schema"]) for m in meta
                       if not m["bloom_filter_offset"]]
            check("a bloom filter on every column chunk", not missing, str(missing))
        else:
            print("skip bloom_filter_offset: not in this DuckDB's parquet_metadata()")

        probe = con.execute(
            "SELECT row_group_id, bloom_filter_excludes FROM parquet_bloom_probe(?, 'key', ?) "
            "ORDER BY row_group_id", [out, key_of(POINT_ROW)]).fetchall()
        home = POINT_ROW // CHUNK_ROWS
        check("bloom probe: the point key's row group may hold it",
              (home, False) in probe, str(probe))
        check("bloom probe: another row group excludes it",
              any(g != home and ex for g, ex in probe), str(probe))

        pages = con.execute(
            "SELECT row_group_id, column_id, count(*) FROM parquet_page_index(?) "
            "GROUP BY ALL ORDER BY ALL", [out]).fetchall()
        want_pages = [(g, c, math.ceil(rows / PAGE_ROWS)) for g, rows in want_sizes
                      for c in range(len(COLUMNS))]
        check("page index: one page per 4,096 rows", pages == want_pages,
              f"{pages[:6]}... against {want_pages[:6]}...")

    if failures:
        print(f"duckdb_check: {len(failures)} check(s) failed: {failures}")
        sys.exit(1)
    print("duckdb_check: all checks passed")


if __name__ == "__main__":
    main()
