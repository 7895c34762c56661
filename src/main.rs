//! The `drydock` command: see `drydock::cli`.

fn main() -> std::process::ExitCode {
    drydock::cli::main()
}
