//! A library whose tests fail in every way libtest can report.

/// Multiplies by ten.
///
/// ```
/// assert_eq!(cargo_failing::times_ten(5), 50);
/// ```
pub fn times_ten(n: u32) -> u32 {
    n * 10
}

/// Claims the wrong result, so this doc test fails.
///
/// ```
/// assert_eq!(cargo_failing::halve(10), 4);
/// ```
pub fn halve(n: u32) -> u32 {
    n / 2
}

/// Does not compile, so this doc test fails before it runs.
///
/// ```
/// let doubled: u32 = cargo_failing::double("two");
/// ```
pub fn double(n: u32) -> u32 {
    n * 2
}

/// A point whose `Debug` output spans several lines, as `{:#?}` output does.
#[derive(PartialEq)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

impl std::fmt::Debug for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Point {{\n    x: {},\n    y: {},\n}}", self.x, self.y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes() {
        assert_eq!(times_ten(1), 10);
    }

    #[test]
    fn also_passes() {
        assert_eq!(halve(8), 4);
    }

    #[test]
    fn compares_numbers() {
        assert_eq!(times_ten(500), 500);
    }

    #[test]
    fn compares_with_message() {
        assert_eq!(halve(9), 5, "halving {} should round up", 9);
    }

    #[test]
    fn compares_points() {
        assert_eq!(Point { x: 1, y: 2 }, Point { x: 1, y: 3 });
    }

    #[test]
    fn panics_with_message() {
        panic!("something went wrong: code {}", 7);
    }

    #[test]
    #[should_panic]
    fn should_panic_but_does_not() {
        assert_eq!(times_ten(0), 0);
    }

    #[test]
    fn prints_then_fails() {
        println!("first line of output");
        println!("second line of output");
        assert!(times_ten(2) > 100, "twenty is not over a hundred");
    }

    #[test]
    #[ignore = "hangs forever; run with include_ignored to exercise timeouts"]
    fn hangs_forever() {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
