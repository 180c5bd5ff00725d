//! Model checking of the lock-free structures (issue 7), with loom: every interleaving of a few
//! threads, and every value the C11 memory model lets each Relaxed load return.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test --release --test
//! loom_two_bit` (without `--cfg loom` this file is empty). Under that flag the two-bit filter's
//! words are loom atomics (crates/siftdb-filter/src/two_bit/table.rs), so the REAL `TwoBitBloom` code runs in
//! the model.
//!
//! What is checked:
//! * concurrent `insert_hash_atomic` / `insert_batch_atomic` from three threads, two of them
//!   on the same word: afterwards every key is found and the words equal a sequential build
//!   (`fetch_or` loses no bit, whatever the interleaving);
//! * the memtable's publication protocol (src/db/write.rs `commit_group`, src/memtable/mod.rs
//!   invariant 2): the single writer inserts an entry and its filter bits, then publishes the
//!   sequence number with a Release store; a reader that Acquire-loads a sequence `>= s` finds
//!   write `s` in the filter and reads its entry. The memtable's skip list keeps its nodes in
//!   raw arena memory loom cannot track, so the model stands in a loom `UnsafeCell` per entry (loom reports
//!   any read of it not ordered after its write); the filter is the real one;
//! * that the check is sharp: the same protocol with a Relaxed publication store is caught
//!   (a reader sees the sequence number but not the filter bits: a false negative).
//!
//! The table has two 32-bit words (64 bits). Hashes are chosen through the documented layout
//! (docs/format.md#two-bit-bloom): the word is the top bit of the hash (one index bit for
//! two words) and the two bit positions are bits 0..5 and 5..10 of the hash itself.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use siftdb_filter::prelude::*;
use siftdb_filter::TwoBitBloom;

/// A hash landing in word `word` (0 or 1) with bit positions `a` and `b` (each < 32).
const fn hash(word: u64, a: u64, b: u64) -> u64 {
    word << 63 | b << 5 | a
}

/// Three keys in word 0 (two share it, with disjoint bits) and one in word 1.
const KEYS: [u64; 3] = [hash(0, 1, 2), hash(0, 3, 4), hash(1, 5, 6)];

fn filter() -> TwoBitBloom {
    let f = TwoBitBloom::new(64).expect("64 bits is a valid size");
    assert_eq!(f.num_words(), 2, "the hashes above assume two words");
    f
}

/// The two payload words of a filter holding only `h`, to check where `h` lands.
fn words_of(h: u64) -> [u32; 2] {
    let mut f = filter();
    f.insert_hash(h);
    let bytes = f.to_bytes();
    // The envelope ends with the payload and a 4-byte CRC (docs/format.md#filter-encoding); the
    // payload of a 64-bit table is its two little-endian u32 words.
    let p = &bytes[bytes.len() - 12..bytes.len() - 4];
    let word = |i: usize| u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    [word(0), word(1)]
}

#[test]
fn concurrent_inserts_find_every_key_and_equal_a_sequential_build() {
    let runs = model(|| {
        // The layout assumption: the first two keys share word 0 with disjoint bits (so the
        // test runs two concurrent read-modify-writes of one word), the third is in word 1.
        assert_eq!(words_of(KEYS[0]), [0b110, 0]);
        assert_eq!(words_of(KEYS[1]), [0b11000, 0]);
        assert_eq!(words_of(KEYS[2]), [0, 0b110_0000]);

        let f = Arc::new(filter());
        let f1 = f.clone();
        let t1 = thread::spawn(move || f1.insert_hash_atomic(KEYS[0]));
        let f2 = f.clone();
        let t2 = thread::spawn(move || f2.insert_batch_atomic(&[KEYS[1]]));
        f.insert_hash_atomic(KEYS[2]);
        t1.join().unwrap();
        t2.join().unwrap();
        for k in KEYS {
            assert!(f.contains_hash(k), "key {k:#x} lost");
        }
        let mut sequential = filter();
        for k in KEYS {
            sequential.insert_hash(k);
        }
        // The atomic path does not count keys; the owner reports them.
        f.set_keys_inserted(KEYS.len() as u64);
        assert_eq!(*f, sequential, "concurrent words differ from a sequential build");
    });
    eprintln!("concurrent inserts: {runs} executions explored");
    assert!(runs > 20, "only {runs} executions");
}

/// `loom::model` with at most `LOOM_MAX_PREEMPTIONS` (default 5) preemptions per execution;
/// returns the number of executions explored. Unbounded, the three-thread protocol model ran
/// for minutes; bounded at 5 it explores about 20,000 executions in under a second. Bounding
/// preemptions is the iterative context bounding of CHESS (Musuvathi and Qadeer, PLDI 2007):
/// most concurrency bugs need very few preemptions.
fn model(f: impl Fn() + Sync + Send + 'static) -> usize {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(5);
    }
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f()
    });
    runs.load(std::sync::atomic::Ordering::Relaxed)
}

/// The memtable protocol with two writes and two readers; `publish` is the ordering of the
/// sequence-number store (Release in the engine).
fn publication_model(publish: Ordering, check_entries: bool) -> usize {
    model(move || {
        let f = Arc::new(filter());
        let visible = Arc::new(AtomicU64::new(0));
        // entries[s - 1]: the skip-list entry of write `s` (written once, before publication).
        let entries: Arc<[UnsafeCell<u64>; 2]> = Arc::new([UnsafeCell::new(0), UnsafeCell::new(0)]);
        let writer = {
            let (f, visible, entries) = (f.clone(), visible.clone(), entries.clone());
            thread::spawn(move || {
                for s in 1..=2u64 {
                    // Write `s` carries KEYS[s - 1]: both in word 0.
                    f.insert_hash_atomic(KEYS[s as usize - 1]);
                    if check_entries {
                        // SAFETY (of the model): one writer per slot, before its publication;
                        // loom reports any access not ordered with this write.
                        entries[s as usize - 1].with_mut(|e| unsafe { *e = s });
                    }
                    visible.store(s, publish);
                }
            })
        };
        // Readers: a second thread and this one, each taking a snapshot while the writer runs
        // and checking every write it makes visible.
        let read = move |f: &TwoBitBloom, visible: &AtomicU64, entries: &[UnsafeCell<u64>; 2]| {
            let snapshot = visible.load(Ordering::Acquire);
            for s in 1..=snapshot {
                assert!(
                    f.contains_hash(KEYS[s as usize - 1]),
                    "write {s} is visible but the filter says absent"
                );
                if check_entries {
                    // SAFETY (of the model): read only after the publication; loom reports the
                    // read if it is not ordered after the write.
                    let e = entries[s as usize - 1].with(|e| unsafe { *e });
                    assert_eq!(e, s);
                }
            }
        };
        let reader = {
            let (f, visible, entries) = (f.clone(), visible.clone(), entries.clone());
            thread::spawn(move || read(&f, &visible, &entries))
        };
        read(&f, &visible, &entries);
        writer.join().unwrap();
        reader.join().unwrap();
    })
}

#[test]
fn a_visible_write_is_never_a_filter_false_negative() {
    let runs = publication_model(Ordering::Release, true);
    eprintln!("publication protocol: {runs} executions explored");
    // Two threads of a few operations each have far more than a handful of interleavings.
    assert!(runs > 20, "only {runs} executions");
}

#[test]
fn the_publication_check_is_sharp_a_relaxed_store_is_caught() {
    // Keep the expected panic's message (loom re-raises the model's panic here) to check that
    // it is the false negative and not some other failure.
    let message = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let m = message.clone();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Loom's own unwinding panics too: keep every message.
        let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
        m.push_str(&info.to_string());
        m.push('\n');
    }));
    let caught = std::panic::catch_unwind(|| publication_model(Ordering::Relaxed, false));
    std::panic::set_hook(hook);
    assert!(caught.is_err(), "loom found no false negative with a Relaxed publication");
    let message = message.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(message.contains("the filter says absent"), "unexpected failure: {message}");
}
