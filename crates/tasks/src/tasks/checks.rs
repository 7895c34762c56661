//! The project's checks on a task's result, or on a result merged onto its branch: run
//! through drydock's own build tools, as the person configured them (`[tasks] land_checks`).

use std::path::Path;
use std::sync::Arc;

use super::isolation::{CheckResult, Checks};
use super::ledger::Ledger;
use crate::call::Call;
use crate::config::{Config, LandCheck};
use crate::process::{ProcessOutput, Termination};
use crate::render::Render;
use crate::toolchain::requests::{CompileRequest, TestRequest, TimeoutMs};
use crate::toolchain::{BuildKind, Toolchains};

/// Runs the project's checks.
pub(super) struct Checker {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    toolchains: Toolchains,
}

impl Checker {
    pub(super) fn new(ledger: Arc<Ledger>, config: Arc<Config>, toolchains: Toolchains) -> Checker {
        Checker {
            ledger,
            config,
            toolchains,
        }
    }

    /// The project's checks (`[tasks] land_checks`: compile, then test, by default) through
    /// drydock's own build tools, on `dir`; those after a failed one are not run.
    pub(super) async fn run(&self, dir: &Path) -> Checks {
        let project_path = dir.display().to_string();
        if let Err(error) = self.toolchains.resolve_project(&project_path, None) {
            return Checks::Skipped {
                why: error.to_string(),
            };
        }
        let stop = self.ledger.running_until().cloned().unwrap_or_default();
        let call = Call::silent(stop);
        let timeout = crate::millis::millis(self.config.tasks.landing.check_timeout);
        let timeout = TimeoutMs::new(timeout).expect("a check's timeout is at most a day");
        let mut results: Vec<CheckResult> = Vec::new();
        for check in &self.config.tasks.landing.checks {
            if let Some(failed) = results.iter().find(|r| !r.is_green()) {
                results.push(CheckResult {
                    tool: check.name().into(),
                    status: "skipped".into(),
                    summary: format!("not run: {} did not pass", failed.tool),
                    detail: None,
                });
                continue;
            }
            let build = |kind| {
                let req = CompileRequest {
                    project_path: project_path.clone(),
                    timeout_ms: Some(timeout),
                    ..CompileRequest::default()
                };
                self.toolchains.build(kind, req, &call)
            };
            let result = match check {
                LandCheck::Compile => check_result("compile", build(BuildKind::Compile).await),
                LandCheck::Lint => check_result("lint", build(BuildKind::Lint).await),
                LandCheck::TypeCheck => {
                    check_result("type_check", build(BuildKind::TypeCheck).await)
                }
                LandCheck::Test => {
                    let req = TestRequest {
                        project_path: project_path.clone(),
                        timeout_ms: Some(timeout),
                        ..TestRequest::default()
                    };
                    check_result("test", self.toolchains.test(req, &call).await)
                }
                LandCheck::Command { name, argv } => {
                    let ran = self
                        .toolchains
                        .command(&project_path, argv, Some(timeout), &call)
                        .await;
                    command_result(name, argv, ran)
                }
            };
            results.push(result);
        }
        Checks::Done { results }
    }
}

fn check_result<R: serde::Serialize + Render, E: std::fmt::Display>(
    tool: &str,
    result: Result<R, E>,
) -> CheckResult {
    match result {
        Ok(report) => {
            let status = serde_json::to_value(&report)
                .ok()
                .and_then(|v| v["status"].as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown".into());
            let rendered = report.render();
            let summary: Vec<&str> = rendered.lines().take(4).collect();
            let mut result = CheckResult {
                tool: tool.into(),
                status,
                summary: crate::text_budget::fit(&summary.join(" | "), 600, "cut"),
                detail: None,
            };
            if !result.is_green() {
                result.detail = Some(super::landing::detail(&rendered));
            }
            result
        }
        Err(error) => CheckResult {
            tool: tool.into(),
            status: "error".into(),
            summary: error.to_string(),
            detail: Some(error.to_string()),
        },
    }
}

/// How much of a failed command's output is kept: its end, where the failure is said.
const COMMAND_TAIL: usize = 1_500;

/// A project's own command as a check: green when it exits 0, else the end of its output.
fn command_result(
    name: &str,
    argv: &[String],
    ran: Result<ProcessOutput, crate::toolchain::ToolchainError>,
) -> CheckResult {
    let output = match ran {
        Ok(output) => output,
        Err(error) => {
            return CheckResult {
                tool: name.into(),
                status: "error".into(),
                summary: error.to_string(),
                detail: Some(error.to_string()),
            };
        }
    };
    let (status, ended) = match output.termination {
        Termination::Exited(0) => ("ok", "exited 0".to_string()),
        Termination::Exited(code) => ("failed", format!("exited {code}")),
        Termination::Signaled(signal) => ("failed", format!("was killed by signal {signal}")),
        Termination::TimedOut => ("timed_out", "did not end in time and was stopped".into()),
        Termination::Cancelled => ("cancelled", "was stopped: drydock is shutting down".into()),
    };
    let summary = format!(
        "`{}` {ended} after {:.1} s",
        argv.join(" "),
        output.duration.as_secs_f64()
    );
    let detail = (status != "ok").then(|| {
        let both = format!(
            "{}\n{}",
            output.stdout.text.trim_end(),
            output.stderr.text.trim_end()
        );
        let both = both.trim();
        let start = both
            .char_indices()
            .rev()
            .nth(COMMAND_TAIL)
            .map_or(0, |(at, _)| at);
        format!("{summary}\n{}", &both[start..])
    });
    CheckResult {
        tool: name.into(),
        status: status.into(),
        summary,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;

    /// Built alone: a directory that holds no project of a known toolchain is not checked,
    /// and says why, rather than failing a result.
    #[tokio::test]
    async fn a_directory_without_a_project_is_skipped_with_the_reason() {
        let setting = Setting::new("");
        let checker = setting.checker(&setting.ledger());
        let checks = checker.run(&setting.project()).await;
        let Checks::Skipped { why } = &checks else {
            panic!("skipped: {checks:?}");
        };
        assert!(!why.is_empty());
    }
}
