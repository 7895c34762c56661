//! A waiting prompt read off the screen: the question, the context it asks about (the
//! command to approve), the options exactly as offered and which one is highlighted, and
//! an id that names this prompt and no other.
//!
//! The layout is the one the agent CLIs share (agent-lab §4, §9, §10): a numbered menu
//! (`❯ 1. Yes`, `  2. No`; `›` in Codex, `●` in Gemini for the highlighted line), the
//! question on the nearest line above it that ends in `?`, and the details between a
//! full-width `─` rule and the menu.

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use super::rules::WaitKind;

/// How far above the menu the question may be (Codex puts the reason and the command
/// between them).
const QUESTION_REACH: usize = 12;
/// Non-option lines allowed between two options (descriptions, a separator).
const OPTION_GAP: usize = 3;

/// An option's number is ASCII digits: `\d` would take any Unicode digit (`٣`), which is
/// no number a key can choose.
static OPTION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?<indent>\s*)(?:(?<marker>[❯›●>○◯])\s*)?(?<number>[0-9]{1,2})\.\s+(?<label>\S.*)$",
    )
    .expect("valid regex")
});

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prompt {
    pub kind: WaitKind,
    pub question: String,
    /// The lines that say what the question is about, trimmed: the tool, the command or
    /// file, the reason.
    pub context: Vec<String>,
    pub options: Vec<PromptOption>,
    pub id: PromptId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptOption {
    pub number: u32,
    pub label: String,
    /// Indented lines under the option (AskUserQuestion's descriptions).
    pub description: Vec<String>,
    /// The highlighted option, which Enter picks.
    pub selected: bool,
}

/// A hash of the kind, question, context and options, not of which option is highlighted:
/// moving the highlight does not make it another prompt, changing the command does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct PromptId(String);

impl PromptId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for PromptId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The prompt on `lines` (the profile's prompt region), if one is there: a menu of at least
/// two options, or for a question without a menu its last line ending in `?`.
pub fn extract_prompt(kind: WaitKind, lines: &[&str], context_above: usize) -> Option<Prompt> {
    let unboxed: Vec<&str> = lines.iter().map(|line| strip_box_sides(line)).collect();
    let lines = &unboxed[..];
    let menu = last_menu(lines);
    let menu_top = menu.first().map_or(lines.len(), |option| option.line);
    if menu.is_empty() && kind != WaitKind::Question {
        return None;
    }
    let question_line = question_line(lines, menu_top)?;
    let mut context = context_above_line(lines, question_line, context_above);
    context.extend(
        lines[question_line + 1..menu_top]
            .iter()
            .filter(|line| !is_blank_or_rule(line))
            .map(|line| line.trim().to_string()),
    );
    let options: Vec<PromptOption> = menu.into_iter().map(|m| m.option).collect();
    let question = lines[question_line].trim().to_string();
    let id = prompt_id(kind, &question, &context, &options);
    Some(Prompt {
        kind,
        question,
        context,
        options,
        id,
    })
}

struct MenuLine {
    line: usize,
    option: PromptOption,
}

/// The last run of options numbered 1, 2, 3… with at most OPTION_GAP other lines between
/// neighbours; each option takes the lines indented under its label as its description.
fn last_menu(lines: &[&str]) -> Vec<MenuLine> {
    let mut menus: Vec<Vec<MenuLine>> = Vec::new();
    let mut current: Vec<MenuLine> = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(captures) = OPTION_LINE.captures(line) else {
            continue;
        };
        let Ok(number) = captures["number"].parse::<u32>() else {
            continue;
        };
        let follows = current.last().is_some_and(|last| {
            last.option.number + 1 == number && index - last.line <= OPTION_GAP + 1
        });
        if !follows {
            menus.push(std::mem::take(&mut current));
            if number != 1 {
                continue;
            }
        }
        let label_column = line[..captures.name("label").expect("label").start()]
            .chars()
            .count();
        // Codex sets a description in a column beside the label, two spaces or more away.
        let (label, beside) = match captures["label"].trim_end().split_once("  ") {
            Some((label, beside)) => (label, Some(beside.trim().to_string())),
            None => (captures["label"].trim_end(), None),
        };
        let mut description: Vec<String> = beside.into_iter().collect();
        description.extend(self::description(lines, index + 1, label_column));
        current.push(MenuLine {
            line: index,
            option: PromptOption {
                number,
                label: label.to_string(),
                description,
                selected: captures
                    .name("marker")
                    .is_some_and(|m| matches!(m.as_str(), "❯" | "›" | "●" | ">")),
            },
        });
    }
    menus.push(current);
    menus
        .into_iter()
        .rfind(|menu| menu.len() >= 2)
        .unwrap_or_default()
}

fn description(lines: &[&str], from: usize, label_column: usize) -> Vec<String> {
    lines[from.min(lines.len())..]
        .iter()
        .take_while(|line| {
            !line.trim().is_empty()
                && !OPTION_LINE.is_match(line)
                && !is_blank_or_rule(line)
                && indent(line) >= label_column
        })
        .map(|line| line.trim().to_string())
        .collect()
}

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count()
}

/// The nearest line above `menu_top` that ends in `?`, else the nearest non-blank one.
fn question_line(lines: &[&str], menu_top: usize) -> Option<usize> {
    let above = (0..menu_top).rev().take(QUESTION_REACH);
    above
        .clone()
        .find(|&i| lines[i].trim_end().ends_with('?'))
        .or_else(|| above.clone().find(|&i| !is_blank_or_rule(lines[i])))
}

/// Up to `limit` non-blank lines above `question`, stopping at a full-width `─` rule.
fn context_above_line(lines: &[&str], question: usize, limit: usize) -> Vec<String> {
    let mut context: Vec<String> = lines[..question]
        .iter()
        .rev()
        .take_while(|line| !is_top_rule(line))
        .filter(|line| !is_blank_or_rule(line))
        .take(limit)
        .map(|line| line.trim().to_string())
        .collect();
    context.reverse();
    context
}

/// A dialog drawn in a box (`│ ● 1. Trust folder     │`) reads like one without.
fn strip_box_sides(line: &str) -> &str {
    let trimmed = line.trim_end();
    match (
        trimmed.trim_start().strip_prefix('│'),
        trimmed.strip_suffix('│'),
    ) {
        (Some(_), Some(_)) if trimmed.trim_start().len() > '│'.len_utf8() => {
            let start = trimmed.find('│').expect("starts with │") + '│'.len_utf8();
            &trimmed[start..trimmed.len() - '│'.len_utf8()]
        }
        _ => line,
    }
}

fn is_top_rule(line: &str) -> bool {
    let line = line.trim();
    line.chars().count() >= 10 && line.chars().all(|c| c == '─')
}

/// Blank, or drawn only with box and rule characters (`╌╌╌` around Claude's command).
fn is_blank_or_rule(line: &str) -> bool {
    line.trim()
        .chars()
        .all(|c| ('\u{2500}'..='\u{257f}').contains(&c))
}

fn prompt_id(
    kind: WaitKind,
    question: &str,
    context: &[String],
    options: &[PromptOption],
) -> PromptId {
    let mut hash = Fnv1a::new();
    hash.field(kind.name());
    hash.field(question);
    for line in context {
        hash.field(line);
    }
    for option in options {
        hash.field(&option.number.to_string());
        hash.field(&option.label);
        for line in &option.description {
            hash.field(line);
        }
    }
    PromptId(format!("{:016x}", hash.0))
}

/// FNV-1a, 64 bits: stable across Rust releases, unlike std's hasher.
struct Fnv1a(u64);

impl Fnv1a {
    fn new() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    fn field(&mut self, text: &str) {
        for &byte in text.as_bytes().iter().chain(&[0xff]) {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        text.lines().collect()
    }

    const BASH: &str = "\
────────────────────────────────────────
 Bash command

   Writing hi to a file
 ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
   echo hi > /tmp/lab/x
 ╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌

 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and always allow access to lab/ from this project
   3. No

 Esc to cancel · Tab to amend";

    #[test]
    fn reads_question_context_and_options() {
        let prompt = extract_prompt(WaitKind::Permission, &lines(BASH), 8).unwrap();
        assert_eq!(prompt.question, "Do you want to proceed?");
        assert_eq!(
            prompt.context,
            [
                "Bash command",
                "Writing hi to a file",
                "echo hi > /tmp/lab/x"
            ]
        );
        let offered: Vec<(u32, &str, bool)> = prompt
            .options
            .iter()
            .map(|o| (o.number, o.label.as_str(), o.selected))
            .collect();
        assert_eq!(
            offered,
            [
                (1, "Yes", true),
                (
                    2,
                    "Yes, and always allow access to lab/ from this project",
                    false
                ),
                (3, "No", false)
            ]
        );
    }

    #[test]
    fn the_id_follows_the_command_but_not_the_highlight() {
        let id = |text: &str| {
            extract_prompt(WaitKind::Permission, &lines(text), 8)
                .unwrap()
                .id
        };
        let moved = BASH
            .replace(" ❯ 1. Yes", "   1. Yes")
            .replace("   3. No", " ❯ 3. No");
        let other_command = BASH.replace("echo hi", "rm -rf");
        assert_eq!(id(BASH), id(&moved));
        assert_ne!(id(BASH), id(&other_command));
        assert_eq!(id(BASH).as_str().len(), 16);
    }

    #[test]
    fn no_menu_no_prompt_except_for_a_question() {
        let text = "some output\nWhat should Claude do instead?\n";
        assert!(extract_prompt(WaitKind::Permission, &lines(text), 8).is_none());
        let question = extract_prompt(WaitKind::Question, &lines(text), 0).unwrap();
        assert_eq!(question.question, "What should Claude do instead?");
        assert!(question.options.is_empty());
    }

    #[test]
    fn numbered_lists_in_the_transcript_are_not_the_menu() {
        let text = format!("Plan:\n1. read\n2. write\n3. test\n\n{BASH}");
        let prompt = extract_prompt(WaitKind::Permission, &lines(&text), 8).unwrap();
        assert_eq!(prompt.options[0].label, "Yes");
        assert_eq!(prompt.options.len(), 3);
    }

    #[test]
    fn options_numbered_with_other_digits_are_not_a_menu() {
        // Arabic-Indic digits are digits to `\d`, and were parsed as ASCII ones.
        let text = "Do you want to proceed?\n❯ ١. Yes\n  ٢. No\n  ٣. Maybe";
        assert!(extract_prompt(WaitKind::Permission, &lines(text), 0).is_none());
        let mixed = "Do you want to proceed?\n❯ 1. Yes\n  2. No\n  ٣. Maybe";
        let prompt = extract_prompt(WaitKind::Permission, &lines(mixed), 0).unwrap();
        let labels: Vec<&str> = prompt.options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, ["Yes", "No"]);
    }

    #[test]
    fn a_menu_in_a_box_reads_like_one_without() {
        let text = "╭──────────────╮\n│ Trust it?    │\n│ ● 1. Yes     │\n│   2. No      │\n╰──────────────╯";
        let prompt = extract_prompt(WaitKind::Dialog, &lines(text), 0).unwrap();
        assert_eq!(prompt.question, "Trust it?");
        assert_eq!(prompt.options[1].label, "No");
        assert!(prompt.options[0].selected);
    }

    #[test]
    fn descriptions_are_the_lines_indented_under_a_label() {
        let text = "Which colour?\n❯ 1. Red\n     Warm.\n  2. Blue\n     Cool.\n     Calm.\n\nEnter to select";
        let prompt = extract_prompt(WaitKind::Choice, &lines(text), 0).unwrap();
        assert_eq!(prompt.options[0].description, ["Warm."]);
        assert_eq!(prompt.options[1].description, ["Cool.", "Calm."]);
    }

    #[test]
    fn a_description_in_a_column_beside_the_label_is_not_part_of_it() {
        // Codex 0.169.0's request_user_input menu (tests/fixtures/agents/recorded/).
        let text = "  Which colour?\n\n  › 1. Red                The colour of the lab's warning lights\n    2. Blue               The colour of the lab's coats\n    3. None of the above  Optionally, add details in notes (tab)";
        let prompt = extract_prompt(WaitKind::Choice, &lines(text), 0).unwrap();
        let labels: Vec<&str> = prompt.options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, ["Red", "Blue", "None of the above"]);
        assert_eq!(
            prompt.options[2].description,
            ["Optionally, add details in notes (tab)"]
        );
        assert!(prompt.options[0].selected);
    }
}
