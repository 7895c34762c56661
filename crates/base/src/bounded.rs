//! Numbers a client sends, bounded where they are read. Every numeric tool argument is a
//! [`Bounded`] (or a [`SignedBounded`]): a value outside its range is refused while the
//! arguments are read, with an error naming the range, before any code can add it to an
//! `Instant` or multiply it; and the range is in the tool's input schema (`minimum`,
//! `maximum`), so a client sees it before it calls.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The largest integer every JSON client reads exactly (2^53 - 1, JavaScript's
/// `Number.MAX_SAFE_INTEGER`): the bound of positions and counters that have no smaller
/// natural one.
pub const JSON_SAFE_MAX: u64 = (1 << 53) - 1;

/// Why a value is not a bounded number; the bounds as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundedError {
    #[error("{text:?} is not an integer from {min} to {max}")]
    NotAnInteger {
        text: String,
        min: String,
        max: String,
    },
    #[error("{value} is out of range: expected an integer from {min} to {max}")]
    OutOfRange {
        value: String,
        min: String,
        max: String,
    },
}

/// A number outside `min..=max`.
fn out_of_range(
    value: impl fmt::Display,
    min: impl fmt::Display,
    max: impl fmt::Display,
) -> BoundedError {
    BoundedError::OutOfRange {
        value: value.to_string(),
        min: min.to_string(),
        max: max.to_string(),
    }
}

/// One bounded integer type over `$int`, read from any integer a deserializer gives.
macro_rules! bounded {
    ($(#[$doc:meta])* $name:ident, $int:ty, $deserialize:ident, $serialize:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name<const MIN: $int, const MAX: $int>($int);

        impl<const MIN: $int, const MAX: $int> $name<MIN, MAX> {
            /// Fails to compile (when the type is used) for a range with no numbers in it.
            const ORDERED: () = assert!(MIN <= MAX, "a bounded range needs MIN <= MAX");

            /// `value`, if it is inside the range.
            pub const fn new(value: $int) -> Option<Self> {
                #[allow(clippy::let_unit_value)]
                let () = Self::ORDERED;
                match MIN <= value && value <= MAX {
                    true => Some(Self(value)),
                    false => None,
                }
            }

            pub const fn get(self) -> $int {
                self.0
            }
        }

        impl<const MIN: $int, const MAX: $int> fmt::Display for $name<MIN, MAX> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        /// What the command line gives (`--limit 5`).
        impl<const MIN: $int, const MAX: $int> FromStr for $name<MIN, MAX> {
            type Err = BoundedError;

            fn from_str(text: &str) -> Result<Self, BoundedError> {
                let value: $int = text.trim().parse().map_err(|_| BoundedError::NotAnInteger {
                    text: text.to_string(),
                    min: MIN.to_string(),
                    max: MAX.to_string(),
                })?;
                Self::new(value).ok_or_else(|| out_of_range(value, MIN, MAX))
            }
        }

        impl<'de, const MIN: $int, const MAX: $int> Deserialize<'de> for $name<MIN, MAX> {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct InRange<const MIN: $int, const MAX: $int>;

                impl<const MIN: $int, const MAX: $int> InRange<MIN, MAX> {
                    fn read<E: de::Error, N>(value: N) -> Result<$name<MIN, MAX>, E>
                    where
                        N: Copy + fmt::Display,
                        $int: TryFrom<N>,
                    {
                        <$int>::try_from(value)
                            .ok()
                            .and_then($name::new)
                            .ok_or_else(|| E::custom(out_of_range(value, MIN, MAX)))
                    }
                }

                impl<const MIN: $int, const MAX: $int> Visitor<'_> for InRange<MIN, MAX> {
                    type Value = $name<MIN, MAX>;

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "an integer from {MIN} to {MAX}")
                    }

                    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
                        Self::read(value)
                    }

                    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
                        Self::read(value)
                    }

                    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Self::Value, E> {
                        Self::read(value)
                    }

                    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Self::Value, E> {
                        Self::read(value)
                    }
                }

                deserializer.$deserialize(InRange::<MIN, MAX>)
            }
        }

        impl<const MIN: $int, const MAX: $int> Serialize for $name<MIN, MAX> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.$serialize(self.0)
            }
        }

        impl<const MIN: $int, const MAX: $int> JsonSchema for $name<MIN, MAX> {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                format!("integer_{MIN}_to_{MAX}").into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "integer",
                    "minimum": MIN,
                    "maximum": MAX
                })
            }
        }
    };
}

bounded!(
    /// A whole number from `MIN` to `MAX` (both included): counts, sizes, durations.
    Bounded,
    u64,
    deserialize_u64,
    serialize_u64
);

bounded!(
    /// A whole number from `MIN` to `MAX` (both included) that may be negative: priorities,
    /// offsets counted back from the end.
    SignedBounded,
    i64,
    deserialize_i64,
    serialize_i64
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    type Timeout = Bounded<1, 604_800>;
    type Priority = SignedBounded<-1_000_000, 1_000_000>;

    fn read<T: for<'de> Deserialize<'de>>(value: serde_json::Value) -> Result<T, String> {
        serde_json::from_value(value).map_err(|e| e.to_string())
    }

    #[test]
    fn values_inside_the_range_and_at_both_edges_are_read() {
        for n in [1, 3600, 604_800] {
            assert_eq!(read::<Timeout>(json!(n)).unwrap().get(), n);
        }
        for n in [-1_000_000, -5, 0, 1_000_000] {
            assert_eq!(read::<Priority>(json!(n)).unwrap().get(), n);
        }
    }

    #[test]
    fn values_outside_the_range_are_refused_naming_the_range() {
        for (value, shown) in [
            (json!(0), "0"),
            (json!(604_801), "604801"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(-1), "-1"),
            (json!(i64::MIN), "-9223372036854775808"),
        ] {
            assert_eq!(
                read::<Timeout>(value).unwrap_err(),
                format!("{shown} is out of range: expected an integer from 1 to 604800")
            );
        }
        for (value, shown) in [
            (json!(-1_000_001), "-1000001"),
            (json!(1_000_001), "1000001"),
            (json!(u64::MAX), "18446744073709551615"),
        ] {
            assert_eq!(
                read::<Priority>(value).unwrap_err(),
                format!("{shown} is out of range: expected an integer from -1000000 to 1000000")
            );
        }
    }

    #[test]
    fn non_integers_are_refused_naming_the_range() {
        for value in [json!(1.5), json!(5.0), json!("5"), json!(null), json!(true)] {
            let error = read::<Timeout>(value.clone()).unwrap_err();
            assert!(
                error.starts_with("invalid type")
                    && error.ends_with("expected an integer from 1 to 604800"),
                "{value}: {error}"
            );
        }
        // Beyond u64, serde_json reads a number as a float.
        let huge: serde_json::Value = serde_json::from_str("99999999999999999999").unwrap();
        assert!(
            read::<Timeout>(huge)
                .unwrap_err()
                .contains("from 1 to 604800")
        );
    }

    #[test]
    fn an_optional_argument_is_absent_or_in_range() {
        #[derive(Debug, Deserialize)]
        struct Request {
            #[serde(default)]
            timeout_s: Option<Timeout>,
        }
        assert_eq!(read::<Request>(json!({})).unwrap().timeout_s, None);
        assert_eq!(
            read::<Request>(json!({"timeout_s": 60}))
                .unwrap()
                .timeout_s
                .map(Timeout::get),
            Some(60)
        );
        assert!(read::<Request>(json!({"timeout_s": 0})).is_err());
    }

    #[test]
    fn the_schema_states_the_range_and_the_field_keeps_its_description() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Request {
            /// How long at most.
            timeout_s: Option<Timeout>,
            priority: Priority,
        }
        let schema = serde_json::to_value(schemars::schema_for!(Request)).unwrap();
        let timeout = &schema["properties"]["timeout_s"];
        assert_eq!(timeout["minimum"], json!(1));
        assert_eq!(timeout["maximum"], json!(604_800));
        assert_eq!(timeout["type"], json!(["integer", "null"]));
        assert_eq!(timeout["description"], json!("How long at most."));
        let priority = &schema["properties"]["priority"];
        assert_eq!(
            (
                &priority["type"],
                &priority["minimum"],
                &priority["maximum"]
            ),
            (&json!("integer"), &json!(-1_000_000), &json!(1_000_000))
        );
    }

    #[test]
    fn values_serialize_as_plain_numbers_and_parse_from_the_command_line() {
        let timeout = Timeout::new(60).unwrap();
        assert_eq!(serde_json::to_value(timeout).unwrap(), json!(60));
        assert_eq!(timeout.to_string(), "60");
        assert_eq!("60".parse::<Timeout>(), Ok(timeout));
        assert_eq!(
            "0".parse::<Timeout>().unwrap_err().to_string(),
            "0 is out of range: expected an integer from 1 to 604800"
        );
        assert_eq!(
            "-3".parse::<Timeout>().unwrap_err().to_string(),
            "\"-3\" is not an integer from 1 to 604800"
        );
        assert_eq!("-3".parse::<Priority>().map(Priority::get), Ok(-3));
        assert_eq!(Timeout::new(0), None);
        assert_eq!(Priority::new(i64::MAX), None);
    }
}
