pub fn count_tokens(input: &str) -> usize {
    let separator = ' ';
    input.split_whitespace().count()
}
