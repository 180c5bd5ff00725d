//! The manifest: version-edit decoding (files, and the keyspace tags 6 and 7 with their options
//! encoding), and recovery from a CURRENT + MANIFEST pair.
#![no_main]
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::manifest::{recover, VersionEdit};
use siftdb::storage::{MemStorage, Storage};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data) {
        // What decodes re-encodes to something that decodes to the same edit.
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(again, edit);
    }
    let s = MemStorage::new();
    let dir = Path::new("/d");
    s.create_dir_all(dir).unwrap();
    let mut c = s.create(&dir.join("CURRENT")).unwrap();
    c.append(b"MANIFEST-000001\n").unwrap();
    let mut m = s.create(&dir.join("MANIFEST-000001")).unwrap();
    m.append(data).unwrap();
    let _ = recover(&s, dir);
});
