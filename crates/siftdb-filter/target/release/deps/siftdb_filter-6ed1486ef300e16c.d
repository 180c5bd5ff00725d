/work/wt-filter/crates/siftdb-filter/target/release/deps/siftdb_filter-6ed1486ef300e16c.d: src/lib.rs src/blocked.rs src/cost.rs src/counting.rs src/cuckoo/mod.rs src/cuckoo/layout.rs src/cuckoo/relocate.rs src/cuckoo/view.rs src/envelope.rs src/error.rs src/grafite/mod.rs src/grafite/elias_fano.rs src/grafite/image.rs src/grafite/shape.rs src/grafite/view.rs src/hash.rs src/math.rs src/prefetch.rs src/ribbon/mod.rs src/ribbon/banding.rs src/ribbon/bumped.rs src/ribbon/bumping.rs src/ribbon/solution.rs src/rng.rs src/scalable.rs src/scalable/view.rs src/sizing.rs src/split_block.rs src/split_block/parquet.rs src/standard.rs src/two_bit/mod.rs src/two_bit/config.rs src/two_bit/table.rs src/two_bit/view.rs src/view.rs src/xor/mod.rs src/xor/binary_fuse.rs src/xor/fuse_layout.rs src/xor/packed_fuse.rs src/xor/peel.rs src/xor/xor_filter.rs

/work/wt-filter/crates/siftdb-filter/target/release/deps/libsiftdb_filter-6ed1486ef300e16c.rlib: src/lib.rs src/blocked.rs src/cost.rs src/counting.rs src/cuckoo/mod.rs src/cuckoo/layout.rs src/cuckoo/relocate.rs src/cuckoo/view.rs src/envelope.rs src/error.rs src/grafite/mod.rs src/grafite/elias_fano.rs src/grafite/image.rs src/grafite/shape.rs src/grafite/view.rs src/hash.rs src/math.rs src/prefetch.rs src/ribbon/mod.rs src/ribbon/banding.rs src/ribbon/bumped.rs src/ribbon/bumping.rs src/ribbon/solution.rs src/rng.rs src/scalable.rs src/scalable/view.rs src/sizing.rs src/split_block.rs src/split_block/parquet.rs src/standard.rs src/two_bit/mod.rs src/two_bit/config.rs src/two_bit/table.rs src/two_bit/view.rs src/view.rs src/xor/mod.rs src/xor/binary_fuse.rs src/xor/fuse_layout.rs src/xor/packed_fuse.rs src/xor/peel.rs src/xor/xor_filter.rs

/work/wt-filter/crates/siftdb-filter/target/release/deps/libsiftdb_filter-6ed1486ef300e16c.rmeta: src/lib.rs src/blocked.rs src/cost.rs src/counting.rs src/cuckoo/mod.rs src/cuckoo/layout.rs src/cuckoo/relocate.rs src/cuckoo/view.rs src/envelope.rs src/error.rs src/grafite/mod.rs src/grafite/elias_fano.rs src/grafite/image.rs src/grafite/shape.rs src/grafite/view.rs src/hash.rs src/math.rs src/prefetch.rs src/ribbon/mod.rs src/ribbon/banding.rs src/ribbon/bumped.rs src/ribbon/bumping.rs src/ribbon/solution.rs src/rng.rs src/scalable.rs src/scalable/view.rs src/sizing.rs src/split_block.rs src/split_block/parquet.rs src/standard.rs src/two_bit/mod.rs src/two_bit/config.rs src/two_bit/table.rs src/two_bit/view.rs src/view.rs src/xor/mod.rs src/xor/binary_fuse.rs src/xor/fuse_layout.rs src/xor/packed_fuse.rs src/xor/peel.rs src/xor/xor_filter.rs

src/lib.rs:
src/blocked.rs:
src/cost.rs:
src/counting.rs:
src/cuckoo/mod.rs:
src/cuckoo/layout.rs:
src/cuckoo/relocate.rs:
src/cuckoo/view.rs:
src/envelope.rs:
src/error.rs:
src/grafite/mod.rs:
src/grafite/elias_fano.rs:
src/grafite/image.rs:
src/grafite/shape.rs:
src/grafite/view.rs:
src/hash.rs:
src/math.rs:
src/prefetch.rs:
src/ribbon/mod.rs:
src/ribbon/banding.rs:
src/ribbon/bumped.rs:
src/ribbon/bumping.rs:
src/ribbon/solution.rs:
src/rng.rs:
src/scalable.rs:
src/scalable/view.rs:
src/sizing.rs:
src/split_block.rs:
src/split_block/parquet.rs:
src/standard.rs:
src/two_bit/mod.rs:
src/two_bit/config.rs:
src/two_bit/table.rs:
src/two_bit/view.rs:
src/view.rs:
src/xor/mod.rs:
src/xor/binary_fuse.rs:
src/xor/fuse_layout.rs:
src/xor/packed_fuse.rs:
src/xor/peel.rs:
src/xor/xor_filter.rs:
