//! The core of the workspace: compiles cleanly, but one function trips clippy.

pub mod shapes;

/// Doubles a number.
pub fn double(n: i64) -> i64 {
    return n * 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles() {
        assert_eq!(double(21), 42);
    }
}
