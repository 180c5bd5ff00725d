//! The bank test of serializable transactions (design.md#transactions): accounts whose total
//! never changes, transfers between random accounts by several threads that retry on
//! `Error::Conflict`, and audits that must always see the same total: read-only serializable
//! transactions (point reads and a scan) and plain snapshots. A lost update or a write skew
//! shows as a wrong total or an overdrawn account (a transfer only moves what the source holds,
//! read in the same transaction). The database is closed and reopened between rounds, so the
//! committed transfers also survive recovery.
//!
//! Bounded here; `SIFTDB_BANK_TRANSFERS=2000000 cargo test --release --test transactions_bank`
//! runs the long version by hand (scripts/bank.sh).

use siftdb::filter::rng::SplitMix64;
use siftdb::{Db, Keyspace, KeyspaceOptions, Options, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const ACCOUNTS: u64 = 24;
const INITIAL: u64 = 1_000;
const ROUNDS: u64 = 4;
const TRANSFER_THREADS: u64 = 2;

fn transfers() -> u64 {
    std::env::var("SIFTDB_BANK_TRANSFERS").ok().and_then(|s| s.parse().ok()).unwrap_or(16_000)
}

fn account(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn balance(v: Option<Vec<u8>>) -> u64 {
    let v = v.expect("every account exists");
    u64::from_le_bytes(v.as_slice().try_into().expect("balances are 8 bytes"))
}

fn options() -> Options {
    // A small memtable, so rounds flush and compact while transactions validate against SSTs.
    Options { memtable_size: 64 << 10, ..Options::default() }
}

/// Moves a random amount between two random accounts; `Ok(false)` on a conflict.
fn transfer(db: &Db, ks: &Keyspace, rng: &mut SplitMix64) -> Result<bool> {
    let from = rng.next_u64() % ACCOUNTS;
    let to = (from + 1 + rng.next_u64() % (ACCOUNTS - 1)) % ACCOUNTS;
    let t = db.transaction()?;
    let view = t.keyspace(ks)?;
    let a = balance(view.get(account(from))?);
    let b = balance(view.get(account(to))?);
    let amount = rng.next_u64() % (a + 1);
    // Let the other threads run between the reads and the commit, as a slower transaction
    // would: without it, on two cores, transactions rarely overlap.
    if rng.next_u64().is_multiple_of(2) {
        std::thread::yield_now();
    }
    view.put(account(from), (a - amount).to_le_bytes())?;
    view.put(account(to), (b + amount).to_le_bytes())?;
    drop(view);
    match t.commit() {
        Ok(()) => Ok(true),
        Err(e) if e.is_conflict() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The total as a serializable read-only transaction sees it, by point reads or by a scan.
fn audit(db: &Db, ks: &Keyspace, scan: bool) -> Result<u64> {
    let t = db.transaction()?;
    let view = t.keyspace(ks)?;
    let total = if scan {
        let mut sum = 0;
        let mut n = 0;
        for entry in view.scan()? {
            let (_, v) = entry?;
            sum += balance(Some(v));
            n += 1;
        }
        assert_eq!(n, ACCOUNTS, "a scan saw every account");
        sum
    } else {
        (0..ACCOUNTS).map(|i| view.get(account(i)).map(balance)).sum::<Result<u64>>()?
    };
    drop(view);
    t.commit()?;
    Ok(total)
}

#[test]
fn transfers_keep_the_total_through_conflicts_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let total = ACCOUNTS * INITIAL;
    {
        let db = Db::open(dir.path(), options()).unwrap();
        let ks = db.keyspace("accounts", KeyspaceOptions::default()).unwrap();
        let t = db.transaction().unwrap();
        let view = t.keyspace(&ks).unwrap();
        for i in 0..ACCOUNTS {
            view.put(account(i), INITIAL.to_le_bytes()).unwrap();
        }
        drop(view);
        t.commit().unwrap();
        db.close().unwrap();
    }
    let per_thread = transfers() / ROUNDS / TRANSFER_THREADS;
    let (committed, conflicts, audits) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    for round in 0..ROUNDS {
        let db = Arc::new(Db::open(dir.path(), options()).unwrap());
        let ks = db.existing_keyspace("accounts").expect("created before");
        assert_eq!(audit(&db, &ks, true).unwrap(), total, "after reopen {round}");
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..TRANSFER_THREADS)
                .map(|i| {
                    let (db, ks) = (&db, &ks);
                    let (committed, conflicts) = (&committed, &conflicts);
                    s.spawn(move || {
                        let mut rng = SplitMix64::new(round * 100 + i);
                        let mut mine = 0;
                        while mine < per_thread {
                            if transfer(db, ks, &mut rng).unwrap() {
                                mine += 1;
                                committed.fetch_add(1, Ordering::Relaxed);
                            } else {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    })
                })
                .collect();
            let (db2, ks2, done2, audits2) = (&db, &ks, &done, &audits);
            let auditor = s.spawn(move || {
                let mut n = 0u64;
                while !done2.load(Ordering::Acquire) {
                    assert_eq!(audit(db2, ks2, n.is_multiple_of(2)).unwrap(), total, "audit {n}");
                    let snap = db2.snapshot();
                    let view = snap.keyspace(ks2).unwrap();
                    let sum: u64 =
                        (0..ACCOUNTS).map(|i| balance(view.get(account(i)).unwrap())).sum();
                    assert_eq!(sum, total, "snapshot audit {n}");
                    n += 1;
                }
                audits2.fetch_add(n, Ordering::Relaxed);
            });
            for w in workers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Release);
            auditor.join().unwrap();
        });
        assert_eq!(audit(&db, &ks, false).unwrap(), total, "end of round {round}");
        Arc::into_inner(db).expect("the threads are done").close().unwrap();
    }
    let committed = committed.into_inner();
    assert_eq!(committed, per_thread * TRANSFER_THREADS * ROUNDS);
    eprintln!(
        "{committed} transfers committed, {} conflicts retried, {} audits",
        conflicts.into_inner(),
        audits.into_inner()
    );
}
