//! Text for a POSIX shell that drydock does not run itself: a command line a person or
//! another program (tmux, an agent's hook settings) hands to its shell. drydock's own children
//! never go through a shell.

/// `word` as one word for a POSIX shell: itself when it has nothing the shell treats
/// specially, else [`single_quoted`].
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.to_string(),
        false => single_quoted(word),
    }
}

/// `text` in single quotes, as a POSIX shell reads it back whatever it holds.
pub fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_reach_the_shell_as_they_are() {
        assert_eq!(single_quoted("/a b/c'd"), r"'/a b/c'\''d'");
        assert_eq!(
            shell_word("/opt/models/bge-small@v1.5"),
            "/opt/models/bge-small@v1.5"
        );
        for quoted in ["", "a b", "it's", "$HOME", "a%b", "*"] {
            assert_eq!(shell_word(quoted), single_quoted(quoted), "{quoted:?}");
        }
    }
}
