//! Shelf geometry.

use std::f64::consts::PI;

/// Anything with an area.
pub trait Shape {
    fn area(&self) -> f64;

    fn name(&self) -> &'static str;

    fn describe(&self) -> String {
        format!("{} of area {:.2}", self.name(), self.area())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    pub fn distance_to(self, other: Point) -> f64 {
        ((self.x - other.x).powi(2) + (self.y - other.y).powi(2)).sqrt()
    }

    pub fn offset(self, dx: f64, dy: f64) -> Point {
        Point::new(self.x + dx, self.y + dy)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub origin: Point,
    pub width: f64,
    pub height: f64,
}

impl Rect {
    /// A rectangle with its origin at (0, 0).
    pub fn new(width: f64, height: f64) -> Self {
        Rect::at(Point::new(0.0, 0.0), width, height)
    }

    pub fn at(origin: Point, width: f64, height: f64) -> Self {
        Rect {
            origin,
            width,
            height,
        }
    }

    pub fn center(&self) -> Point {
        self.origin.offset(self.width / 2.0, self.height / 2.0)
    }

    pub fn contains(&self, point: Point) -> bool {
        point.x >= self.origin.x
            && point.y >= self.origin.y
            && point.x <= self.origin.x + self.width
            && point.y <= self.origin.y + self.height
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Circle {
    pub center: Point,
    pub radius: f64,
}

impl Circle {
    pub fn new(center: Point, radius: f64) -> Self {
        Circle { center, radius }
    }
}

impl Shape for Rect {
    fn area(&self) -> f64 {
        self.width * self.height
    }

    fn name(&self) -> &'static str {
        "rectangle"
    }
}

impl Shape for Circle {
    fn area(&self) -> f64 {
        PI * self.radius * self.radius
    }

    fn name(&self) -> &'static str {
        "circle"
    }
}

pub fn total_area(shapes: &[&dyn Shape]) -> f64 {
    let mut sum = 0.0;
    for shape in shapes {
        sum += shape.area();
    }
    sum
}

/// The shape with the largest area.
pub fn largest<'a>(shapes: &[&'a dyn Shape]) -> Option<&'a dyn Shape> {
    shapes
        .iter()
        .copied()
        .max_by(|a, b| a.area().total_cmp(&b.area()))
}

/// How many `item` boxes fit on `shelf` side by side, without turning them.
pub fn fits_on_shelf(shelf: &Rect, item: &Rect) -> u32 {
    let across = (shelf.width / item.width).floor() as u32;
    let deep = (shelf.height / item.height).floor() as u32;
    across * deep
}

/// Widens every rectangle to at least the width of the first one.
pub fn align_widths(rects: &mut [Rect]) {
    if let Some((first, rest)) = rects.split_first_mut() {
        for rect in rest {
            rect.width = rect.width.max(first.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_areas() {
        let rect = Rect::new(3.0, 4.0);
        let circle = Circle::new(Point::new(0.0, 0.0), 1.0);
        assert_eq!(rect.area(), 12.0);
        assert!((circle.area() - PI).abs() < 1e-9);
        assert_eq!(total_area(&[&rect, &circle]), 12.0 + PI);
        assert_eq!(rect.describe(), "rectangle of area 12.00");
    }

    #[test]
    fn finds_the_largest_shape() {
        let small = Rect::new(1.0, 1.0);
        let big = Circle::new(Point::new(0.0, 0.0), 2.0);
        assert_eq!(largest(&[&small, &big]).unwrap().name(), "circle");
        assert_eq!(largest(&[&small]).unwrap().name(), "rectangle");
        assert!(largest(&[]).is_none());
    }

    #[test]
    fn finds_centers_and_containment() {
        let rect = Rect::at(Point::new(1.0, 1.0), 4.0, 2.0);
        assert_eq!(rect.center(), Point::new(3.0, 2.0));
        assert!(rect.contains(Point::new(2.0, 2.0)));
        assert!(!rect.contains(Point::new(0.0, 2.0)));
        assert_eq!(Point::new(0.0, 0.0).distance_to(Point::new(3.0, 4.0)), 5.0);
    }

    #[test]
    fn counts_boxes_on_a_shelf() {
        let shelf = Rect::new(100.0, 40.0);
        assert_eq!(fits_on_shelf(&shelf, &Rect::new(30.0, 20.0)), 6);
        assert_eq!(fits_on_shelf(&shelf, &Rect::new(120.0, 1.0)), 0);
    }

    #[test]
    fn aligns_widths() {
        let mut rects = [
            Rect::new(5.0, 1.0),
            Rect::new(2.0, 1.0),
            Rect::new(7.0, 1.0),
        ];
        align_widths(&mut rects);
        let widths: Vec<f64> = rects.iter().map(|rect| rect.width).collect();
        assert_eq!(widths, [5.0, 5.0, 7.0]);
    }
}
