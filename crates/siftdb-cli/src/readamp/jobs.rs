//! Running readamp's builds on several threads while keeping the report's order.

use siftdb::Result;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` applied to every item of `items`, on `jobs` threads (at most one per item), results in
/// the items' order. Each thread takes the next unclaimed item; after the first error no new
/// item is started and that error is returned (the items already running finish first).
pub fn run_all<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<Result<R>>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(items.len()).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            s.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(items.len());
    for r in slots.into_inner().unwrap_or_else(|e| e.into_inner()) {
        match r {
            Some(r) => out.push(r?),
            // Not started: only after an error, which an earlier or later slot holds.
            None => continue,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::Error;

    #[test]
    fn results_keep_the_items_order_whatever_the_threads() {
        let items: Vec<u64> = (0..50).collect();
        for jobs in [1, 2, 7, 100] {
            let out = run_all(&items, jobs, |&i| {
                // Uneven work, so threads finish out of order.
                std::thread::sleep(std::time::Duration::from_micros((50 - i) * 20));
                Ok(i * i)
            })
            .unwrap();
            assert_eq!(out, items.iter().map(|i| i * i).collect::<Vec<_>>(), "jobs {jobs}");
        }
        assert!(run_all(&[] as &[u64], 2, |&i| Ok(i)).unwrap().is_empty());
    }

    #[test]
    fn an_error_is_returned_and_stops_new_items() {
        let items: Vec<u64> = (0..1000).collect();
        let started = AtomicUsize::new(0);
        let r = run_all(&items, 2, |&i| {
            started.fetch_add(1, Ordering::Relaxed);
            if i == 3 {
                return Err(Error::invalid("item 3"));
            }
            // Slow enough that the other thread could not run through all items (1 s) before
            // the failing one raises the flag, unless it is descheduled that long.
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(i)
        });
        assert!(r.unwrap_err().to_string().contains("item 3"));
        assert!(started.load(Ordering::Relaxed) < 1000);
    }
}
