// Package probe counts words: a module with no dependencies, for bosun's environment tests.
package probe

import "strings"

// Count returns the number of words in s.
func Count(s string) int {
	return len(strings.Fields(s))
}
