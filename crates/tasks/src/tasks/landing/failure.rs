//! A failed check as the agent that must fix it reads it: drydock's own report of the tool
//! (errors with their codes and places, failing tests with their messages), its warnings
//! and the raw output left out, within a budget.

/// How much of a failed check is kept.
const DETAIL_BUDGET: usize = 2_000;

/// The part of a build or test tool's rendered report that says what failed.
pub fn detail(rendered: &str) -> String {
    let kept: Vec<&str> = rendered
        .lines()
        .take_while(|line| *line != "--- output ---")
        .filter(|line| !is_warning(line))
        .collect();
    let text = kept.join("\n");
    match text.char_indices().nth(DETAIL_BUDGET) {
        Some((cut, _)) => format!("{}\n… (cut)", &text[..cut]),
        None => text,
    }
}

/// A diagnostic line of severity warning: `[place: ]warning[CODE]: message`.
fn is_warning(line: &str) -> bool {
    let after_place = match line.find(": warning") {
        Some(at) => &line[at + 2..],
        None => line,
    };
    after_place.starts_with("warning:") || after_place.starts_with("warning[")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_failing_tests_are_kept_and_warnings_and_output_dropped() {
        let rendered = "build_failed: 1 error(s), 2 warning(s) in 812 ms\n\
                        tests/b.rs:3:5: error[E0425]: cannot find function `one` in this scope (not found in this scope)\n\
                        src/lib.rs:1:4: warning: function `uno` is never used\n\
                        warning[unused_imports]: unused import\n\
                        --- output ---\n\
                        Compiling x v0.1.0\nerror: could not compile";
        assert_eq!(
            detail(rendered),
            "build_failed: 1 error(s), 2 warning(s) in 812 ms\n\
             tests/b.rs:3:5: error[E0425]: cannot find function `one` in this scope (not found in this scope)"
        );
        let tests = "failed: 1 passed, 1 failed, 0 ignored, 0 filtered out in 20 ms\n\
                     FAILED tests::adds_up at src/lib.rs:9: assertion `left == right` failed (left: 3, right: 4)";
        assert_eq!(detail(tests), tests);
    }

    #[test]
    fn a_flood_is_cut_to_its_head() {
        let flood = "FAILED t: boom\n".repeat(10_000);
        let cut = detail(&flood);
        assert!(cut.ends_with("\n… (cut)"));
        assert!(cut.chars().count() < DETAIL_BUDGET + 10);
    }
}
