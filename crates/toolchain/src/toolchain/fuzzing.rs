//! The toolchains' parsers as the fuzz targets reach them: each toolchain's own `fuzzing`.

pub use super::cargo::fuzzing::cargo_output;
pub use super::mix::fuzzing::mix_output;
