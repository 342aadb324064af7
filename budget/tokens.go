package budget

// A byte count bounds a token count. The tokenizers of the models priced
// here (byte-level BPE for OpenAI and Anthropic, SentencePiece with byte
// fallback for Gemini) cut text into pieces of at least one byte, so a text
// of n bytes is at most n tokens. What the bytes do not show is the framing
// the provider adds around them: role markers and separators per message,
// and once per request the priming of the reply and, when tools are given,
// a tool-use system prompt (a few hundred tokens for Claude models). Those
// are bounded by the constants below, chosen with a wide margin.
//
// Give the length of each message as sent in the request, for instance its
// JSON encoding: that contains every byte of its text (escaping only adds
// bytes) plus keys and quotes that outnumber the framing tokens. Count the
// tool definitions the same way. Images and audio are not bounded by their
// bytes and are not covered.
//
// The bound is loose (English prose runs near four bytes a token), which makes
// the budget refuse a call somewhat before the last cent; that is the price of
// a cap that holds.
const (
	// MessageOverhead bounds the framing tokens of one message.
	MessageOverhead = 16
	// RequestOverhead bounds the tokens a provider adds once per request.
	RequestOverhead = 1024
)

// TokensUpperBound bounds the tokens of one message of nBytes bytes,
// framing included. A negative nBytes counts as zero.
func TokensUpperBound(nBytes int) int64 {
	return int64(max(nBytes, 0)) + MessageOverhead
}

// PromptUpperBound bounds the prompt tokens of a request made of messages
// (and tool definitions) of the given byte sizes.
func PromptUpperBound(messageBytes ...int) int64 {
	total := int64(RequestOverhead)
	for _, n := range messageBytes {
		total += TokensUpperBound(n)
	}
	return total
}
