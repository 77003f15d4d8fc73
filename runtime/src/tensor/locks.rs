//! Locking several storages for one operation: each distinct storage once, in
//! [`Storage::lock_order`] (their addresses), so that two operations locking
//! the same storages never wait on each other in a cycle. The storage an
//! operation writes is locked for writing, the others for reading; a storage
//! that is both read and written is locked once, for writing.

use super::{Buffer, Storage};
use smallvec::{smallvec, SmallVec};
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
        // The common cases first, without building an order (the call
        // overhead of a small operation is measured in instructions).
        match (write, reads) {
            (None, [a]) => return StorageLocks::reading(smallvec![(*a, a.read())]),
            (None, [a, b]) if a.ptr_eq(b) => {
                return StorageLocks::reading(smallvec![(*a, a.read())]);
            }
            (None, [a, b]) => {
                let (x, y) = if a.lock_order() < b.lock_order() {
                    (*a, *b)
                } else {
                    (*b, *a)
                };
                let first = x.read();
                return StorageLocks::reading(smallvec![(x, first), (y, y.read())]);
            }
            (Some(w), []) => {
                return StorageLocks {
                    write: Some((w, w.write())),
                    reads: SmallVec::new(),
                }
            }
            _ => {}
        }
        let mut locks = StorageLocks {
            write: None,
            reads: SmallVec::new(),
        };
        let mut order: SmallVec<[&'a Storage; 4]> = SmallVec::with_capacity(reads.len() + 1);
        if let Some(w) = write {
            order.push(w);
        }
        for &r in reads {
            order.push(r);
        }
        order.sort_unstable_by_key(|s| s.lock_order());
        order.dedup_by(|a, b| a.ptr_eq(b));
        for s in order {
            if write.is_some_and(|w| w.ptr_eq(s)) {
                locks.write = Some((s, s.write()));
            } else {
                locks.reads.push((s, s.read()));
            }
        }
        locks
    }

    fn reading(reads: SmallVec<[(&'a Storage, RwLockReadGuard<'a, Buffer>); 3]>) -> Self {
        StorageLocks { write: None, reads }
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

/// The buffer of `s` among `reads`, which are in address order (every way
/// [`StorageLocks::new`] builds them): a few are searched in turn, many by
/// bisection (`cat` of thousands of tensors looks each one up).
fn find<'g>(
    reads: &'g [(&Storage, RwLockReadGuard<'_, Buffer>)],
    s: &Storage,
) -> Option<&'g Buffer> {
    if reads.len() <= 8 {
        return reads.iter().find(|(x, _)| x.ptr_eq(s)).map(|(_, g)| &**g);
    }
    let key = s.lock_order();
    let i = reads
        .binary_search_by_key(&key, |(x, _)| x.lock_order())
        .ok()?;
    Some(&*reads[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(n: usize) -> Storage {
        Storage::new(Buffer::F32(vec![0.0; n]))
    }

    fn read_order(l: &StorageLocks<'_>) -> Vec<usize> {
        l.reads.iter().map(|(s, _)| s.lock_order()).collect()
    }

    /// Many storages (looked up by bisection): each found, in any order of
    /// request, and one not locked not found.
    #[test]
    fn many_reads_are_found_by_bisection() {
        let all: Vec<Storage> = (0..100).map(f32s).collect();
        let mut reads: Vec<&Storage> = all.iter().collect();
        reads.reverse();
        let out = f32s(1);
        let mut l = StorageLocks::new(&reads, Some(&out));
        let (_, r) = l.parts();
        for s in &all {
            assert!(matches!(r.get(s), Some(Buffer::F32(v)) if v.len() == s.len()));
        }
        assert!(r.get(&out).is_none() && r.get(&f32s(1)).is_none());
    }

    /// Every shape of request, the short cuts and the general path: each
    /// storage is locked once, reads in address order, a written storage
    /// only for writing.
    #[test]
    fn each_storage_is_locked_once_in_address_order() {
        let (a, b, c) = (f32s(1), f32s(2), f32s(3));
        for (reads, write) in [
            (vec![&a], None),
            (vec![&a, &a], None),
            (vec![&b, &a], None),
            (vec![&a, &b], None),
            (vec![&c, &b, &a, &b], None),
            (vec![], Some(&a)),
            (vec![&a], Some(&a)),
            (vec![&b, &a, &c], Some(&a)),
            (vec![&b, &b], Some(&c)),
        ] {
            let l = StorageLocks::new(&reads, write);
            for r in &reads {
                let found = l.read(r).is_some();
                assert_eq!(found, !write.is_some_and(|w| w.ptr_eq(r)));
            }
            let mut want: Vec<usize> = reads
                .iter()
                .filter(|s| !write.is_some_and(|w| w.ptr_eq(s)))
                .map(|s| s.lock_order())
                .collect();
            want.sort();
            want.dedup();
            assert_eq!(read_order(&l), want);
            assert_eq!(
                l.written().map(|s| s.lock_order()),
                write.map(|w| w.lock_order())
            );
            // Nothing else is held: every storage not taken for writing can
            // still be read, and one not locked at all can be written.
            for s in [&a, &b, &c] {
                if !write.is_some_and(|w| w.ptr_eq(s)) {
                    drop(s.read());
                }
                if !reads.iter().any(|r| r.ptr_eq(s)) && !write.is_some_and(|w| w.ptr_eq(s)) {
                    drop(s.write());
                }
            }
        }
    }
}
