use super::*;
use crate::manifest::edit::OPTIONAL_TAG;
use crate::storage::mem::{DataFate, DirFate};
use crate::storage::MemStorage;

fn dir() -> &'static Path {
    Path::new("/db")
}

fn meta(number: u64, key: &[u8]) -> FileMeta {
    FileMeta {
        number,
        size: 1000 + number,
        smallest_key: key.to_vec(),
        largest_key: [key, b"~"].concat(),
        smallest_seq: number * 10,
        largest_seq: number * 10 + 9,
        entries: number * 3,
        keyspace: 0,
        global_seq: None,
        stored_keyspace: None,
    }
}

fn snapshot(log: u64, next: u64, seq: u64, files: &[(u32, u64)]) -> VersionEdit {
    let mut e = VersionEdit {
        log_number: Some(log),
        next_file_number: Some(next),
        last_sequence: Some(seq),
        ..VersionEdit::default()
    };
    for &(level, n) in files {
        e.add_file(level, meta(n, format!("k{n}").as_bytes()));
    }
    e
}

/// Numbers for the manifests of [`keep`] (which never rolls over).
static UNUSED_NUMBERS: AtomicU64 = AtomicU64::new(1 << 20);

/// Appends that never roll the manifest over.
fn keep(s: &MemStorage) -> Rollover<'_> {
    Rollover { storage: s, dir: dir(), next_file: &UNUSED_NUMBERS, max_file_size: u64::MAX }
}

fn storage() -> MemStorage {
    let s = MemStorage::new();
    s.create_dir_all(dir()).unwrap();
    s
}

/// Levels of a recovered state as (level, file number) pairs.
fn files(state: &RecoveredState) -> Vec<(u32, u64)> {
    let per_level = state.levels.iter().enumerate();
    per_level.flat_map(|(l, f)| f.keys().map(move |&n| (l as u32, n))).collect()
}

#[test]
fn edit_encoding_round_trips() {
    let mut e = snapshot(7, 42, 9_999, &[(0, 5), (3, 6)]);
    e.add_file(
        1,
        FileMeta { smallest_key: Vec::new(), largest_key: vec![0xFF; 300], ..meta(8, b"") },
    );
    e.delete_file(2, 11);
    assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
    assert_eq!(VersionEdit::decode(&[]).unwrap(), VersionEdit::default());
}

#[test]
fn a_global_sequence_round_trips_and_must_name_a_file_added_in_its_edit() {
    let mut e = snapshot(7, 42, 9_999, &[(0, 5)]);
    e.add_file(6, FileMeta { keyspace: 3, global_seq: Some(10_000), ..meta(8, b"g") });
    let bytes = e.encode();
    assert_eq!(VersionEdit::decode(&bytes).unwrap(), e);
    // Tag 9 alone (its file not added in the edit) is corruption, as are 0 and a duplicate.
    let lone =
        [&9u16.to_le_bytes()[..], &16u32.to_le_bytes(), &8u64.to_le_bytes(), &5u64.to_le_bytes()]
            .concat();
    let err = VersionEdit::decode(&lone).unwrap_err().to_string();
    assert!(err.contains("not added here"), "{err}");
    let mut zero = e.clone();
    zero.added[1].1.global_seq = Some(0);
    assert!(VersionEdit::decode(&zero.encode()).unwrap_err().to_string().contains("out of range"));
    let twice = [bytes.clone(), bytes[bytes.len() - 22..].to_vec()].concat();
    assert!(VersionEdit::decode(&twice).unwrap_err().to_string().contains("appears twice"));
}

#[test]
fn a_stored_keyspace_round_trips_and_must_be_another_non_zero_id_of_a_file_added_here() {
    let mut e = snapshot(7, 42, 9_999, &[(0, 5)]);
    let adopted = FileMeta {
        keyspace: 3,
        global_seq: Some(10_000),
        stored_keyspace: Some(7),
        ..meta(8, b"g")
    };
    e.add_file(6, adopted);
    let bytes = e.encode();
    assert_eq!(VersionEdit::decode(&bytes).unwrap(), e);
    // The record is the last field: tag 12, length 12, number, stored id.
    let field =
        [&12u16.to_le_bytes()[..], &12u32.to_le_bytes(), &8u64.to_le_bytes(), &7u32.to_le_bytes()]
            .concat();
    assert!(bytes.ends_with(&field));
    let err = |e: &VersionEdit| VersionEdit::decode(&e.encode()).unwrap_err();
    for (stored, keyspace, what) in [
        (0, 3, "is 0, the default keyspace"),
        (3, 3, "cannot store keyspace 3"),
        (7, 0, "cannot store keyspace 7"),
    ] {
        let mut bad = e.clone();
        bad.added[1].1.stored_keyspace = Some(stored);
        bad.added[1].1.keyspace = keyspace;
        let got = err(&bad);
        assert!(got.is_corruption() && got.to_string().contains(what), "{got}");
    }
    let lone = &field;
    let got = VersionEdit::decode(lone).unwrap_err().to_string();
    assert!(got.contains("not added here"), "{got}");
    let twice = [bytes.clone(), field.clone()].concat();
    assert!(VersionEdit::decode(&twice).unwrap_err().to_string().contains("appears twice"));
}

#[test]
fn truncated_or_malformed_edits_are_rejected_without_panic() {
    let e = snapshot(7, 42, 9_999, &[(0, 5), (3, 6)]).encode();
    // A cut at a field boundary is a valid shorter edit (the WAL framing's checksum is what
    // rejects a truncated record); any other cut is corruption.
    let mut boundaries = 0;
    for cut in 1..e.len() {
        match VersionEdit::decode(&e[..cut]) {
            Ok(shorter) => {
                assert_eq!(shorter.encode(), &e[..cut], "cut {cut}");
                boundaries += 1;
            }
            Err(err) => assert!(err.is_corruption(), "cut {cut}"),
        }
    }
    assert_eq!(boundaries, 4, "3 scalar fields and one added file precede the last field");
    let field = |tag: u16, value: &[u8]| {
        let mut v = tag.to_le_bytes().to_vec();
        v.extend_from_slice(&(value.len() as u32).to_le_bytes());
        v.extend_from_slice(value);
        v
    };
    // Unknown required tag, duplicated scalar, level out of range, value too long for its field.
    let unknown = field(77, &[1, 2]);
    let twice = [field(1, &5u64.to_le_bytes()), field(1, &6u64.to_le_bytes())].concat();
    let level = field(4, &[&99u32.to_le_bytes()[..], &1u64.to_le_bytes()].concat());
    let long = field(3, &[0; 9]);
    for bad in [unknown, twice, level, long] {
        assert!(VersionEdit::decode(&bad).unwrap_err().is_corruption());
    }
    // An unknown optional field is skipped.
    let optional = [field(OPTIONAL_TAG + 3, b"future"), field(3, &8u64.to_le_bytes())].concat();
    let decoded = VersionEdit::decode(&optional).unwrap();
    assert_eq!(decoded, VersionEdit { last_sequence: Some(8), ..VersionEdit::default() });
}

#[test]
fn create_append_recover_round_trip() {
    let s = storage();
    assert!(recover(&s, dir()).unwrap().is_none());
    let mut m = Manifest::create(&s, dir(), 3, &snapshot(2, 10, 100, &[(0, 4), (1, 5)])).unwrap();
    assert!(s.exists(&dir().join("MANIFEST-000003")).unwrap());
    // Flush: a new L0 file and a new log.
    let mut e1 =
        VersionEdit { log_number: Some(11), next_file_number: Some(13), ..Default::default() };
    e1.add_file(0, meta(12, b"a"));
    // Compaction: L0 files 4 and 12 merged with L1 file 5 into 13; trivial move of nothing else.
    let mut e2 =
        VersionEdit { next_file_number: Some(14), last_sequence: Some(250), ..Default::default() };
    e2.delete_file(0, 4);
    e2.delete_file(0, 12);
    e2.delete_file(1, 5);
    e2.add_file(1, meta(13, b"b"));
    // Trivial move of 13 from L1 to L2 in one edit.
    let mut e3 = VersionEdit::default();
    e3.delete_file(1, 13);
    e3.add_file(2, meta(13, b"b"));
    for e in [&e1, &e2, &e3] {
        m.append(e, &keep(&s)).unwrap();
    }
    let state = recover(&s, dir()).unwrap().unwrap();
    assert_eq!(files(&state), [(2, 13)]);
    assert_eq!(state.levels[2][&13], meta(13, b"b"));
    let counters = (state.manifest_number, state.log_number, state.next_file_number);
    assert_eq!(
        (counters, state.last_sequence, state.edits, state.torn_tail),
        ((3, 11, 14), 250, 4, false)
    );
    // A new manifest from the snapshot describes the same state.
    Manifest::create(&s, dir(), 14, &state.snapshot_edit()).unwrap();
    let again = recover(&s, dir()).unwrap().unwrap();
    assert_eq!((files(&again), again.manifest_number, again.edits), (files(&state), 14, 1));
    assert_eq!(s.read_all(&dir().join("CURRENT")).unwrap(), b"MANIFEST-000014\n");
}

#[test]
fn crash_at_every_step_of_create_leaves_old_or_new_manifest_current() {
    let old = snapshot(1, 5, 10, &[(0, 3)]);
    let new = snapshot(6, 9, 20, &[(1, 7)]);
    let setup = || {
        let s = storage();
        Manifest::create(&s, dir(), 2, &old).unwrap();
        s
    };
    let probe = setup();
    let before = probe.op_count();
    Manifest::create(&probe, dir(), 8, &new).unwrap();
    let total = probe.op_count() - before;
    assert!(total >= 9, "create is at least 9 storage operations, counted {total}");
    let crashes: [fn(&MemStorage); 3] =
        [MemStorage::crash_drop_unsynced, MemStorage::crash_lose_unsynced_dir_entries, |s| {
            s.crash_keep_random_prefix(5)
        }];
    for n in 0..=total {
        for crash in crashes {
            let s = setup();
            s.fail_after(n, true); // operation n and everything after it fail: the process died
            let created = Manifest::create(&s, dir(), 8, &new).is_ok();
            assert_eq!(created, n == total);
            crash(&s);
            let state = recover(&s, dir()).unwrap().unwrap();
            let got = (state.manifest_number, files(&state));
            assert!(got == (2, vec![(0, 3)]) || got == (8, vec![(1, 7)]), "step {n}: {got:?}");
            if created {
                assert_eq!(got.0, 8, "a created manifest survives any crash");
            }
        }
    }
}

/// A manifest with a snapshot and three edits; returns its bytes and the storage.
fn three_edits() -> (MemStorage, Vec<u8>) {
    let s = storage();
    let mut m = Manifest::create(&s, dir(), 1, &snapshot(2, 10, 0, &[])).unwrap();
    for n in 3..6 {
        let mut e = VersionEdit { last_sequence: Some(n * 100), ..Default::default() };
        e.add_file(0, meta(n, b"x"));
        m.append(&e, &keep(&s)).unwrap();
    }
    let bytes = s.read_all(&dir().join(filename::manifest_name(1))).unwrap();
    (s, bytes)
}

fn rewrite(s: &MemStorage, name: &str, bytes: &[u8]) {
    let mut f = s.create(&dir().join(name)).unwrap();
    f.append(bytes).unwrap();
    f.sync().unwrap();
}

#[test]
fn torn_last_edit_is_dropped_whole() {
    let (s, bytes) = three_edits();
    assert_eq!(recover(&s, dir()).unwrap().unwrap().edits, 4);
    let mut saw_torn = 0;
    for cut in (bytes.len() - 60..bytes.len()).rev() {
        rewrite(&s, "MANIFEST-000001", &bytes[..cut]);
        let state = recover(&s, dir()).unwrap().unwrap();
        // Either the cut only removed the last edit, or (far enough back) more; never a
        // half-applied edit: every edit adds exactly one file and sets its sequence.
        assert_eq!(state.levels[0].len() + 1, state.edits);
        assert_eq!(state.last_sequence, state.levels[0].keys().max().map_or(0, |n| n * 100));
        saw_torn += usize::from(state.torn_tail && state.edits == 3);
    }
    assert!(saw_torn > 0);
}

#[test]
fn failed_append_sync_then_crash_keeps_or_drops_the_edit_whole() {
    for seed in 0..20 {
        let s = storage();
        let mut m = Manifest::create(&s, dir(), 1, &snapshot(2, 10, 0, &[])).unwrap();
        let mut e = VersionEdit::default();
        e.add_file(0, meta(4, &[7; 5000]));
        s.fail_after(1, true); // the append succeeds, its sync fails
        assert!(m.append(&e, &keep(&s)).is_err());
        s.crash_keep_random_prefix(seed);
        let state = recover(&s, dir()).unwrap().unwrap();
        assert!(files(&state).is_empty() || files(&state) == [(0, 4)], "seed {seed}");
    }
}

#[test]
fn corrupted_middle_edit_is_an_error_naming_the_manifest() {
    let (s, mut bytes) = three_edits();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    rewrite(&s, "MANIFEST-000001", &bytes);
    match recover(&s, dir()) {
        Err(Error::Corruption { file, .. }) => {
            assert_eq!(file, Some(dir().join("MANIFEST-000001")))
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn inconsistent_edits_and_bad_current_are_corruption() {
    let path = dir().join("CURRENT");
    for current in [&b"MANIFEST-000001"[..], b"000001.log\n", b"MANIFEST-000009\n", b"\xFF\n"] {
        let (s, _) = three_edits();
        rewrite(&s, "CURRENT", current);
        match recover(&s, dir()) {
            Err(Error::Corruption { file, .. }) => assert_eq!(file.as_ref(), Some(&path)),
            other => panic!("{current:?}: expected corruption, got {other:?}"),
        }
    }
    // Deleting a file that is not live, and a live file at or above next_file_number.
    let mut ghost = VersionEdit::default();
    ghost.delete_file(0, 99);
    let mut ahead = VersionEdit::default();
    ahead.add_file(3, meta(10, b"z"));
    for bad in [ghost, ahead] {
        let s = storage();
        let first = snapshot(2, 10, 0, &[]);
        let mut m = Manifest::create(&s, dir(), 1, &first).unwrap();
        // `append` refuses such an edit (before writing it, and everything after it) ...
        assert!(m.append(&bad, &keep(&s)).is_err());
        assert_eq!(recover(&s, dir()).unwrap().unwrap().edits, 1);
        assert!(m.append(&VersionEdit::default(), &keep(&s)).is_err());
        // ... and recovery finds it corrupt when one is in the file.
        let mut w = crate::wal::WalWriter::new(s.create(&dir().join("MANIFEST-000001")).unwrap());
        w.add_record(&first.encode()).unwrap();
        w.add_record(&bad.encode()).unwrap();
        w.sync().unwrap();
        assert!(recover(&s, dir()).unwrap_err().is_corruption());
    }
    // A snapshot without the counters is refused before anything is written.
    let s = storage();
    assert!(Manifest::create(&s, dir(), 1, &VersionEdit::default()).is_err());
    assert!(!s.exists(&dir().join("MANIFEST-000001")).unwrap());
}

fn ks(id: u32, name: &str) -> KeyspaceRecord {
    KeyspaceRecord {
        id,
        name: name.into(),
        options: crate::KeyspaceOptions::default(),
        filter_name: String::new(),
    }
}

#[test]
fn keyspace_edits_round_trip_and_default_files_keep_their_layout() {
    let mut e = snapshot(7, 42, 9, &[(0, 5)]);
    let plain = e.encode();
    e.keyspaces.push(ks(3, "events"));
    e.add_file(1, FileMeta { keyspace: 3, ..meta(9, b"a") });
    e.dropped_keyspaces.push(2);
    let bytes = e.encode();
    assert_eq!(VersionEdit::decode(&bytes).unwrap(), e);
    // The default-keyspace file's field is unchanged: the old encoding is a prefix.
    assert_eq!(bytes[..plain.len()], plain[..]);
}

#[test]
fn keyspace_life_cycle_replays_and_ids_are_never_reused() {
    let mut st = RecoveredState::empty(1);
    let mut e = snapshot(1, 50, 1, &[]);
    e.keyspaces.push(ks(1, "a"));
    e.keyspaces.push(ks(2, "b"));
    e.add_file(0, FileMeta { keyspace: 2, ..meta(10, b"x") });
    st.apply(&e).unwrap();
    assert_eq!(st.next_keyspace_id(), 3);
    // Dropping "b" must remove its file in the same edit.
    let drop_only = VersionEdit { dropped_keyspaces: vec![2], ..VersionEdit::default() };
    assert!(st.clone().apply(&drop_only).is_err());
    let drop = VersionEdit {
        dropped_keyspaces: vec![2],
        deleted: vec![(0, 10)],
        ..VersionEdit::default()
    };
    st.apply(&drop).unwrap();
    assert_eq!(st.keyspaces.keys().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(st.next_keyspace_id(), 3);
    // The snapshot carries the dropped id, so a fresh manifest still never reuses it.
    let mut again = RecoveredState::empty(2);
    again.apply(&st.snapshot_edit()).unwrap();
    assert_eq!(again.next_keyspace_id(), 3);
    assert_eq!(again.keyspaces, st.keyspaces);
    // A dropped id cannot come back, a file cannot name a dead keyspace, names are unique.
    let back = VersionEdit { keyspaces: vec![ks(2, "b")], ..VersionEdit::default() };
    assert!(again.clone().apply(&back).is_err());
    let mut orphan = VersionEdit::default();
    orphan.add_file(0, FileMeta { keyspace: 2, ..meta(11, b"y") });
    assert!(again.clone().apply(&orphan).is_err());
    let clash = VersionEdit { keyspaces: vec![ks(4, "a")], ..VersionEdit::default() };
    assert!(again.clone().apply(&clash).is_err());
}

#[test]
fn malformed_keyspace_fields_are_corruption() {
    let e = VersionEdit { keyspaces: vec![ks(1, "a")], ..VersionEdit::default() };
    let bytes = e.encode();
    for len in 1..bytes.len() {
        assert!(VersionEdit::decode(&bytes[..len]).is_err(), "len {len}");
    }
    let zero = VersionEdit { keyspaces: vec![ks(0, "a")], ..VersionEdit::default() };
    assert!(VersionEdit::decode(&zero.encode()).unwrap_err().is_corruption());
    let mut bad_name = bytes.clone();
    bad_name[6 + 4 + 4] = 0xFF; // the name's one byte: not UTF-8
    assert!(VersionEdit::decode(&bad_name).unwrap_err().to_string().contains("UTF-8"));
}

/// A seeded sequence of flush- and compaction-like edits over files numbered from `next`:
/// each adds a new L0 file or moves every L0 file into one L1 file.
fn churn(seed: u64, n: usize, next: &AtomicU64) -> Vec<VersionEdit> {
    let mut rng = crate::rng::SplitMix64::new(seed);
    let mut l0: Vec<u64> = Vec::new();
    let mut l1: Option<u64> = None;
    let mut edits = Vec::new();
    for i in 0..n {
        let number = next.fetch_add(1, Ordering::SeqCst);
        let mut e = VersionEdit {
            next_file_number: Some(next.load(Ordering::SeqCst)),
            last_sequence: Some(i as u64 * 10),
            ..VersionEdit::default()
        };
        if l0.len() < 3 || rng.below(3) > 0 {
            e.add_file(0, meta(number, format!("k{number}").as_bytes()));
            l0.push(number);
        } else {
            for n in l0.drain(..) {
                e.delete_file(0, n);
            }
            if let Some(old) = l1.replace(number) {
                e.delete_file(1, old);
            }
            e.add_file(1, meta(number, b"a"));
        }
        edits.push(e);
    }
    edits
}

/// Manifest files in `dir()`.
fn manifests(s: &MemStorage) -> Vec<String> {
    let names = s.list(dir()).unwrap();
    names.into_iter().filter(|n| n.starts_with("MANIFEST-")).collect()
}

#[test]
fn appends_roll_the_manifest_over_past_its_size_keeping_one_file_and_the_state() {
    let s = storage();
    let next = AtomicU64::new(3);
    let mut m = Manifest::create(&s, dir(), 2, &snapshot(1, 3, 0, &[])).unwrap();
    let env = Rollover { storage: &s, dir: dir(), next_file: &next, max_file_size: 1024 };
    let mut model = RecoveredState::empty(0);
    model.apply(&snapshot(1, 3, 0, &[])).unwrap();
    let mut rollovers = 0;
    for e in churn(7, 300, &next) {
        let before = m.number();
        m.append(&e, &env).unwrap();
        model.apply(&e).unwrap();
        rollovers += usize::from(m.number() != before);
        // One manifest, named by CURRENT, numbered from the allocator, never past its limit
        // by more than one edit, and recovering to the state of every edit so far.
        let names = manifests(&s);
        assert_eq!(names, [filename::manifest_name(m.number())]);
        assert!(m.number() < next.load(Ordering::SeqCst));
        let size = s.open(&dir().join(&names[0])).unwrap().len();
        assert!(size <= m.rollover_size(1024) + 256, "{size} bytes");
        let got = recover(&s, dir()).unwrap().unwrap();
        assert_eq!(files(&got), files(&model));
        assert_eq!(got.last_sequence, model.last_sequence);
        assert!(got.next_file_number >= model.next_file_number);
        if m.number() != before {
            // The snapshot's next file number is above every number handed out.
            assert!(got.next_file_number >= next.load(Ordering::SeqCst));
        }
    }
    assert!(rollovers >= 10, "only {rollovers} rollovers");
}

#[test]
fn a_large_snapshot_rolls_over_at_twice_its_size_not_at_every_edit() {
    let s = storage();
    let files: Vec<(u32, u64)> = (10..60).map(|n| (2, n)).collect();
    let first = snapshot(1, 100, 0, &files);
    let mut m = Manifest::create(&s, dir(), 2, &first).unwrap();
    let snapshot_bytes = s.open(&dir().join("MANIFEST-000002")).unwrap().len();
    assert!(snapshot_bytes > 1024, "the snapshot alone passes the limit");
    let next = AtomicU64::new(100);
    let env = Rollover { storage: &s, dir: dir(), next_file: &next, max_file_size: 1024 };
    let len =
        |m: &Manifest| s.open(&dir().join(filename::manifest_name(m.number()))).unwrap().len();
    let (mut snapshot_len, mut prev_len, mut rollovers) = (snapshot_bytes, snapshot_bytes, 0);
    for e in churn(3, 200, &next) {
        let before = m.number();
        m.append(&e, &env).unwrap();
        if m.number() != before {
            // The old manifest had grown past twice its snapshot with this edit (at most its
            // encoding plus two record headers of log framing).
            let with_edit = prev_len + e.encode().len() as u64 + 14;
            assert!(with_edit > 2 * snapshot_len, "rolled over at {with_edit} bytes");
            snapshot_len = len(&m);
            rollovers += 1;
        }
        prev_len = len(&m);
    }
    assert!(rollovers >= 2, "{rollovers} rollovers");
}

#[test]
fn a_cut_at_every_storage_operation_of_a_rollover_keeps_every_synced_edit() {
    let first = snapshot(1, 3, 0, &[]);
    let next0 = 3;
    let edits = churn(11, 12, &AtomicU64::new(next0));
    // Appends that roll over at the last edit: the limit just below the manifest's size then.
    let probe = storage();
    let mut m = Manifest::create(&probe, dir(), 2, &first).unwrap();
    let never = AtomicU64::new(1 << 20);
    let env = Rollover { storage: &probe, dir: dir(), next_file: &never, max_file_size: u64::MAX };
    for e in &edits[..edits.len() - 1] {
        m.append(e, &env).unwrap();
    }
    let limit = probe.open(&dir().join("MANIFEST-000002")).unwrap().len() + 1;
    let ops_before_last = probe.op_count();
    let next = AtomicU64::new(next0 + edits.len() as u64);
    let env = Rollover { storage: &probe, dir: dir(), next_file: &next, max_file_size: limit };
    m.append(edits.last().unwrap(), &env).unwrap();
    assert_ne!(m.number(), 2, "the last edit rolls the manifest over");
    let total = probe.op_count() - ops_before_last;
    assert!(total >= 10, "an append with a rollover is at least 10 operations: {total}");
    let with = |n: usize| {
        let mut st = RecoveredState::empty(0);
        st.apply(&first).unwrap();
        edits[..n].iter().for_each(|e| st.apply(e).unwrap());
        files(&st)
    };
    let crashes: [fn(&MemStorage); 4] = [
        MemStorage::crash_drop_unsynced,
        MemStorage::crash_lose_unsynced_dir_entries,
        |s| s.crash_keep_random_prefix(5),
        |s| s.crash(DataFate::KeepRandomPrefix(9), DirFate::RandomSubset(13)),
    ];
    for n in 0..=total {
        for (c, crash) in crashes.iter().enumerate() {
            let s = storage();
            let mut m = Manifest::create(&s, dir(), 2, &first).unwrap();
            let keep =
                Rollover { storage: &s, dir: dir(), next_file: &never, max_file_size: u64::MAX };
            for e in &edits[..edits.len() - 1] {
                m.append(e, &keep).unwrap();
            }
            let next = AtomicU64::new(next0 + edits.len() as u64);
            let env = Rollover { storage: &s, dir: dir(), next_file: &next, max_file_size: limit };
            s.fail_after(n, true); // operation n and everything after it fail: power is cut
            let appended = m.append(edits.last().unwrap(), &env).is_ok();
            // The last operation, removing the old manifest, may fail: the next open removes it.
            assert_eq!(appended, n + 1 >= total, "op {n}");
            if !appended {
                let again = m.append(&VersionEdit::default(), &env).unwrap_err();
                assert!(matches!(again, Error::ReadOnly(_)), "op {n}: {again}");
            }
            crash(&s);
            let got = recover(&s, dir()).unwrap_or_else(|e| panic!("op {n} crash {c}: {e}"));
            let got = files(&got.unwrap());
            // The edit's own append and sync are the first two operations: a cut after them
            // (in the rollover) must keep it.
            if n >= 2 {
                assert_eq!(got, with(edits.len()), "op {n} crash {c}");
            } else {
                assert!(got == with(edits.len()) || got == with(edits.len() - 1), "op {n}");
            }
        }
    }
}

fn blob(number: u64, keyspace: u32, count: u64, bytes: u64) -> crate::sst::blob::BlobMeta {
    crate::sst::blob::BlobMeta { number, keyspace, count, bytes, ..Default::default() }
}

#[test]
fn blob_file_records_round_trip_accumulate_garbage_and_leave_when_all_garbage() {
    let edit = VersionEdit {
        blob_files: vec![blob(7, 0, 3, 3000), blob(8, 2, 1, 500)],
        blob_garbage: vec![(7, 1, 1000)],
        ..VersionEdit::default()
    };
    assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
    for n in 0..edit.encode().len() {
        let _ = VersionEdit::decode(&edit.encode()[..n]); // never a panic
    }
    let mut state = RecoveredState::empty(1);
    state.apply(&snapshot(1, 10, 1, &[])).unwrap();
    state.keyspaces.insert(2, ks(2, "b"));
    state.apply(&edit).unwrap();
    assert_eq!(state.blobs[&7].garbage_bytes, 1000);
    // The snapshot edit recreates the garbage.
    let mut again = RecoveredState::empty(1);
    again.keyspaces.insert(2, ks(2, "b"));
    again.apply(&state.snapshot_edit()).unwrap();
    assert_eq!(again.blobs, state.blobs);
    // Garbage beyond the contents, on an unknown file, or a file added twice: refused.
    let over = VersionEdit { blob_garbage: vec![(7, 3, 0)], ..VersionEdit::default() };
    assert!(state.clone().apply(&over).is_err());
    let unknown = VersionEdit { blob_garbage: vec![(9, 1, 1)], ..VersionEdit::default() };
    assert!(state.clone().apply(&unknown).is_err());
    let twice = VersionEdit { blob_files: vec![blob(7, 0, 1, 1)], ..VersionEdit::default() };
    assert!(state.clone().apply(&twice).is_err());
    // The last values become garbage: the file leaves the set.
    let rest = VersionEdit { blob_garbage: vec![(7, 2, 2000)], ..VersionEdit::default() };
    state.apply(&rest).unwrap();
    assert!(!state.blobs.contains_key(&7));
    // A dropped keyspace takes its blob files with it.
    let drop = VersionEdit { dropped_keyspaces: vec![2], ..VersionEdit::default() };
    state.apply(&drop).unwrap();
    assert!(state.blobs.is_empty());
}
