fn helper() -> i32 {
    let unused = 5;
    7
}

fn main() {
    let total: i32 = "not a number";
    println!("{}", helper() + total);
}

#[cfg(test)]
mod tests {
    #[test]
    fn helper_gives_seven() {
        assert_eq!(super::helper(), 7);
    }
}
