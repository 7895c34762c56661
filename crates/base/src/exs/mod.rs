//! Every Elixir script drydock runs (as `elixir -e SCRIPT`), in one place that the toolchain
//! and the docs both read. `json.exs` is the JSON encoder the scripts that print JSON share
//! (Elixir before 1.18 has none built in).

/// Reads a mix project through Mix (`project_info`).
pub const PROJECT_INFO: &str = concat!(include_str!("json.exs"), include_str!("project_info.exs"));

/// The ExUnit formatter `mix test` is given; it prints one JSON event a line.
pub const EXUNIT_FORMATTER: &str = concat!(
    include_str!("json.exs"),
    include_str!("exunit_formatter.exs")
);

/// What `mix format` would change, as a diff per file.
pub const FORMAT_DIFF: &str = include_str!("format_diff.exs");

/// The OTP, ERTS and Elixir versions and Elixir's ebin, for dialyzer's PLT.
pub const OTP_TOOLCHAIN: &str = include_str!("otp_toolchain.exs");

/// `elixir -e FETCH_DOCS -- EBIN_DIR...` prints the docs in the beams as JSON lines.
pub const FETCH_DOCS: &str = concat!(include_str!("json.exs"), include_str!("fetch_docs.exs"));

/// The Elixir version and its standard library's directory, for the toolchain docs.
pub const ELIXIR_LIB_DIR: &str = include_str!("elixir_lib_dir.exs");
