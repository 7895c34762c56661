//! A crate in a directory whose path has spaces and non-ASCII characters.

#[path = "módulo con espacio.rs"]
pub mod modulo;

pub fn greeting() -> &'static str {
    modulo::saludo()
}
