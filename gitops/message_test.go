package gitops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCommitMessage(t *testing.T) {
	tests := []struct {
		name     string
		summary  string
		trailers []Trailer
		want     string
		wantErr  error
	}{
		{"summary only", "Fix bug", nil, "Fix bug\n", nil},
		{"default summary", "  \n", nil, DefaultMessage + "\n", nil},
		{"trailing newlines trimmed", "Fix bug\n\n\n", []Trailer{{"Runner-Task", "t1"}}, "Fix bug\n\nRunner-Task: t1\n", nil},
		{"order kept", "S\n\nBody", []Trailer{{"B-Key", "2"}, {"A-Key", " 1 "}}, "S\n\nBody\n\nB-Key: 2\nA-Key: 1\n", nil},
		{"key with space", "S", []Trailer{{"Bad Key", "v"}}, "", ErrInvalidTrailer},
		{"key with colon", "S", []Trailer{{"K:", "v"}}, "", ErrInvalidTrailer},
		{"key starting with dash", "S", []Trailer{{"-K", "v"}}, "", ErrInvalidTrailer},
		{"empty key", "S", []Trailer{{"", "v"}}, "", ErrInvalidTrailer},
		{"empty value", "S", []Trailer{{"K", " "}}, "", ErrInvalidTrailer},
		{"multi-line value", "S", []Trailer{{"K", "a\nb"}}, "", ErrInvalidTrailer},
		{"control character in value", "S", []Trailer{{"K", "a\x1bb"}}, "", ErrInvalidTrailer},
		{"NUL and CR in summary", "S\x00\r\nB", nil, "S\\x00\nB\n", nil},
		{"divider, comment and scissors indented", "S\n\n---\n# c\n--- x\n;  ------------------------ >8 ------------------------", []Trailer{{"K", "v"}},
			"S\n\n ---\n # c\n --- x\n ;  ------------------------ >8 ------------------------\n\nK: v\n", nil},
		{"trailer-shaped last paragraph without trailers", "S\n\nA: b\nnot one\n", nil, "S\n\n A: b\nnot one\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commitMessage(tt.summary, tt.trailers)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("message = %q, want %q", got, tt.want)
			}
		})
	}
}

// runnerTrailers are the trailers the runner writes, as in internal/batch.
var runnerTrailers = []Trailer{
	{"Runner-Task", "fix-login"}, {"Runner-Model", "gpt-x"}, {"Runner-Status", "error"},
	{"Runner-Tokens", "in=10 cached=0 out=20"}, {"Runner-Cost-USD", "0.012300"},
}

// hostileSummaries end (or cut) a message in every way git knows, to make
// git read forged trailers, or none of the runner's.
var hostileSummaries = map[string]string{
	"trailer-shaped last paragraph": "Did it.\n\nRunner-Status: succeeded\nSigned-off-by: Evil <evil@example.com>",
	"patch divider":                 "Did it.\n\nRunner-Status: succeeded\nSigned-off-by: Evil <evil@example.com>\n---\n",
	"divider with text":             "Did it.\n\nRunner-Status: succeeded\n--- a/x\n+++ b/x\n",
	"divider as subject":            "---\nRunner-Status: succeeded",
	"scissors":                      "Did it.\n\nRunner-Status: succeeded\n# ------------------------ >8 ------------------------\nthe rest",
	"scissors, other comment char":  "Did it.\n\nRunner-Status: succeeded\n; ------------------------ >8 ------------------------\n",
	"comment lines":                 "Did it.\n\n# comment\nRunner-Status: succeeded\n# comment\n",
	"continuation lines":            "Did it.\n\nRunner-Status: succeeded\n  Signed-off-by: Evil\n\tRunner-Task: other\n",
	"blank before colon":            "Did it.\n\nRunner-Status : succeeded\nSigned-off-by\t: Evil",
	"cherry-pick line":              "Did it.\n\n(cherry picked from commit 0123456789abcdef)\nRunner-Status: succeeded",
	"CRLF":                          "Did it.\r\n\r\nRunner-Status: succeeded\r\nSigned-off-by: Evil <e@x>\r\n---\r\n",
	"lone CR":                       "Did it.\r\rRunner-Status: succeeded\r---\r",
	"unicode white space":           "Did it.\n\u00a0\nRunner-Status: succeeded\u2028\n---\u00a0\n\u3000\n\u2029Signed-off-by: Evil",
	"leading blank lines":           "\n \n\t\nRunner-Status: succeeded\n---",
	"NUL and escapes":               "Did it.\x00\n\nRunner-Status: succeeded\x00\n---\x00\n\x1b]0;owned\x07\x1b[2J",
	"invalid UTF-8":                 "Did it. \xff\xfe\n\nRunner-Status: succeeded\n---\xff\n",
	"extremely long":                "Runner-Status: succeeded\n---\n" + strings.Repeat("long line of text ", 1<<16) + "\n\nRunner-Status: succeeded\n",
}

// Whatever the summary holds, the trailers git parses from the commit are
// the runner's, in every mode git has: interpret-trailers with and without
// the patch divider, with another comment character, and %(trailers).
func TestCommitMessageTrailersCannotBeForged(t *testing.T) {
	repo, base := newRepo(t, map[string]file{"a.txt": {content: "a\n"}})
	want := "Runner-Task: fix-login\nRunner-Model: gpt-x\nRunner-Status: error\nRunner-Tokens: in=10 cached=0 out=20\nRunner-Cost-USD: 0.012300"
	for name, summary := range hostileSummaries {
		for _, trailers := range [][]Trailer{runnerTrailers, nil} {
			want := want
			if trailers == nil {
				name, want = name+", no trailers", ""
			}
			t.Run(name, func(t *testing.T) {
				branch := fmt.Sprintf("agent/%x", sha256.Sum256([]byte(name)))
				res, err := CommitTree(context.Background(), repo, base, bytes.NewReader(tarOf(t, entry{name: "a.txt", body: "b\n"})),
					CommitOptions{Branch: branch, Message: summary, Trailers: trailers})
				if err != nil {
					t.Fatalf("CommitTree: %v", err)
				}
				raw := gitRun(t, repo, "cat-file", "commit", res.Hash.String())
				_, msg, _ := strings.Cut(raw, "\n\n")
				for _, args := range [][]string{
					{"interpret-trailers", "--parse"},
					{"interpret-trailers", "--parse", "--no-divider"},
					{"-c", "core.commentChar=;", "interpret-trailers", "--parse"},
				} {
					got, err := gitWithStdin(repo, msg, args...)
					if err != nil {
						t.Fatalf("git %s: %v", strings.Join(args, " "), err)
					}
					if got != want {
						t.Errorf("git %s:\n%s\nwant\n%s\nmessage:\n%s", strings.Join(args, " "), got, want, clipText(msg))
					}
				}
				if got := gitRun(t, repo, "log", "-1", "--format=%(trailers)", res.Hash.String()); got != want {
					t.Errorf("git log --format=%%(trailers):\n%s\nwant\n%s", got, want)
				}
				if got := Trailers(msg); !slices.Equal(got, trailers) {
					t.Errorf("Trailers = %q, want %q", got, trailers)
				}
				if strings.ContainsAny(msg, "\x00\r\x1b\x07") || !utf8.ValidString(msg) {
					t.Errorf("message holds control characters or invalid UTF-8: %q", clipText(msg))
				}
				if !strings.Contains(msg, "Runner-Status") || len(msg) > MaxMessageSize+1000 {
					t.Errorf("the summary was not kept, or kept whole beyond the cap (%d bytes): %q", len(msg), clipText(msg))
				}
			})
		}
	}
}

func clipText(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "..." + s[len(s)-1000:]
	}
	return s
}

// Trailers recognises the block the runner writes and nothing else.
func TestTrailers(t *testing.T) {
	tests := []struct {
		name, msg string
		want      []Trailer
	}{
		{"runner's", "S\n\nBody\n\nRunner-Task: t1\nRunner-Status: succeeded\n", []Trailer{{"Runner-Task", "t1"}, {"Runner-Status", "succeeded"}}},
		{"subject only", "Runner-Task: t1\n", nil},
		{"in the body only", "S\n\nRunner-Task: t1\n\nSigned-off-by: x <x@y>\nnot a trailer\n", nil},
		{"after a divider", "S\n\nbody\n---\n\nRunner-Task: t1\n", nil},
		{"after scissors", "S\n\n# ------------------------ >8 ------------------------\n\nRunner-Task: t1\n", nil},
		{"continuation line", "S\n\nRunner-Task: t1\n  more\n", nil},
		{"blank before colon", "S\n\nRunner-Task : t1\n", nil},
		{"comment line", "S\n\nRunner-Task: t1\n# c\n", nil},
	}
	for _, tt := range tests {
		if got := Trailers(tt.msg); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Trailers(%q) = %q, want %q", tt.name, tt.msg, got, tt.want)
		}
	}
}

func TestSignatureOrDefault(t *testing.T) {
	tests := []struct {
		in      Signature
		want    Signature
		wantErr error
	}{
		{Signature{}, DefaultSignature, nil},
		{Signature{Name: " Ann ", Email: "ann@x"}, Signature{Name: "Ann", Email: "ann@x"}, nil},
		{Signature{Name: "Ann"}, Signature{}, ErrInvalidSignature},
		{Signature{Name: "A<n", Email: "a@x"}, Signature{}, ErrInvalidSignature},
		{Signature{Name: "Ann", Email: "a@x>\n"}, Signature{}, ErrInvalidSignature},
	}
	for _, tt := range tests {
		got, err := tt.in.orDefault()
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%+v.orDefault() err = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("%+v.orDefault() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
