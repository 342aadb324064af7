package budget

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Tokenizer names a public, fixed BPE vocabulary with which a model family
// counts its tokens. The price table says which one a model uses (the
// "tokenizer" key of a price file); a model without one is bounded by its
// bytes (see TokensUpperBound).
//
// The vocabularies are embedded in the program (tiktoken-go-loader ships
// them in the Go module): nothing is read from the network, the home
// directory or a cache at run time.
type Tokenizer string

// The tokenizers known to runner.
const (
	// TokenizerBytes is no tokenizer: one token per byte, the bound that
	// holds for every byte-level tokenizer.
	TokenizerBytes Tokenizer = ""
	// O200kBase is the tokenizer of OpenAI's GPT-4o, GPT-4.1, GPT-5 and
	// o-series models.
	O200kBase Tokenizer = "o200k_base"
	// Cl100kBase is the tokenizer of OpenAI's GPT-4 and GPT-3.5 models.
	Cl100kBase Tokenizer = "cl100k_base"
)

// The tokenizer bound of a message is its texts' token count raised by
// TokenizerMarginPercent percent (rounded up), plus MessageOverhead for
// the message's framing and ToolCallOverhead for each tool call in it.
// OpenAI's chat format adds 3 to 4 tokens a message and fewer than 10 a
// tool call; the margin covers what the count of a text cut in chunks (see
// CountTokens) and a server's own rendering may differ by.
const (
	TokenizerMarginPercent = 10
	ToolCallOverhead       = 16
)

// TokenizerMargin is TokenizerMarginPercent as a fraction, as recorded in
// trajectories.
const TokenizerMargin = float64(TokenizerMarginPercent) / 100

// countChunk is the longest piece of text counted at once. Byte-pair
// encoding a piece costs the square of its length (16 KiB of one repeated
// letter takes a third of a second in one piece), so a long text is
// counted in chunks, cut after a newline where there is one. Small chunks
// are also faster with this library (a fifth of the time of 2 KiB chunks
// for prose, BenchmarkBoundCost).
const countChunk = 512

// Known reports whether t names a tokenizer runner can count with.
func (t Tokenizer) Known() bool { return t == O200kBase || t == Cl100kBase }

// String is the tokenizer's name, "bytes" for TokenizerBytes.
func (t Tokenizer) String() string {
	if t == TokenizerBytes {
		return "bytes"
	}
	return string(t)
}

// ParseTokenizer reads a tokenizer name as written in a price file: ""
// or "bytes" for none, else a known tokenizer.
func ParseTokenizer(s string) (Tokenizer, error) {
	switch t := Tokenizer(strings.TrimSpace(s)); {
	case t == "" || t == "bytes":
		return TokenizerBytes, nil
	case t.Known():
		return t, nil
	default:
		return "", fmt.Errorf("unknown tokenizer %q (known: %s, %s, bytes)", s, O200kBase, Cl100kBase)
	}
}

var encodings = map[Tokenizer]func() (*tiktoken.Tiktoken, error){
	O200kBase:  sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadEncoding(O200kBase) }),
	Cl100kBase: sync.OnceValues(func() (*tiktoken.Tiktoken, error) { return loadEncoding(Cl100kBase) }),
}

var setLoader sync.Once

// loadEncoding builds an encoding from the vocabulary embedded in the
// program. The library's default loader would download the vocabulary (and
// cache it under the temporary directory); the offline loader reads the
// copy compiled in, so it is set before any encoding is built.
func loadEncoding(t Tokenizer) (*tiktoken.Tiktoken, error) {
	setLoader.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(string(t))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", t, err)
	}
	return enc, nil
}

// CountTokens counts the tokens of texts with tokenizer t, without the
// margin: the sum of each text's count, a long text counted in chunks of
// at most 512 bytes (see countChunk). It fails for TokenizerBytes or when the
// vocabulary cannot be loaded. It is safe for concurrent use; the first
// call for a tokenizer loads its vocabulary (about a second).
func CountTokens(t Tokenizer, texts ...string) (int64, error) {
	load, ok := encodings[t]
	if !ok {
		return 0, fmt.Errorf("count tokens: no tokenizer %q", t)
	}
	enc, err := load()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, text := range texts {
		for text != "" {
			chunk := cutChunk(text)
			n += int64(len(enc.EncodeOrdinary(chunk)))
			text = text[len(chunk):]
		}
	}
	return n, nil
}

// cutChunk returns the first chunk of text to count: all of it up to
// countChunk bytes, else up to the last newline in the second half of the
// first countChunk bytes, else up to the last whole UTF-8 character there.
// Invalid UTF-8 is cut anywhere: the encoder reads it as replacement
// characters either way.
func cutChunk(text string) string {
	if len(text) <= countChunk {
		return text
	}
	head := text[:countChunk]
	if i := strings.LastIndexByte(head, '\n'); i >= countChunk/2 {
		return head[:i+1]
	}
	for i := countChunk; i > countChunk-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			return text[:i]
		}
	}
	return head
}

// WithMargin raises a token count by the tokenizer margin, rounding up.
func WithMargin(tokens int64) int64 {
	return tokens + (tokens*TokenizerMarginPercent+99)/100
}
