// Package upper shouts.
package upper

import "strings"

// Shout returns s in capitals.
func Shout(s string) string { return strings.ToUpper(s) }
