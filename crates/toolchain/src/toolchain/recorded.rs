//! Output recorded from the real tools, for the parsers' tests: `tests/fixtures/<tool>/` holds
//! per case `<case>.stdout`, `<case>.stderr`, `<case>.exit` and `<case>.root` (the directory
//! it was recorded in, since the tools print absolute paths); `mix/newer/` holds what newer
//! Elixir versions print. Each folder's `record.sh` records them again.

use std::path::{Path, PathBuf};

/// One recorded case.
pub struct Recorded {
    tool: &'static str,
    case: String,
}

pub fn cargo(case: &str) -> Recorded {
    Recorded::of("cargo", case)
}

pub fn mix(case: &str) -> Recorded {
    Recorded::of("mix", case)
}

pub fn dialyzer(case: &str) -> Recorded {
    Recorded::of("dialyzer", case)
}

/// What a newer Elixir printed (`tests/fixtures/mix/newer/<file>`).
pub fn newer_mix(file: &str) -> String {
    read(&path(&format!("mix/newer/{file}")))
}

/// A file under `tests/fixtures/`.
pub fn path(relative: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/fixtures")
        .join(relative)
}

impl Recorded {
    fn of(tool: &'static str, case: &str) -> Self {
        Self {
            tool,
            case: case.to_string(),
        }
    }

    pub fn stdout(&self) -> String {
        self.file("stdout")
    }

    pub fn stderr(&self) -> String {
        self.file("stderr")
    }

    /// Both streams, as the mix parsers take them.
    pub fn streams(&self) -> (String, String) {
        (self.stdout(), self.stderr())
    }

    /// The project directory the case was recorded in.
    pub fn root(&self) -> PathBuf {
        PathBuf::from(self.file("root").trim_end())
    }

    fn file(&self, extension: &str) -> String {
        read(&path(&format!("{}/{}.{extension}", self.tool, self.case)))
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}
