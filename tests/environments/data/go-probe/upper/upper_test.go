package upper

import "testing"

func TestShout(t *testing.T) {
	for _, c := range []struct{ in, want string }{{"a", "A"}, {"Go", "GO"}} {
		t.Run(c.in, func(t *testing.T) {
			if got := Shout(c.in); got != c.want {
				t.Errorf("Shout(%q) = %q", c.in, got)
			}
		})
	}
}
