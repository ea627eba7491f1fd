//! Counts words: a crate with no dependencies, for bosun's environment tests.

/// The number of words in `s`.
pub fn count(s: &str) -> usize {
    s.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn counts_words() {
        assert_eq!(count("a b  c"), 3);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(count("   "), 0);
    }
}
