/// The area of a rectangle.
pub fn area(width: u32, height: u32) -> u32 { width * height }

/// The perimeter of a rectangle.
pub fn perimeter(width: u32, height: u32) -> u32 {
    2 * (width + height)
}

#[cfg(test)]
mod tests {
    #[test]
    fn measures_a_rectangle() {
        assert_eq!(super::area(3, 4), 12);
        assert_eq!(super::perimeter(3,4), 14);
    }
}
