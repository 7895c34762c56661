//! Measures the rustup doc tree: pages kept after [`skip_html`], chunks, time. Chunks every
//! `DOCS_TREE_STRIDE`-th kept page (default 10, so the test stays quick in a debug build)
//! and extrapolates; `DOCS_TREE_STRIDE=1` chunks the whole tree.

use super::tests::rust_docs;
use super::*;
use crate::docs::chunk::SourceType;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

#[test]
fn chunk_the_rustup_doc_tree() {
    let root = rust_docs();
    let stride: usize = std::env::var("DOCS_TREE_STRIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .max(1);
    let started = Instant::now();
    let big_page = "<html>".repeat(1000);
    let files: Vec<PathBuf> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    // The path rules first (no read), then the content rule (redirect stubs).
    let kept: Vec<(PathBuf, String)> = files
        .iter()
        .filter(|p| !skip_html(p.strip_prefix(&root).unwrap(), &big_page))
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?)))
        .filter(|(p, c)| !skip_html(p.strip_prefix(&root).unwrap(), c))
        .collect();
    let filtered = started.elapsed();
    let sample: Vec<&(PathBuf, String)> = kept.iter().step_by(stride).collect();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let per_dir: Mutex<BTreeMap<String, (usize, usize)>> = Mutex::default();
    let chunking = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((path, content)) = sample.get(i) else {
                        break;
                    };
                    let relative = path.strip_prefix(&root).unwrap().to_string_lossy();
                    let meta = FileMeta::new("rust", SourceType::Guide, &relative);
                    let chunks = chunk_html(content, &meta).len();
                    let top = relative.split('/').next().unwrap_or("").to_string();
                    let mut per_dir = per_dir.lock().unwrap();
                    let entry = per_dir.entry(top).or_default();
                    entry.0 += 1;
                    entry.1 += chunks;
                }
            });
        }
    });
    let chunking = chunking.elapsed();
    let per_dir = per_dir.into_inner().unwrap();
    let chunks: usize = per_dir.values().map(|v| v.1).sum();
    let mut largest: Vec<_> = per_dir.iter().collect();
    largest.sort_by_key(|(_, v)| std::cmp::Reverse(v.1));
    eprintln!(
        "rustup docs {}: {} files, {} pages kept (read and filtered in {filtered:?}); \
             chunked 1 page in {stride}: {} pages -> {chunks} chunks in {chunking:?} on {workers} threads; \
             whole tree ~{} chunks in ~{:?}; largest dirs (pages, chunks): {:?}",
        root.display(),
        files.len(),
        kept.len(),
        sample.len(),
        chunks * stride,
        chunking * stride as u32,
        &largest[..largest.len().min(10)]
    );
    assert!(kept.len() > 1000 && chunks > sample.len());
}
