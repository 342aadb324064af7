package budget

// Usage counts the tokens of one call or of many. CachedTokens is the part
// of PromptTokens the provider served from its prompt cache, billed at the
// cached-input price; the rest of PromptTokens is billed at the input price.
// CompletionTokens includes reasoning tokens, billed at the output price.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CachedTokens:     u.CachedTokens + v.CachedTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
	}
}

// normalized returns u with negative counts read as zero and CachedTokens
// capped at PromptTokens, the only readings under which the counts make
// sense; a server's report goes through it before it is priced or recorded.
func (u Usage) normalized() Usage {
	u.PromptTokens = max(u.PromptTokens, 0)
	u.CompletionTokens = max(u.CompletionTokens, 0)
	u.CachedTokens = min(max(u.CachedTokens, 0), u.PromptTokens)
	return u
}
