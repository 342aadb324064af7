package budget

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseTokenizer(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Tokenizer
		err  bool
	}{
		{"", TokenizerBytes, false},
		{"bytes", TokenizerBytes, false},
		{"o200k_base", O200kBase, false},
		{" cl100k_base ", Cl100kBase, false},
		{"p50k_base", "", true},
		{"O200K_BASE", "", true},
	} {
		got, err := ParseTokenizer(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseTokenizer(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if _, err := CountTokens(TokenizerBytes, "x"); err == nil {
		t.Error("CountTokens(bytes) counted; want an error, the caller bounds by bytes")
	}
}

// TestDefaultPricesName tokenizers: every OpenAI model of the built-in
// table counts with o200k_base, the others with bytes.
func TestDefaultPricesNameTokenizers(t *testing.T) {
	table := DefaultPrices()
	for _, name := range table.Models() {
		p, _ := table.Lookup(name)
		openAI := strings.HasPrefix(name, "gpt-") || strings.HasPrefix(name, "o3") || strings.HasPrefix(name, "o4")
		if want := map[bool]Tokenizer{true: O200kBase, false: TokenizerBytes}[openAI]; p.Tokenizer != want {
			t.Errorf("%s: tokenizer %q, want %q", name, p.Tokenizer, want)
		}
	}
	if _, err := ParsePrices(strings.NewReader(`{"prices":[{"model":"m","usd_per_mtok":{"input":1,"output":1},"tokenizer":"gpt2"}]}`)); err == nil {
		t.Error("a price file naming an unknown tokenizer was accepted")
	}
}

// TestCountTokensReference checks the counts against the reference
// encodings, token by token, as tiktoken publishes them.
func TestCountTokensReference(t *testing.T) {
	for _, tt := range []struct {
		tok  Tokenizer
		text string
		want int64
	}{
		{Cl100kBase, "hello world", 2},        // [15339 1917]
		{Cl100kBase, "tiktoken is great!", 6}, // OpenAI's cookbook example
		{O200kBase, "hello world", 2},
		{O200kBase, "", 0},
	} {
		got, err := CountTokens(tt.tok, tt.text)
		if err != nil || got != tt.want {
			t.Errorf("CountTokens(%s, %q) = %d, %v; want %d", tt.tok, tt.text, got, err, tt.want)
		}
	}
}

// genText makes text of one of the shapes a conversation carries: code,
// logs, prose, unicode, JSON, and pathological runs of one character.
func genText(rng *rand.Rand, shape string, n int) string {
	var b strings.Builder
	words := []string{"the", "budget", "holds", "when", "every", "call", "is", "paid", "before", "it", "is", "made"}
	for b.Len() < n {
		switch shape {
		case "code":
			b.WriteString([]string{"func f(x int) error {\n", "\tif err != nil {\n\t\treturn fmt.Errorf(\"open %s: %w\", p, err)\n\t}\n",
				"}\n\n", "\tfor i := range xs {\n\t\tsum += xs[i] * 3\n\t}\n", "// Count returns the tokens.\n"}[rng.IntN(5)])
		case "logs":
			b.WriteString("2026-12-01T12:" + string(rune('0'+rng.IntN(6))) + "4:05.123Z INFO  request id=" +
				strings.Repeat(string(rune('a'+rng.IntN(26))), 1+rng.IntN(12)) + " status=200 latency_ms=" +
				string(rune('1'+rng.IntN(9))) + "42\n")
		case "prose":
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString([]string{" ", " ", " ", ", ", ". ", "\n\n"}[rng.IntN(6)])
		case "unicode":
			b.WriteString([]string{"漢字", "テスト", "é", "🙂", "\u2028", "Ω≈ç√", " ", "\n", "ß", "👩‍👩‍👧"}[rng.IntN(10)])
		case "json":
			b.WriteString(`{"id":` + string(rune('0'+rng.IntN(10))) + `,"name":"x` + words[rng.IntN(len(words))] + `","tags":["a","b"],"ok":true},` + "\n")
		case "runs":
			b.WriteString(strings.Repeat([]string{" ", "a", "\n", "1", "=", "\t"}[rng.IntN(6)], 1+rng.IntN(5000)))
		case "bytes":
			b.WriteByte(byte(rng.IntN(256)))
		}
	}
	return b.String()
}

var shapes = []string{"code", "logs", "prose", "unicode", "json", "runs", "bytes"}

// TestChunkedCountWithMarginCoversWhole: counting a long text in chunks,
// plus the margin, is never below the count of the whole text in one
// piece, which is what a server does.
func TestChunkedCountWithMarginCoversWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for _, tok := range []Tokenizer{O200kBase, Cl100kBase} {
		enc, err := encodings[tok]()
		if err != nil {
			t.Fatal(err)
		}
		for _, shape := range shapes {
			for range 6 {
				text := genText(rng, shape, rng.IntN(24<<10))
				if shape == "runs" && len(text) > 3<<10 {
					text = text[:3<<10] // a whole piece of it costs its square to count
				}
				whole := int64(len(enc.EncodeOrdinary(text)))
				chunked, err := CountTokens(tok, text)
				if err != nil {
					t.Fatal(err)
				}
				if WithMargin(chunked) < whole {
					t.Errorf("%s %s of %d bytes: chunked count %d (%d with margin) < whole count %d",
						tok, shape, len(text), chunked, WithMargin(chunked), whole)
				}
			}
		}
	}
}

func TestCutChunk(t *testing.T) {
	long := strings.Repeat("é", countChunk) // 2-byte characters
	for _, text := range []string{"", "short", strings.Repeat("a", countChunk), strings.Repeat("a", countChunk+1), long,
		strings.Repeat("x", countChunk-10) + "\n" + strings.Repeat("y", 100), "\xff" + long} {
		var parts []string
		for rest := text; rest != ""; {
			c := cutChunk(rest)
			if c == "" || len(c) > countChunk {
				t.Fatalf("cutChunk gave a chunk of %d bytes", len(c))
			}
			parts = append(parts, c)
			rest = rest[len(c):]
		}
		if strings.Join(parts, "") != text {
			t.Errorf("chunks do not rebuild the text of %d bytes", len(text))
		}
	}
	if c := cutChunk(strings.Repeat("x", countChunk-10) + "\n" + strings.Repeat("y", 100)); !strings.HasSuffix(c, "\n") {
		t.Errorf("chunk not cut after the newline: ends %q", c[len(c)-3:])
	}
}

func TestWithMargin(t *testing.T) {
	for _, tt := range []struct{ in, want int64 }{{0, 0}, {1, 2}, {10, 11}, {100, 110}, {101, 112}} {
		if got := WithMargin(tt.in); got != tt.want {
			t.Errorf("WithMargin(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestCountTokensOffline loads both vocabularies in a process with no
// home directory, a cache directory it must leave empty, and a proxy that
// refuses every connection, in a network namespace of its own where the
// machine allows one: the vocabularies come from the program itself.
func TestCountTokensOffline(t *testing.T) {
	if os.Getenv("BUDGET_OFFLINE_CHILD") == "1" {
		for _, tok := range []Tokenizer{O200kBase, Cl100kBase} {
			if n, err := CountTokens(tok, "hello world"); err != nil || n != 2 {
				t.Fatalf("offline CountTokens(%s) = %d, %v", tok, n, err)
			}
		}
		return
	}
	cache := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := []string{os.Args[0], "-test.run=^TestCountTokensOffline$", "-test.count=1"}
	if err := exec.CommandContext(ctx, "unshare", "-n", "true").Run(); err == nil {
		args = append([]string{"unshare", "-n"}, args...)
	} else {
		t.Logf("no network namespace here (%v): offline by proxy only", err)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = []string{"BUDGET_OFFLINE_CHILD=1", "HOME=", "TIKTOKEN_CACHE_DIR=" + cache, "DATA_GYM_CACHE_DIR=" + cache,
		"TMPDIR=" + cache, "HTTP_PROXY=http://127.0.0.1:1", "HTTPS_PROXY=http://127.0.0.1:1", "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("offline child: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the tokenizer wrote %d entries to its cache directory, first %s", len(entries), entries[0].Name())
	}
}

func BenchmarkCountTokens(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []string{"code", "logs", "prose", "runs"} {
		text := genText(rng, shape, 16<<10)
		b.Run(shape, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := CountTokens(O200kBase, text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
