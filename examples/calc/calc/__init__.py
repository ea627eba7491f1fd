"""A tiny statistics library: the example repository bosun's demo fixes."""
