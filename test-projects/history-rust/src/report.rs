//! Plain-text reports.

use crate::geometry::{Rect, Shape};
use crate::inventory::{Category, Inventory, Item};

/// A titled list of lines, underlined as wide as its widest line.
#[derive(Debug, Default)]
pub struct Report {
    title: String,
    lines: Vec<String>,
    width: usize,
}

impl Report {
    pub fn new(title: &str) -> Self {
        Report {
            title: title.to_string(),
            lines: Vec::new(),
            width: title.chars().count(),
        }
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn push_line(&mut self, line: impl Into<String>) {
        let line = line.into();
        self.width = self.width.max(line.chars().count());
        self.lines.push(line);
    }

    /// Ends the report with a rule as wide as the widest line.
    pub fn close(&mut self) {
        let rule = "-".repeat(self.width);
        self.lines.push(rule);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.title);
        out.push('\n');
        out.push_str(&"=".repeat(self.width));
        out.push('\n');
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// `1205` cents as `12.05`.
pub fn format_cents(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// `text` padded with spaces to `width` characters (never cut).
pub fn pad_right(text: &str, width: usize) -> String {
    let padding = width.saturating_sub(text.chars().count());
    format!("{text}{}", " ".repeat(padding))
}

pub fn category_label(category: Category) -> &'static str {
    match category {
        Category::General => "general",
        Category::Fasteners => "fasteners",
        Category::Paint => "paint",
    }
}

pub fn item_line(item: &Item) -> String {
    format!(
        "{} {:>4} x {:>6}  {}",
        pad_right(&item.name, 8),
        item.quantity,
        format_cents(item.price_cents),
        category_label(item.category)
    )
}

/// One line per item, sorted by name, then the total value.
pub fn inventory_report(inventory: &Inventory) -> Report {
    let mut report = Report::new("Inventory");
    let mut total = 0;
    for item in inventory.sorted_items() {
        report.push_line(item_line(item));
        total += item.value();
    }
    report.push_line(format!("total: {}", format_cents(total)));
    report.close();
    report
}

/// How much of the shelf's area the boxes take, in percent.
pub fn shelf_usage(shelf: &Rect, boxes: &[Rect]) -> f64 {
    let used: f64 = boxes.iter().map(|b| b.area()).sum();
    used * 100.0 / shelf.area()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_cents() {
        assert_eq!(format_cents(1205), "12.05");
        assert_eq!(format_cents(7), "0.07");
    }

    #[test]
    fn pads_names() {
        assert_eq!(pad_right("nut", 5), "nut  ");
        assert_eq!(pad_right("washer", 3), "washer");
    }

    #[test]
    fn renders_a_report() {
        let mut report = Report::new("Stock");
        report.push_line("bolt 3");
        report.push_line("a longer line");
        report.close();
        assert_eq!(report.title(), "Stock");
        assert_eq!(
            report.render(),
            "Stock\n=============\nbolt 3\na longer line\n-------------\n"
        );
    }

    #[test]
    fn reports_an_inventory() {
        let mut inventory = Inventory::new();
        inventory.add(Item::new("nut", 2, 10, Category::Fasteners));
        inventory.add(Item::new("bolt", 10, 25, Category::Fasteners));
        let report = inventory_report(&inventory);
        assert_eq!(
            report.lines(),
            [
                "bolt       10 x   0.25  fasteners",
                "nut         2 x   0.10  fasteners",
                "total: 2.70",
                "---------------------------------",
            ]
        );
    }

    #[test]
    fn measures_shelf_usage() {
        let shelf = Rect::new(10.0, 10.0);
        let boxes = [Rect::new(5.0, 5.0), Rect::new(5.0, 2.0)];
        assert_eq!(shelf_usage(&shelf, &boxes), 35.0);
    }
}
