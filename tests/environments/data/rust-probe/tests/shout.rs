#[test]
fn counts_through_the_public_api() {
    assert_eq!(probe::count("one two"), 2);
}
