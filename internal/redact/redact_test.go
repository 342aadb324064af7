package redact

import "testing"

func TestRedactor(t *testing.T) {
	r := New("my-secret-value", "short", "token-123456")
	tests := []struct{ in, want string }{
		{"key=my-secret-value!", "key=" + Mask + "!"},
		{"short stays", "short stays"},
		{"token-123456 and token-1234567", Mask + " and " + Mask + "7"},
		{"export OPENAI_API_KEY=sk-proj-abcdefghijklmnop0123", "export OPENAI_API_KEY=" + Mask},
		{"ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789", Mask},
		{"clone https://user:hunter2@github.com/x/y.git", "clone https://" + Mask + "@github.com/x/y.git"},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz.012345", "Authorization: " + Mask},
		{"AKIAABCDEFGHIJKLMNOP", Mask},
		{"nothing secret here", "nothing secret here"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var zero *Redactor
	if got := zero.String("sk-abcdefghijklmnopqrstu"); got != Mask {
		t.Errorf("nil Redactor left a key shape: %q", got)
	}
}
