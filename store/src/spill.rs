//! Rows spilled to a scratch file in sorted runs, read back merged in time order: how a
//! conversion that holds one file of a trace at a time writes the whole trace's tables sorted.
//! Each run is sorted in memory before it is written; the merge keeps a small buffer per run
//! (a few megabytes in all, whatever the number of rows) and a heap of the runs' next keys.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use exaviz_model::source::SourceError;

/// A row of fixed size, ordered by its key (a time).
pub trait Row: Copy {
    const SIZE: usize;
    fn key(&self) -> i64;
    fn put(&self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

/// The bytes the merge buffers, for all runs together.
const MERGE_BUFFERS: usize = 16 << 20;

/// Rows written in sorted runs to one scratch file, removed when dropped.
pub struct Spill<R: Row> {
    path: PathBuf,
    file: File,
    /// Each run's offset and rows.
    runs: Vec<(u64, u64)>,
    end: u64,
    bytes: Vec<u8>,
    _row: std::marker::PhantomData<R>,
}

fn io(path: &Path, e: std::io::Error) -> SourceError {
    SourceError::Io { input: path.display().to_string(), source: e }
}

impl<R: Row> Spill<R> {
    pub fn create(path: &Path) -> Result<Self, SourceError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            runs: Vec::new(),
            end: 0,
            bytes: Vec::new(),
            _row: Default::default(),
        })
    }

    /// Sorts `rows` by key and writes them as one run (nothing for none); `rows` is left empty.
    pub fn run(&mut self, rows: &mut Vec<R>) -> Result<(), SourceError> {
        if rows.is_empty() {
            return Ok(());
        }
        rows.sort_by_key(R::key);
        self.bytes.clear();
        for r in rows.iter() {
            r.put(&mut self.bytes);
        }
        self.file.write_all(&self.bytes).map_err(|e| io(&self.path, e))?;
        self.runs.push((self.end, rows.len() as u64));
        self.end += self.bytes.len() as u64;
        rows.clear();
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.runs.iter().map(|r| r.1).sum()
    }

    /// Every row in key order (rows of equal keys in the order of their runs), handed to `each`
    /// in batches of up to `batch` rows.
    pub fn merged(
        &self,
        batch: usize,
        mut each: impl FnMut(&[R]) -> Result<(), SourceError>,
    ) -> Result<(), SourceError> {
        let per_run = (MERGE_BUFFERS / R::SIZE / self.runs.len().max(1)).clamp(64, 1 << 16) as u64;
        struct Cursor<R> {
            at: u64,
            left: u64,
            buf: Vec<R>,
            next: usize,
        }
        let mut raw = Vec::new();
        let mut refill = |c: &mut Cursor<R>| -> Result<(), SourceError> {
            let n = c.left.min(per_run);
            raw.resize(n as usize * R::SIZE, 0);
            self.file.read_exact_at(&mut raw, c.at).map_err(|e| io(&self.path, e))?;
            c.buf.clear();
            c.buf.extend(raw.chunks_exact(R::SIZE).map(R::get));
            c.next = 0;
            c.at += n * R::SIZE as u64;
            c.left -= n;
            Ok(())
        };
        let mut cursors: Vec<Cursor<R>> =
            self.runs.iter().map(|&(at, left)| Cursor { at, left, buf: Vec::new(), next: 0 }).collect();
        let mut heap = BinaryHeap::new();
        for (k, c) in cursors.iter_mut().enumerate() {
            refill(c)?;
            if let Some(r) = c.buf.first() {
                heap.push(Reverse((r.key(), k)));
            }
        }
        let mut out: Vec<R> = Vec::with_capacity(batch);
        while let Some(Reverse((_, k))) = heap.pop() {
            let c = &mut cursors[k];
            out.push(c.buf[c.next]);
            c.next += 1;
            if c.next == c.buf.len() && c.left > 0 {
                refill(c)?;
            }
            if let Some(r) = c.buf.get(c.next) {
                heap.push(Reverse((r.key(), k)));
            }
            if out.len() == batch {
                each(&out)?;
                out.clear();
            }
        }
        if !out.is_empty() {
            each(&out)?;
        }
        Ok(())
    }
}

impl<R: Row> Drop for Spill<R> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Pair(i64, u32);

    impl Row for Pair {
        const SIZE: usize = 12;
        fn key(&self) -> i64 {
            self.0
        }
        fn put(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.0.to_le_bytes());
            out.extend_from_slice(&self.1.to_le_bytes());
        }
        fn get(b: &[u8]) -> Self {
            Pair(i64::from_le_bytes(b[..8].try_into().unwrap()), u32::from_le_bytes(b[8..12].try_into().unwrap()))
        }
    }

    /// Runs of any length, buffers refilled many times: the merge is the rows sorted, in
    /// batches of the size asked for, and the scratch file goes with the spill.
    #[test]
    fn runs_merge_into_one_sorted_stream() {
        let path = std::env::temp_dir().join(format!("exaviz-spill-{}", std::process::id()));
        let mut s = Spill::<Pair>::create(&path).unwrap();
        let mut all = Vec::new();
        let mut x = 7u64;
        for run in 0..300u32 {
            let mut rows: Vec<Pair> = (0..(run * 37) % 5000)
                .map(|i| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    Pair((x >> 40) as i64 - 5000, run * 10_000 + i)
                })
                .collect();
            all.extend(rows.iter().copied());
            s.run(&mut rows).unwrap();
            assert!(rows.is_empty());
        }
        assert_eq!(s.rows(), all.len() as u64);
        let mut got = Vec::new();
        let mut batches = 0;
        s.merged(1000, |b| {
            assert!(b.len() <= 1000);
            batches += 1;
            got.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "in key order");
        assert_eq!(batches, all.len().div_ceil(1000));
        let key = |p: &Pair| (p.0, p.1);
        all.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got, all);
        drop(s);
        assert!(!path.exists());
    }
}
