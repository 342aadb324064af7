package fakellm

import (
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// WithTokenizerUsage makes a reply report the usage a real server whose
// model counts with tokenizer ("o200k_base", "cl100k_base") would: the
// prompt counted as OpenAI's chat format does (see PromptTokens), the
// completion as the tokens of the reply's text and calls. It is counted
// independently of runner's own bounds: whole texts, the library's
// encoder, the chat format's own framing.
func (t Turn) WithTokenizerUsage(tokenizer string) Turn {
	t.usage, t.noUsage, t.tokenizer = nil, false, tokenizer
	return t
}

var (
	countMu sync.Mutex
	counts  = map[[2]string]int64{}
)

// counted is the number of tokens of s, remembered: a conversation sends
// the same messages again with every request.
func counted(tokenizer string, enc *tiktoken.Tiktoken, s string) int64 {
	key := [2]string{tokenizer, s}
	countMu.Lock()
	n, ok := counts[key]
	countMu.Unlock()
	if !ok {
		n = int64(len(enc.EncodeOrdinary(s)))
		countMu.Lock()
		counts[key] = n
		countMu.Unlock()
	}
	return n
}

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encs       = map[string]*tiktoken.Tiktoken{}
)

func encoding(name string) (*tiktoken.Tiktoken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if e, ok := encs[name]; ok {
		return e, nil
	}
	e, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("fakellm: tokenizer %s: %w", name, err)
	}
	encs[name] = e
	return e, nil
}

// PromptTokens counts a request's prompt as OpenAI documents its chat
// format: 3 tokens a message plus its role, content and name (and 1 for a
// name), a tool call's name and arguments plus 3, each tool definition's
// name, description and parameter schema plus 8, and 3 to prime the reply.
func PromptTokens(tokenizer string, req Request) (int64, error) {
	enc, err := encoding(tokenizer)
	if err != nil {
		return 0, err
	}
	count := func(s string) int64 { return counted(tokenizer, enc, s) }
	n := int64(3)
	for _, m := range req.Messages {
		n += 3 + count(m.Role) + count(m.Content)
		if m.Name != "" {
			n += 1 + count(m.Name)
		}
		for _, c := range m.ToolCalls {
			n += 3 + count(c.Function.Name) + count(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 8 + count(t.Function.Name) + count(t.Function.Description) + count(string(t.Function.Parameters))
	}
	return n, nil
}

// completionTokens counts a reply's text and calls.
func completionTokens(tokenizer string, content *string, calls []Call) (int64, error) {
	enc, err := encoding(tokenizer)
	if err != nil {
		return 0, err
	}
	var n int64
	if content != nil {
		n += int64(len(enc.EncodeOrdinary(*content)))
	}
	for _, c := range calls {
		n += 3 + int64(len(enc.EncodeOrdinary(c.Name))+len(enc.EncodeOrdinary(c.Arguments)))
	}
	return n, nil
}
