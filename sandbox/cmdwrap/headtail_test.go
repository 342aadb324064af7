package cmdwrap

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestHeadTailKeepsHeadAndTail(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		writes  []string
		want    string
		dropped int64
	}{
		{"under the cap", 10, []string{"abc", "de"}, "abcde", 0},
		{"exactly the cap", 10, []string{"0123456789"}, "0123456789", 0},
		{"one byte over", 10, []string{"0123456789x"}, "01234\n[... 1 bytes of output dropped ...]\n6789x", 1},
		{"many small writes", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "abc\n[... 2 bytes of output dropped ...]\nfgh", 2},
		{"one huge write", 4, []string{strings.Repeat("x", 100) + "yz"}, "xx\n[... 98 bytes of output dropped ...]\nyz", 98},
		{"wrap exactly", 4, []string{"ab", "cd", "ef"}, "ab\n[... 2 bytes of output dropped ...]\nef", 2},
		{"zero cap", 0, []string{"abc"}, "\n[... 3 bytes of output dropped ...]\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewHeadTail(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := b.Dropped(); got != tt.dropped {
				t.Errorf("Dropped() = %d, want %d", got, tt.dropped)
			}
		})
	}
}

// Against a reference built from the whole stream, for many write patterns.
func TestHeadTailMatchesReference(t *testing.T) {
	for max := 1; max < 40; max += 3 {
		for chunk := 1; chunk < 50; chunk += 7 {
			var all bytes.Buffer
			b := NewHeadTail(max)
			for i := 0; i < 30; i++ {
				w := []byte(strings.Repeat(fmt.Sprint(i%10), chunk))
				all.Write(w)
				b.Write(w)
			}
			s := all.Bytes()
			if len(s) <= max {
				if got := b.String(); got != string(s) {
					t.Fatalf("max=%d chunk=%d: got %q, want %q", max, chunk, got, s)
				}
				continue
			}
			wantHead := string(s[:max/2])
			wantTail := string(s[len(s)-(max-max/2):])
			got := b.String()
			if !strings.HasPrefix(got, wantHead) || !strings.HasSuffix(got, wantTail) {
				t.Fatalf("max=%d chunk=%d: got %q, want head %q and tail %q", max, chunk, got, wantHead, wantTail)
			}
			if d := b.Dropped(); d != int64(len(s)-max) {
				t.Fatalf("max=%d chunk=%d: dropped %d, want %d", max, chunk, d, len(s)-max)
			}
		}
	}
}
