#[test]
fn parses() {
    assert_eq!(cargo_errors::parser::parse("ab"), 2);
}
