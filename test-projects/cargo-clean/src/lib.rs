//! A small library that compiles cleanly and whose tests all pass.

/// Adds two numbers.
///
/// ```
/// assert_eq!(cargo_clean::add(2, 3), 5);
/// ```
pub fn add(left: u64, right: u64) -> u64 {
    left + right
}

/// Greets someone by name.
///
/// ```
/// assert_eq!(cargo_clean::greet("drydock"), "Hello, drydock!");
/// ```
pub fn greet(name: &str) -> String {
    format!("Hello, {name}!")
}

/// Parses `--exit N`-style numbers, returning `None` for anything else.
pub fn parse_exit_code(text: &str) -> Option<i32> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_small_numbers() {
        assert_eq!(add(2, 2), 4);
    }

    #[test]
    fn greets_by_name() {
        assert_eq!(greet("world"), "Hello, world!");
    }

    #[test]
    fn parses_exit_codes() {
        assert_eq!(parse_exit_code(" 3 "), Some(3));
        assert_eq!(parse_exit_code("x"), None);
    }

    #[test]
    #[ignore = "slow; run with --include-ignored"]
    fn slow_test() {
        assert_eq!(add(1, 1), 2);
    }
}
