package tasks

import (
	"errors"
	"path/filepath"
)

// maxPrompt is the prompt cap of the file: max_prompt_size from its
// defaults, or DefaultMaxPromptSize.
func (r *reader) maxPrompt(defaults *spec) int64 {
	if defaults != nil && defaults.MaxPrompt != nil {
		return *defaults.MaxPrompt
	}
	return DefaultMaxPromptSize
}

// loadPromptFile reads the prompt_file of s into s.Prompt, reporting a file
// that is not a regular file, is over limit bytes or is not UTF-8 at the
// prompt_file key. Nothing is read once r.ctx has ended.
func (r *reader) loadPromptFile(s *spec, a at, limit int64) {
	if s.PromptFile == nil || r.ctx.Err() != nil {
		return
	}
	name := *s.PromptFile
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.dir, path)
	}
	a = a.with("prompt_file")
	data, err := readPromptFile(r.ctx, path, limit)
	var tooLarge *sizeError
	switch {
	case r.ctx.Err() != nil:
		return // Load reports the interruption
	case errors.As(err, &tooLarge):
		tooLarge.path = name
		r.addField(s.promptNode, a, "%v (raise max_prompt_size in defaults if this prompt is meant)", tooLarge)
		return
	case err != nil:
		r.addField(s.promptNode, a, "read prompt: %v", err)
		return
	}
	if line, col, what, bad := invalidUTF8(data); bad {
		r.addField(s.promptNode, a, "%s:%d:%d: %s", name, line, col, what)
		return
	}
	p := string(data)
	s.Prompt = &p
}

// checkPromptSize reports an inline prompt over limit bytes.
func (r *reader) checkPromptSize(s *spec, a at, limit int64) {
	if s.Prompt == nil || s.PromptFile != nil || int64(len(*s.Prompt)) <= limit {
		return
	}
	r.addField(s.promptNode, a.with("prompt"), "the prompt is %s, over the %s cap (raise max_prompt_size in defaults if this prompt is meant)",
		humanSize(int64(len(*s.Prompt))), humanSize(limit))
}
