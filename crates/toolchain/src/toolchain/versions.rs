//! Toolchain versions per project directory, remembered for a minute: without it every
//! project_info starts `rustc --version` and `cargo --version` again.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Long enough to make repeated calls cheap, short enough that a `rustup update` shows soon.
const TIME_TO_LIVE: Duration = Duration::from_secs(60);

pub(super) type Versions = BTreeMap<String, String>;

#[derive(Default)]
pub struct VersionCache {
    entries: Mutex<HashMap<PathBuf, (Instant, Versions)>>,
}

impl VersionCache {
    pub fn get(&self, dir: &Path) -> Option<Versions> {
        let entries = self.entries.lock().expect("version cache poisoned");
        entries
            .get(dir)
            .filter(|(at, _)| at.elapsed() < TIME_TO_LIVE)
            .map(|(_, versions)| versions.clone())
    }

    pub fn put(&self, dir: &Path, versions: Versions) {
        let mut entries = self.entries.lock().expect("version cache poisoned");
        entries.retain(|_, (at, _)| at.elapsed() < TIME_TO_LIVE);
        entries.insert(dir.to_path_buf(), (Instant::now(), versions));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_per_directory() {
        let cache = VersionCache::default();
        assert_eq!(cache.get(Path::new("/a")), None);
        let versions = Versions::from([("rustc".to_string(), "rustc 1.95.0".to_string())]);
        cache.put(Path::new("/a"), versions.clone());
        assert_eq!(cache.get(Path::new("/a")), Some(versions));
        assert_eq!(cache.get(Path::new("/b")), None);
    }
}
