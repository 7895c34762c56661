//! The application: prints a few numbers computed by `ws-core`.

fn main() {
    println!("double(21) = {}", ws_core::double(21));
    println!("area(3, 4) = {}", ws_core::shapes::area(3, 4));
}

#[cfg(test)]
mod tests {
    #[test]
    fn uses_core() {
        assert_eq!(ws_core::shapes::perimeter(1, 1), 4);
    }
}
