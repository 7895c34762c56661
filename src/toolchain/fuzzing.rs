//! The toolchains' parsers as the fuzz targets reach them: each toolchain's own `fuzzing`.

pub(crate) use super::cargo::fuzzing::cargo_output;
pub(crate) use super::mix::fuzzing::mix_output;
