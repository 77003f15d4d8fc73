//! Locking several storages for one operation: each distinct storage once, in
//! [`Storage::lock_order`] (their addresses), so that two operations locking
//! the same storages never wait on each other in a cycle. The storage an
//! operation writes is locked for writing, the others for reading; a storage
//! that is both read and written is locked once, for writing.

use super::{Buffer, Storage};
use smallvec::SmallVec;
use std::sync::{RwLockReadGuard, RwLockWriteGuard};

/// The locks of one operation on its storages (see the module docs).
///
/// ```
/// use opforge::tensor::{Buffer, Storage, StorageLocks};
/// let (a, out) = (Storage::new(Buffer::F32(vec![1.0, 2.0])), Storage::new(Buffer::F32(vec![0.0; 2])));
/// let mut locks = StorageLocks::new(&[&a, &a], Some(&out));
/// let (written, reads) = locks.parts();
/// let (Some(Buffer::F32(o)), Some(Buffer::F32(x))) = (written, reads.get(&a)) else { unreachable!() };
/// o.copy_from_slice(x);
/// drop(locks);
/// assert!(matches!(&*out.read(), Buffer::F32(v) if v == &[1.0, 2.0]));
/// ```
pub struct StorageLocks<'a> {
    write: Option<(&'a Storage, RwLockWriteGuard<'a, Buffer>)>,
    reads: SmallVec<[(&'a Storage, RwLockReadGuard<'a, Buffer>); 3]>,
}

impl<'a> StorageLocks<'a> {
    /// Locks `reads` for reading and `write` for writing, each distinct
    /// storage once, in address order.
    pub fn new(reads: &[&'a Storage], write: Option<&'a Storage>) -> StorageLocks<'a> {
        let mut order: SmallVec<[&'a Storage; 4]> = SmallVec::new();
        order.extend(write);
        order.extend(reads.iter().copied());
        if order.len() > 1 {
            order.sort_unstable_by_key(|s| s.lock_order());
            order.dedup_by(|a, b| a.ptr_eq(b));
        }
        let mut locks = StorageLocks {
            write: None,
            reads: SmallVec::new(),
        };
        for s in order {
            if write.is_some_and(|w| w.ptr_eq(s)) {
                locks.write = Some((s, s.write()));
            } else {
                locks.reads.push((s, s.read()));
            }
        }
        locks
    }

    /// The buffer of `s`, if it is locked for reading here (the written
    /// storage is reached through [`StorageLocks::parts`]).
    pub fn read(&self, s: &Storage) -> Option<&Buffer> {
        find(&self.reads, s)
    }

    /// The written buffer (if a storage was locked for writing), and the
    /// buffers locked for reading, by storage.
    pub fn parts(&mut self) -> (Option<&mut Buffer>, Reads<'_, 'a>) {
        let write = self.write.as_mut().map(|(_, g)| &mut **g);
        (write, Reads(&self.reads))
    }

    /// The written storage, if any.
    pub fn written(&self) -> Option<&'a Storage> {
        self.write.as_ref().map(|(s, _)| *s)
    }
}

/// The buffers an operation locked for reading, by storage
/// ([`StorageLocks::parts`]).
pub struct Reads<'g, 'a>(&'g [(&'a Storage, RwLockReadGuard<'a, Buffer>)]);

impl<'g> Reads<'g, '_> {
    /// The buffer of `s`, if it is locked for reading.
    pub fn get(&self, s: &Storage) -> Option<&'g Buffer> {
        find(self.0, s)
    }
}

fn find<'g>(
    reads: &'g [(&Storage, RwLockReadGuard<'_, Buffer>)],
    s: &Storage,
) -> Option<&'g Buffer> {
    reads.iter().find(|(x, _)| x.ptr_eq(s)).map(|(_, g)| &**g)
}
