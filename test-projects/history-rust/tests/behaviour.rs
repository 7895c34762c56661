use history_rust::geometry::fits_on_shelf;
use history_rust::report::{format_cents, inventory_report};
use history_rust::{load, parse_line, Rect, Shape};

const STOCK: &str = "# name, quantity, price in cents
bolt, 10, 25
nut, 40, 5

primer, 2, 1250
";

#[test]
fn loads_a_stock_file() {
    let inventory = load(STOCK).unwrap();
    assert_eq!(inventory.len(), 3);
    assert_eq!(format_cents(inventory.total_value()), "29.50");
}

#[test]
fn renders_the_stock_report() {
    let text = inventory_report(&load(STOCK).unwrap()).render();
    assert!(text.starts_with("Inventory\n"), "{text}");
    assert!(text.contains("\ntotal: 29.50\n"), "{text}");
}

#[test]
fn moves_stock_between_items() {
    let mut inventory = load(STOCK).unwrap();
    inventory.transfer("nut", "bolt", 15).unwrap();
    assert_eq!(inventory.quantity_of("nut"), 25);
    assert_eq!(inventory.quantity_of("bolt"), 25);
    assert!(inventory.transfer("nut", "bolt", 26).is_err());
}

#[test]
fn rejects_bad_lines() {
    assert!(parse_line("bolt, ten, 25").is_err());
}

#[test]
fn fits_boxes_on_a_shelf() {
    let shelf = Rect::new(100.0, 40.0);
    let small = Rect::new(30.0, 20.0);
    assert_eq!(fits_on_shelf(&shelf, &small), 6);
    assert_eq!(small.area(), 600.0);
}
