package budget

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

func TestTokensUpperBound(t *testing.T) {
	tests := []struct {
		bytes int
		want  int64
	}{
		{0, MessageOverhead},
		{-7, MessageOverhead},
		{1, 1 + MessageOverhead},
		{100_000, 100_000 + MessageOverhead},
	}
	for _, tt := range tests {
		if got := TokensUpperBound(tt.bytes); got != tt.want {
			t.Errorf("TokensUpperBound(%d) = %d, want %d", tt.bytes, got, tt.want)
		}
	}
	if got, want := PromptUpperBound(), int64(RequestOverhead); got != want {
		t.Errorf("PromptUpperBound() = %d, want %d", got, want)
	}
	if got, want := PromptUpperBound(10, 20, 30), int64(RequestOverhead+60+3*MessageOverhead); got != want {
		t.Errorf("PromptUpperBound(10, 20, 30) = %d, want %d", got, want)
	}
}

// TestJSONLengthCoversText backs the advice to pass a message's JSON size:
// encoding a text never makes it shorter than its bytes, whatever it holds.
func TestJSONLengthCoversText(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	alphabet := []rune("ab \n\t\"\\<>&é漢\u2028\x00\x7f🙂")
	for range 2_000 {
		rs := make([]rune, rng.IntN(64))
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(rs)
		msg, err := json.Marshal(map[string]string{"role": "user", "content": s})
		if err != nil {
			t.Fatal(err)
		}
		if len(msg) < len(s) {
			t.Fatalf("JSON of %q is %d bytes, shorter than its %d bytes of text", s, len(msg), len(s))
		}
	}
}
