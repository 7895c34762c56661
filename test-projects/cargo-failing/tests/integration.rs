use cargo_failing::{halve, times_ten};

#[test]
fn integration_passes() {
    assert_eq!(times_ten(3), 30);
}

#[test]
fn integration_fails() {
    assert_eq!(halve(7), 4);
}
