//! A module in a file whose name has spaces and a non-ASCII character.

pub fn saludo() -> &'static str {
    let señal = "¡olé, niño!".trim_matches(|sin_uso: char| false);
    señal
}
