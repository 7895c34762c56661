pub struct Square {
    pub side: u32,
}

pub fn area(square: &Square) -> u32 {
    let scale = 2;
    square.perimeter() * scale
}
