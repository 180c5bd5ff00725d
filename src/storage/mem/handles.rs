//! The file and lock handles of [`MemStorage`](super::MemStorage). Every operation takes the
//! storage's state lock, counts itself and checks the handle's generation (see the parent doc).

use super::{NodeRef, State};
use crate::error::{Error, Result};
use crate::storage::{DirLock, RandomAccessFile, WritableFile};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;

pub(super) struct MemWritableFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) node: NodeRef,
    pub(super) path: PathBuf,
    pub(super) generation: u64,
    pub(super) len: u64,
}

impl WritableFile for MemWritableFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(Some(self.generation), "appending to", &self.path)?;
        self.node.lock().data.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        let mut st = self.state.lock();
        let stale = st.generation != self.generation;
        let result = st.begin(Some(self.generation), "syncing", &self.path);
        let mut n = self.node.lock();
        match result {
            Ok(()) if !n.poisoned => n.synced_len = n.data.len(),
            Ok(()) => {} // After a failed sync, "Ok" proves nothing (see the module doc).
            Err(_) if !stale => n.poisoned = true,
            Err(_) => {}
        }
        result
    }

    fn len(&self) -> u64 {
        self.len
    }

    /// A preallocated log gives back its reservation (its length is what was appended).
    fn close(&mut self) -> Result<()> {
        self.node.lock().prealloc = 0;
        Ok(())
    }
}

impl Drop for MemWritableFile {
    /// A closed file stops growing: give back the spare capacity its appends doubled into
    /// (up to half of it), which a storage holding a whole database otherwise keeps per file.
    /// A live process's drop also closes a preallocated log (a killed one's never runs).
    fn drop(&mut self) {
        let live = self.state.lock().generation == self.generation;
        let mut n = self.node.lock();
        if live {
            n.prealloc = 0;
        }
        n.data.shrink_to_fit();
    }
}

pub(super) struct MemRandomAccessFile {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) node: NodeRef,
    pub(super) path: PathBuf,
    pub(super) generation: u64,
    pub(super) len: u64,
}

impl RandomAccessFile for MemRandomAccessFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut st = self.state.lock();
        st.begin(Some(self.generation), "reading", &self.path)?;
        let n = self.node.lock();
        let end = offset.checked_add(buf.len() as u64).filter(|&e| e <= self.len);
        match end {
            Some(end) if end <= n.data.len() as u64 => {
                buf.copy_from_slice(&n.data[offset as usize..end as usize]);
                Ok(())
            }
            _ => Err(Error::corruption(
                format!("read of {} bytes past the end of a {}-byte file", buf.len(), self.len),
                Some(offset),
            )
            .in_file(&self.path, 0)),
        }
    }

    fn len(&self) -> u64 {
        self.len
    }
}

pub(super) struct MemDirLock {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) path: PathBuf,
    pub(super) generation: u64,
}

impl DirLock for MemDirLock {}

impl Drop for MemDirLock {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        // A crash already released it; a lock taken after the crash is not ours to release.
        if st.generation == self.generation {
            st.locks.remove(&self.path);
        }
    }
}
