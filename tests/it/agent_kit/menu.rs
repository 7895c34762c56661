//! The numbered menu of a prompt as the screen shows it: `❯ 1. Yes` (Claude Code) or
//! `› 1. Yes, proceed (y)` (Codex), one option a line, the cursor on the selected one.

use regex::Regex;

/// One option of a menu, as offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MenuOption {
    pub number: u32,
    /// The label without its number, and without a description in a column of its own
    /// (two spaces or more away, as Codex lays its dialogs out).
    pub label: String,
    /// The cursor is on it.
    pub selected: bool,
}

/// The numbered options listed below the line that holds `question`.
pub fn menu_after(screen: &str, question: &str) -> Vec<MenuOption> {
    let option = Regex::new(r"^\s*([❯›>])?\s*(\d+)\.\s(\S.*?)(?:\s{2,}.*)?$").unwrap();
    screen
        .lines()
        .skip_while(|line| !line.contains(question))
        .skip(1)
        .filter_map(|line| option.captures(line))
        .map(|c| MenuOption {
            number: c[2].parse().unwrap(),
            label: c[3].to_string(),
            selected: c.get(1).is_some(),
        })
        .collect()
}

/// The labels, to compare with a list of strings.
pub fn labels(options: &[MenuOption]) -> Vec<&str> {
    options.iter().map(|o| o.label.as_str()).collect()
}
