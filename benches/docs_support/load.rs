//! A background load like a cargo build's: one busy thread per core at normal priority,
//! hashing, until dropped. The docs benches measure latency with and without it in one run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use sha2::{Digest, Sha256};

pub struct BusyLoad {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl BusyLoad {
    /// As many busy threads as the machine has cores.
    pub fn start() -> BusyLoad {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut digest = [0u8; 32];
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..1000 {
                            let out = Sha256::digest(digest);
                            digest.copy_from_slice(&out);
                        }
                    }
                    std::hint::black_box(digest);
                })
            })
            .collect();
        BusyLoad { stop, threads }
    }

    pub fn threads(&self) -> usize {
        self.threads.len()
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
