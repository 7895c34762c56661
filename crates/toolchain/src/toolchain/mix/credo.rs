//! `mix credo --format json` issues as diagnostics.

use std::path::Path;

use serde::Deserialize;

use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{Diagnostic, Severity};

#[derive(Deserialize)]
struct CredoOutput {
    issues: Vec<CredoIssue>,
}

#[derive(Deserialize)]
struct CredoIssue {
    /// readability, design, consistency, refactor or warning.
    category: String,
    /// e.g. `Credo.Check.Readability.ModuleDoc`.
    check: String,
    message: String,
    filename: Option<String>,
    line_no: Option<u32>,
    column: Option<u32>,
    column_end: Option<u32>,
    trigger: Option<String>,
}

/// `None` when stdout holds no credo JSON (credo did not run).
pub(super) fn parse(stdout: &str, project_root: &Path) -> Option<Vec<Diagnostic>> {
    let start = stdout.find('{')?;
    let output: CredoOutput = serde_json::from_str(stdout[start..].trim_end()).ok()?;
    let paths = PathMapper::new(project_root, project_root);
    Some(
        output
            .issues
            .into_iter()
            .map(|issue| Diagnostic {
                file: issue.filename.as_deref().map(|f| paths.map(f)),
                line: issue.line_no,
                column: issue.column,
                end_line: issue.column_end.and(issue.line_no),
                end_column: issue.column_end,
                severity: Severity::Warning,
                code: Some(issue.check),
                message: issue.message,
                label: issue.trigger.map(|t| format!("{}: {t}", issue.category)),
                notes: Vec::new(),
                suggestions: Vec::new(),
                rendered: None,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The layout of Credo 1.7's JSON formatter (Credo.CLI.Output.Formatter.JSON); credo
    // cannot be installed here (no hex.pm), so this sample follows its documented fields.
    const SAMPLE: &str = r#"Compiling 1 file (.ex)
{
  "issues": [
    {
      "category": "readability",
      "check": "Credo.Check.Readability.ModuleDoc",
      "column": 11,
      "column_end": 16,
      "filename": "lib/shop.ex",
      "line_no": 1,
      "message": "Modules should have a @moduledoc tag.",
      "priority": 1,
      "scope": "Shop",
      "trigger": "Shop"
    },
    {
      "category": "warning",
      "check": "Credo.Check.Warning.IoInspect",
      "column": null,
      "column_end": null,
      "filename": "/abs/shop/lib/shop/cart.ex",
      "line_no": 9,
      "message": "There should be no calls to `IO.inspect/1`.",
      "priority": 15,
      "scope": "Shop.Cart.add",
      "trigger": null
    }
  ]
}
"#;

    #[test]
    fn issues_become_warnings_with_the_check_as_code() {
        let issues = parse(SAMPLE, Path::new("/abs/shop")).unwrap();
        assert_eq!(issues.len(), 2);
        assert_eq!(issues[0].file.as_deref(), Some("lib/shop.ex"));
        assert_eq!(
            (issues[0].line, issues[0].column, issues[0].end_column),
            (Some(1), Some(11), Some(16))
        );
        assert_eq!(
            issues[0].code.as_deref(),
            Some("Credo.Check.Readability.ModuleDoc")
        );
        assert_eq!(issues[0].label.as_deref(), Some("readability: Shop"));
        assert_eq!(issues[1].file.as_deref(), Some("lib/shop/cart.ex"));
        assert_eq!(issues[1].column, None);
        assert!(
            parse(
                "** (Mix) The task \"credo\" could not be found",
                Path::new("/")
            )
            .is_none()
        );
    }
}
