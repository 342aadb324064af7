package cmdwrap

import (
	"strings"
	"testing"
)

// A mark travels from the host to the helper, which greps for it: only
// NewMark's form is accepted.
func TestValidMark(t *testing.T) {
	if m := NewMark(); !ValidMark(m) {
		t.Errorf("ValidMark(NewMark()) = false for %q", m)
	}
	for _, m := range []string{
		"", "runner-exec-", "runner-exec-abc", "other-0123456789ab",
		"runner-exec-0123456789ab.*", "runner-exec-0123456789ab x", "runner-exec-0123456789ab\n",
		"runner-exec-" + strings.Repeat("a", 65),
	} {
		if ValidMark(m) {
			t.Errorf("ValidMark(%q) = true", m)
		}
	}
}
