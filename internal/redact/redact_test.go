package redact

import (
	"errors"
	"fmt"
	"testing"
)

func TestRedactorSecrets(t *testing.T) {
	r := New("my-secret-value", "short", "token-123456", "", `pa"ss\word-1`)
	tests := []struct{ in, want string }{
		{"key=my-secret-value!", "key=" + Mask + "!"},
		{"short stays", "short stays"},
		{"token-123456 and token-1234567", Mask + " and " + Mask + "7"},
		{`raw pa"ss\word-1`, "raw " + Mask},
		{"nothing secret here", "nothing secret here"},
		{"export OPENAI_API_KEY=sk-proj-abcdefghijklmnop0123", "export OPENAI_API_KEY=" + Mask},
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

// A secret inside another is hidden with it: the longer goes first.
func TestRedactorLongestFirst(t *testing.T) {
	r := New("abcdefgh", "abcdefgh-ijklmnop")
	if got := r.String("x abcdefgh-ijklmnop y abcdefgh"); got != "x "+Mask+" y "+Mask {
		t.Errorf("String = %q", got)
	}
}

func TestRedactorError(t *testing.T) {
	base := errors.New("root cause")
	err := New("s3cr3t-token").Error(fmt.Errorf("fetch https://user1:s3cr3t-token@h/r with s3cr3t-token: %w", base))
	if got, want := err.Error(), "fetch https://h/r with "+Mask+": root cause"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
	if !errors.Is(err, base) {
		t.Errorf("the redacted error lost the wrapped one")
	}
	clean := errors.New("nothing to hide")
	if got := New("s3cr3t-token").Error(clean); got != clean {
		t.Errorf("an error with nothing to hide was wrapped: %#v", got)
	}
	if New().Error(nil) != nil {
		t.Errorf("Error(nil) is not nil")
	}
}

func TestCheckSecret(t *testing.T) {
	for _, tt := range []struct {
		value string
		ok    bool
	}{
		{"", false}, {"a", false}, {"EMPTY", false}, {"1234567", false}, {"ééééééé", false},
		{"12345678", true}, {"sk-canary-123", true},
	} {
		err := CheckSecret(tt.value)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrTooShort) {
			t.Errorf("CheckSecret(%q) = %v, want ok=%v", tt.value, err, tt.ok)
		}
	}
	// What CheckSecret refuses, New would not hide: the two agree.
	if got := New("1234567").String("x 1234567"); got != "x 1234567" {
		t.Errorf("New hid a value CheckSecret refuses: %q", got)
	}
}

// In a JSON document every string is masked on its own: a secret is found
// however JSON spells it, and the document keeps its keys, their order
// and its punctuation, even when a secret is that punctuation.
func TestRedactorJSON(t *testing.T) {
	r := New(`pa"ss\word-1`, `","type":"`)
	in := `{"time":"t1","type":"message","n":1.50,"ok":true,"none":null,` +
		`"list":["pa\"ss\\word-1 here",{"k":"a \",\"type\":\" b"}],` +
		`"url":"https://u:p@h/r","html":"<a> & b","key":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}` + "\n"
	want := `{"time":"t1","type":"message","n":1.50,"ok":true,"none":null,` +
		`"list":["` + Mask + ` here",{"k":"a ` + Mask + ` b"}],` +
		`"url":"https://h/r","html":"<a> & b","key":"` + Mask + `"}` + "\n"
	got, err := r.JSON([]byte(in))
	if err != nil || string(got) != want {
		t.Errorf("JSON(%s)\n = %s, %v\nwant %s", in, got, err, want)
	}
	if _, err := r.JSON([]byte(`{"a":`)); err == nil {
		t.Errorf("JSON of a truncated document: no error")
	}
}
