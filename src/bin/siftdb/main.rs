fn main() {
    println!("siftdb");
}
