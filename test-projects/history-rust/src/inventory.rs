//! A stock of items keyed by name.

use std::collections::HashMap;
use std::fmt;

use crate::parser::Record;

/// Where an item is shelved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    General,
    Fasteners,
    Paint,
}

/// One kind of item and how many are in stock.
#[derive(Debug, Clone)]
pub struct Item {
    pub name: String,
    pub quantity: u32,
    pub price_cents: u64,
    pub category: Category,
}

impl Item {
    pub fn new(name: &str, quantity: u32, price_cents: u64, category: Category) -> Self {
        Item {
            name: name.to_string(),
            quantity,
            price_cents,
            category,
        }
    }

    pub fn from_record(record: Record, category: Category) -> Self {
        Item {
            name: record.name,
            quantity: record.quantity,
            price_cents: record.price_cents,
            category,
        }
    }

    /// The value of the whole stock of this item, in cents.
    pub fn value(&self) -> u64 {
        u64::from(self.quantity) * self.price_cents
    }
}

/// Why a stock change was refused.
#[derive(Debug, PartialEq)]
pub enum InventoryError {
    Unknown(String),
    NotEnough {
        name: String,
        available: u32,
        wanted: u32,
    },
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryError::Unknown(name) => write!(f, "no item named {name}"),
            InventoryError::NotEnough {
                name,
                available,
                wanted,
            } => write!(f, "only {available} of {name} left, {wanted} wanted"),
        }
    }
}

/// Items by name.
#[derive(Debug, Default)]
pub struct Inventory {
    items: HashMap<String, Item>,
}

impl Inventory {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds an item, or more of it when one of that name is already in stock.
    pub fn add(&mut self, item: Item) {
        match self.items.get_mut(&item.name) {
            Some(existing) => existing.quantity += item.quantity,
            None => {
                self.items.insert(item.name.clone(), item);
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Item> {
        self.items.get(name)
    }

    /// How many of `name` are in stock (0 for an unknown item).
    pub fn quantity_of(&self, name: &str) -> u32 {
        self.items.get(name).map(|item| item.quantity).unwrap_or(0)
    }

    /// Takes `amount` of `name` out of stock and returns how many are left.
    pub fn remove(&mut self, name: &str, amount: u32) -> Result<u32, InventoryError> {
        let item = self
            .items
            .get_mut(name)
            .ok_or_else(|| InventoryError::Unknown(name.to_string()))?;
        let left = item
            .quantity
            .checked_sub(amount)
            .ok_or_else(|| InventoryError::NotEnough {
                name: name.to_string(),
                available: item.quantity,
                wanted: amount,
            })?;
        item.quantity = left;
        Ok(left)
    }

    /// Moves `amount` of stock from the item `from` to the item `to`.
    pub fn transfer(&mut self, from: &str, to: &str, amount: u32) -> Result<(), InventoryError> {
        if !self.items.contains_key(to) {
            return Err(InventoryError::Unknown(to.to_string()));
        }
        self.remove(from, amount)?;
        if let Some(target) = self.items.get_mut(to) {
            target.quantity += amount;
        }
        Ok(())
    }

    /// Adds `amount` to every item with fewer than `threshold` in stock and
    /// returns their names, sorted.
    pub fn restock_below(&mut self, threshold: u32, amount: u32) -> Vec<String> {
        let mut restocked: Vec<String> = self
            .items
            .values()
            .filter(|item| item.quantity < threshold)
            .map(|item| item.name.clone())
            .collect();
        restocked.sort();
        for name in &restocked {
            if let Some(item) = self.items.get_mut(name) {
                item.quantity += amount;
            }
        }
        restocked
    }

    /// The value of everything in stock, in cents.
    pub fn total_value(&self) -> u64 {
        self.items.values().map(Item::value).sum()
    }

    /// How many kinds of item each category has.
    pub fn count_by_category(&self) -> HashMap<Category, usize> {
        let mut counts = HashMap::new();
        for item in self.items.values() {
            *counts.entry(item.category).or_insert(0) += 1;
        }
        counts
    }

    /// The items sorted by name.
    pub fn sorted_items(&self) -> Vec<&Item> {
        let mut items: Vec<&Item> = self.items.values().collect();
        items.sort_by(|a, b| a.name.cmp(&b.name));
        items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Inventory {
        let mut inventory = Inventory::new();
        inventory.add(Item::new("bolt", 10, 25, Category::Fasteners));
        inventory.add(Item::new("nut", 2, 10, Category::Fasteners));
        inventory.add(Item::new("primer", 1, 1200, Category::Paint));
        inventory
    }

    #[test]
    fn adds_to_existing_items() {
        let mut inventory = sample();
        inventory.add(Item::new("bolt", 5, 25, Category::Fasteners));
        assert_eq!(inventory.len(), 3);
        assert_eq!(inventory.quantity_of("bolt"), 15);
    }

    #[test]
    fn totals_value() {
        assert_eq!(sample().total_value(), 250 + 20 + 1200);
    }

    #[test]
    fn removes_stock() {
        let mut inventory = sample();
        assert_eq!(inventory.remove("bolt", 4), Ok(6));
        assert_eq!(
            inventory.remove("washer", 1),
            Err(InventoryError::Unknown("washer".to_string()))
        );
    }

    #[test]
    fn refuses_to_remove_too_many() {
        let mut inventory = sample();
        let error = inventory.remove("nut", 3).unwrap_err();
        assert_eq!(error.to_string(), "only 2 of nut left, 3 wanted");
        assert_eq!(inventory.quantity_of("nut"), 2);
    }

    #[test]
    fn transfers_stock() {
        let mut inventory = sample();
        inventory.transfer("bolt", "nut", 3).unwrap();
        assert_eq!(inventory.quantity_of("bolt"), 7);
        assert_eq!(inventory.quantity_of("nut"), 5);
        assert!(inventory.transfer("bolt", "washer", 1).is_err());
        assert_eq!(inventory.quantity_of("bolt"), 7);
    }

    #[test]
    fn restocks_low_items() {
        let mut inventory = sample();
        assert_eq!(inventory.restock_below(5, 10), ["nut", "primer"]);
        assert_eq!(inventory.quantity_of("nut"), 12);
        assert_eq!(inventory.quantity_of("bolt"), 10);
    }

    #[test]
    fn counts_by_category() {
        let counts = sample().count_by_category();
        assert_eq!(counts[&Category::Fasteners], 2);
        assert_eq!(counts[&Category::Paint], 1);
        assert_eq!(counts.get(&Category::General), None);
    }
}
