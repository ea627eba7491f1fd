package probe

import "testing"

func TestCountWords(t *testing.T) {
	if got := Count("a b  c"); got != 3 {
		t.Fatalf("Count = %d, want 3", got)
	}
}

func TestCountEmpty(t *testing.T) {
	if got := Count("   "); got != 0 {
		t.Fatalf("Count = %d, want 0", got)
	}
}
