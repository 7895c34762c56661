use cargo_clean::{add, greet};

#[test]
fn add_is_commutative() {
    assert_eq!(add(3, 4), add(4, 3));
}

#[test]
fn greet_mentions_the_name() {
    assert!(greet("Ada").contains("Ada"));
}
