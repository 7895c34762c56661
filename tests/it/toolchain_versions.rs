//! The build suites (`mcp_build_tools`, `mcp_mix_tools`) compare what drydock returns from a
//! live rustc and Elixir with exact messages, codes and positions, which change between
//! compiler versions. They were written for the toolchains below; on another one, this test
//! says so first, so a failing message is read as a new compiler, not a broken parser.

use std::process::Command;

/// The toolchains the live suites' expected diagnostics were written for (the recorded
/// fixtures in tests/fixtures/ name the same versions in their READMEs).
const RUSTC: &str = "rustc 1.95.";
const ELIXIR: &str = "Elixir 1.14.";
const OTP: &str = "25";

fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed by the build suites: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn the_live_build_suites_were_written_for_this_machines_toolchains() {
    let rustc = output("rustc", &["--version"]);
    let elixir = output("elixir", &["--version"]);
    let otp = output(
        "erl",
        &[
            "-noshell",
            "-eval",
            "io:format(\"~s\", [erlang:system_info(otp_release)]), halt().",
        ],
    );
    let mut other = Vec::new();
    if !rustc.starts_with(RUSTC) {
        other.push(format!("{RUSTC}x expected, found {}", rustc.trim()));
    }
    if !elixir.lines().any(|l| l.starts_with(ELIXIR)) {
        other.push(format!("{ELIXIR}x expected, found {}", elixir.trim()));
    }
    if otp.trim() != OTP {
        other.push(format!("OTP {OTP} expected, found OTP {}", otp.trim()));
    }
    assert!(
        other.is_empty(),
        "the exact diagnostics in tests/it/mcp_build_tools.rs and tests/it/mcp_mix_tools.rs \
         were written for other toolchains ({}); their failures here are a new compiler's \
         wording: record the fixtures again (tests/fixtures/*/README.md) and update them",
        other.join("; ")
    );
}
