//! Parsing of `name,quantity,price_cents` lines.

use std::fmt;
use std::str::FromStr;

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub quantity: u32,
    pub price_cents: u64,
}

/// Why a line could not be parsed.
#[derive(Debug, PartialEq)]
pub enum ParseError {
    Empty,
    MissingField(&'static str),
    BadNumber(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty line"),
            ParseError::MissingField(field) => write!(f, "missing field `{field}`"),
            ParseError::BadNumber(text) => write!(f, "not a number: {text:?}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses one `name,quantity,price_cents` line; spaces around fields are ignored.
pub fn parse_line(line: &str) -> Result<Record, ParseError> {
    let line = line.trim();
    if line.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut fields = line.split(',').map(str::trim);
    let name = fields
        .next()
        .filter(|name| !name.is_empty())
        .ok_or(ParseError::MissingField("name"))?;
    let quantity = fields.next().ok_or(ParseError::MissingField("quantity"))?;
    let price = fields.next().ok_or(ParseError::MissingField("price"))?;
    Ok(Record {
        name: name.to_string(),
        quantity: parse_number(quantity)?,
        price_cents: parse_number(price)?,
    })
}

fn parse_number<T: FromStr>(text: &str) -> Result<T, ParseError> {
    text.parse()
        .map_err(|_| ParseError::BadNumber(text.to_string()))
}

/// Parses every line that is neither blank nor a `#` comment.
pub fn parse_all(input: &str) -> Result<Vec<Record>, ParseError> {
    input
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .map(parse_line)
        .collect()
}

/// The name to show for a record: names starting with `_` are internal and
/// shown as `fallback`.
pub fn display_name<'a>(record: &'a Record, fallback: &'a str) -> &'a str {
    if record.name.starts_with('_') {
        fallback
    } else {
        &record.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line() {
        let record = parse_line(" bolt , 3, 10 ").unwrap();
        let expected = Record {
            name: "bolt".to_string(),
            quantity: 3,
            price_cents: 10,
        };
        assert_eq!(record, expected);
    }

    #[test]
    fn reports_missing_fields() {
        assert_eq!(parse_line("bolt,3"), Err(ParseError::MissingField("price")));
        assert_eq!(parse_line(",3,4"), Err(ParseError::MissingField("name")));
        assert_eq!(parse_line("   "), Err(ParseError::Empty));
    }

    #[test]
    fn reports_bad_numbers() {
        let error = parse_line("bolt,three,10").unwrap_err();
        assert_eq!(error.to_string(), "not a number: \"three\"");
    }

    #[test]
    fn skips_comments_and_blank_lines() {
        let records = parse_all("# header\nbolt,1,2\n\nnut,3,4\n").unwrap();
        let names: Vec<&str> = records.iter().map(|record| record.name.as_str()).collect();
        assert_eq!(names, ["bolt", "nut"]);
    }

    #[test]
    fn hides_internal_names() {
        let internal = parse_line("_spare,1,1").unwrap();
        let public = parse_line("washer,1,1").unwrap();
        assert_eq!(display_name(&internal, "(internal)"), "(internal)");
        assert_eq!(display_name(&public, "(internal)"), "washer");
    }
}
