//! Stock-keeping helpers: parse `name,quantity,price_cents` lines, keep an
//! inventory, render plain-text reports and measure shelf space.

pub mod geometry;
pub mod inventory;
pub mod parser;
pub mod report;

pub use geometry::{Circle, Point, Rect, Shape};
pub use inventory::{Category, Inventory, InventoryError, Item};
pub use parser::{parse_all, parse_line, ParseError, Record};
pub use report::Report;

/// Builds an inventory from `name,quantity,price_cents` lines.
pub fn load(input: &str) -> Result<Inventory, ParseError> {
    let records = parse_all(input)?;
    let mut inventory = Inventory::new();
    for record in records {
        inventory.add(Item::from_record(record, Category::General));
    }
    Ok(inventory)
}

/// The total quantity over all records.
pub fn total_quantity(records: &[Record]) -> u32 {
    records.iter().map(|record| record.quantity).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_an_inventory() {
        let inventory = load("bolt,3,10\nnut,4,5\nbolt,1,10\n").unwrap();
        assert_eq!(inventory.len(), 2);
        assert_eq!(inventory.quantity_of("bolt"), 4);
        assert_eq!(inventory.total_value(), 60);
    }

    #[test]
    fn totals_quantities() {
        let records = parse_all("bolt,3,10\n# a comment\nnut,4,5").unwrap();
        assert_eq!(total_quantity(&records), 7);
    }
}
