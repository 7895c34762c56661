//! A library with a small, fixed set of compile errors and warnings.

use std::collections::HashMap;

pub mod parser;
pub mod shapes;

pub fn answer() -> i32 {
    // rustc reports no unused-variable warning here: the body fails type checking.
    let unused = 5;
    "forty-two"
}

#[cfg(test)]
mod tests {
    #[test]
    fn answers() {
        assert_eq!(super::answer(), 42);
    }
}
