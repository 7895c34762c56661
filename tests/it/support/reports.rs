//! Assertions on the reports the build tools return.

use std::collections::BTreeSet;

use serde_json::{Value, json};

pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The failure named `name` in a test report.
pub fn failure<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no failure named {name}: {report}"))
}

/// A build report of `tool` with one error and 50 of its warnings listed, `omitted` counted.
pub fn assert_diagnostics_capped(tool: &str, report: &Value, omitted_warnings: u64) {
    assert_eq!(
        report["errors"].as_array().unwrap().len(),
        1,
        "{tool}: {report}"
    );
    assert_eq!(report["warnings"].as_array().unwrap().len(), 50, "{tool}");
    assert_eq!(
        (&report["omitted_errors"], &report["omitted_warnings"]),
        (&json!(0), &json!(omitted_warnings)),
        "{tool}"
    );
}
