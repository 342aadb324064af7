package tasks

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/internal/provider"
	"github.com/runner-dev/runner/internal/redact"
)

// spec is one task, or the defaults, as written: nil means unset.
type spec struct {
	node *yaml.Node // the mapping
	// seen holds the keys given a non-null value, valid or not.
	seen               map[string]bool
	idNode, branchNode *yaml.Node
	// promptNode is the value of prompt or prompt_file.
	promptNode         *yaml.Node
	ID, Repo, Ref      *string
	Prompt, PromptFile *string
	// MaxPrompt is max_prompt_size, set in defaults only.
	MaxPrompt *int64
	// Backend is backend, set in defaults only; backendLine is its line.
	Backend           *string
	backendLine       int
	Branch, Check     *string
	Image, Model      *string
	Provider, Runtime *string
	Protocol          *string
	CheckRetries      *int
	MaxSteps          *int
	CheckTimeout      *time.Duration
	Timeout           *time.Duration
	BudgetUSD         *float64
	Network           *Network
	// Allow is the egress allowlist of network: {allow: [...]}.
	Allow              []string
	Memory, Pids, Disk *int64
	CommitSize         *int64
	CPUs               *float64
	Env                map[string]string
	Push               *bool
	// Protected is set to an empty list by protected_paths: [].
	Protected, DenyCommands *[]string
	Hook                    *string
	HookTimeout             *time.Duration
	// MCPServers is mcp_servers; an empty list turns the defaults' off.
	MCPServers *[]MCPServer
	// mcp is the server being decoded, in the keys of one mcp_servers entry.
	mcp *MCPServer
	// Exclude is set to an empty list by exclude: [].
	Exclude *[]string
	// Delegate is the delegate key (see tasks/delegate.go).
	Delegate *Delegate
	// build is the image key's build from the repository, if it asks one.
	build *ImageBuild
	// CACerts is the PEM bundle of ca_certs.
	CACerts *[]byte
	// Setup holds the setup keys (see tasks/setup.go).
	Setup setupSpec
	// Attempts, Pick and StopOnSuccess run a task best-of-n.
	Attempts      *int
	Pick          *Pick
	StopOnSuccess *bool
}

// field is one key a task may hold.
type field struct {
	key string
	// perTask keys cannot be set in defaults.
	perTask bool
	decode  func(r *reader, v *yaml.Node, a at, s *spec)
}

// taskFields are the keys of a task, in the order they are documented.
var taskFields = []field{
	{"id", true, func(r *reader, v *yaml.Node, a at, s *spec) {
		id, ok := r.str(v, a)
		if !ok {
			return
		}
		s.ID, s.idNode = &id, v
		if err := CheckID(id); err != nil {
			r.add(v, a, "%v", err)
		}
	}},
	{"repo", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if repo, ok := r.str(v, a); ok {
			if strings.TrimSpace(repo) == "" {
				r.addField(v, a, "is empty")
				return
			}
			if !IsRemote(repo) && !filepath.IsAbs(repo) {
				repo = filepath.Join(r.dir, repo)
			}
			s.Repo = &repo
		}
	}},
	{"ref", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if ref, ok := r.str(v, a); ok {
			if err := checkRef(ref); err != nil {
				r.add(v, a, "%v", err)
			}
			s.Ref = &ref
		}
	}},
	{"prompt", true, func(r *reader, v *yaml.Node, a at, s *spec) {
		if p, ok := r.str(v, a); ok {
			s.Prompt, s.promptNode = &p, v
		}
	}},
	{"prompt_file", true, func(r *reader, v *yaml.Node, a at, s *spec) {
		// Read by loadPrompts, once the file's max_prompt_size is known.
		if name, ok := r.str(v, a); ok {
			s.PromptFile, s.promptNode = &name, v
		}
	}},
	{"max_prompt_size", false, decodeMaxPrompt},
	{"backend", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if b, ok := r.str(v, a); ok {
			if !slices.Contains(Backends, b) {
				hint := ""
				if s := suggest(b, Backends); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				r.addField(v, a, "want %s, got %q%s", strings.Join(Backends, " or "), b, hint)
				return
			}
			s.Backend, s.backendLine = &b, v.Line
		}
	}},
	{"branch", true, func(r *reader, v *yaml.Node, a at, s *spec) {
		if b, ok := r.str(v, a); ok {
			s.Branch, s.branchNode = &b, v
			if err := CheckBranchName(b); err != nil {
				r.add(v, a, "%v", err)
			}
		}
	}},
	{"check", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if c, ok := r.str(v, a); ok {
			s.Check = &c
		}
	}},
	{"check_retries", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			if n < 0 {
				r.addField(v, a, "must not be negative, got %d", n)
				return
			}
			i := int(n)
			s.CheckRetries = &i
		}
	}},
	{"check_timeout", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if d, ok := r.duration(v, a); ok {
			s.CheckTimeout = &d
		}
	}},
	{"image", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if img, ok := r.str(v, a); ok {
			if img == "" || strings.ContainsAny(img, " \t\r\n") {
				r.addField(v, a, "want an image reference without spaces, got %q", img)
				return
			}
			s.Image = &img
			checkImage(r, v, a, s, img)
		}
	}},
	{"runtime", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if rt, ok := r.str(v, a); ok {
			if rt == "" || strings.ContainsAny(rt, " \t\r\n") {
				r.addField(v, a, "want a runtime name such as runc or runsc, got %q", rt)
				return
			}
			s.Runtime = &rt
		}
	}},
	{"model", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if m, ok := r.str(v, a); ok {
			if strings.TrimSpace(m) == "" {
				r.addField(v, a, "is empty")
				return
			}
			s.Model = &m
		}
	}},
	{"provider", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if name, ok := r.str(v, a); ok {
			p, err := provider.Parse(name)
			if err != nil {
				hint := ""
				if s := suggest(name, provider.Names()); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				r.addField(v, a, "%v%s", err, hint)
				return
			}
			ps := string(p)
			s.Provider = &ps
		}
	}},
	{"protocol", false, decodeProtocol},
	{"budget_usd", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if f, ok := r.number(v, a); ok {
			if f <= 0 {
				r.addField(v, a, "must be positive, got %s", v.Value)
				return
			}
			s.BudgetUSD = &f
		}
	}},
	{"max_steps", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			if n <= 0 {
				r.addField(v, a, "must be positive, got %d", n)
				return
			}
			i := int(n)
			s.MaxSteps = &i
		}
	}},
	{"timeout", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if d, ok := r.duration(v, a); ok {
			s.Timeout = &d
		}
	}},
	{"network", false, decodeNetwork},
	{"limits", false, decodeLimits},
	{"env", false, decodeEnv},
	{"push", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if b, ok := r.boolean(v, a); ok {
			s.Push = &b
		}
	}},
	{"protected_paths", false, decodeProtected},
	{"deny_commands", false, decodeDenyCommands},
	{"pre_tool_hook", false, decodeHook},
	{"hook_timeout", false, decodeHookTimeout},
	{"mcp_servers", false, decodeMCPServers},
	{"exclude", false, decodeExclude},
	{"delegate", false, decodeDelegate},
	{"ca_certs", false, decodeCACerts},
}

// decodeMaxPrompt decodes max_prompt_size, a size like 512k or 8m.
func decodeMaxPrompt(r *reader, v *yaml.Node, a at, s *spec) {
	if v.Kind == yaml.ScalarNode && isNull(v) {
		return
	}
	if tag := v.ShortTag(); v.Kind != yaml.ScalarNode || tag != "!!str" && tag != "!!int" {
		r.addField(v, a, "want a size like 512k or 8m, got %s", describe(v))
		return
	}
	n, err := ParseMemory(v.Value)
	switch {
	case err != nil:
		r.addField(v, a, "%v", err)
	case n < 1:
		r.addField(v, a, "must be positive, got %s", v.Value)
	case n > maxPromptSizeLimit:
		r.addField(v, a, "%s is over the %s this key allows", v.Value, humanSize(maxPromptSizeLimit))
	default:
		s.MaxPrompt = &n
	}
}

// fileWide keys apply to the whole file and may be set in defaults only.
var fileWide = map[string]bool{"max_prompt_size": true, "backend": true}

// limitFields are the keys under limits.
var limitFields = []field{
	{"memory", false, sizeField(minMemory, false, func(s *spec, n int64) { s.Memory = &n })},
	{"disk", false, sizeField(minDisk, true, func(s *spec, n int64) { s.Disk = &n })},
	{"commit_size", false, sizeField(minCommitSize, false, func(s *spec, n int64) { s.CommitSize = &n })},
	{"cpus", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if f, ok := r.number(v, a); ok {
			switch {
			case f <= 0:
				r.addField(v, a, "must be positive, got %s", v.Value)
			case f < 0.01:
				r.addField(v, a, "want at least 0.01, got %s", v.Value)
			default:
				s.CPUs = &f
			}
		}
	}},
	{"pids", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			switch {
			case n <= 0:
				r.addField(v, a, "must be positive, got %d", n)
			case n < 8:
				r.addField(v, a, "want at least 8, got %d", n)
			default:
				s.Pids = &n
			}
		}
	}},
}

func decodeLimits(r *reader, v *yaml.Node, a at, s *spec) {
	v = resolve(v)
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		r.addField(v, a, "want a mapping of memory, disk, commit_size, cpus and pids, got %s", describe(v))
		return
	}
	r.decodeKeys(v, a, limitFields, false, s)
}

func decodeEnv(r *reader, v *yaml.Node, a at, s *spec) {
	v = resolve(v)
	if isNull(v) {
		return
	}
	if v.Kind != yaml.MappingNode {
		r.addField(v, a, "want a mapping of NAME: value, got %s", describe(v))
		return
	}
	env := map[string]string{}
	for _, p := range r.pairs(v, a) {
		key, val := p.key.Value, resolve(p.value)
		ka := a.with(key)
		if err := checkEnvKey(key); err != nil {
			r.add(p.key, ka, "env: %v", err)
			continue
		}
		text, ok := r.str(val, ka)
		if !ok && val.Kind != yaml.ScalarNode {
			continue
		}
		if kind := redact.Kind(text); kind != "" {
			r.addField(val, ka, "the value looks like %s; env is for non-secret values only, since the agent can read and leak them", kind)
			continue
		}
		env[key] = text
	}
	s.Env = env
}

// decodeKeys decodes mapping m into s with the given fields, reporting
// unknown keys with a suggestion. In defaults, per-task keys are refused.
// The id is decoded before anything else, so that every problem of a task
// names it.
func (r *reader) decodeKeys(m *yaml.Node, a at, fields []field, inDefaults bool, s *spec) {
	var idKey *yaml.Node
	if f, ok := lookupField(fields, "id"); ok && !inDefaults {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "id" && k.ShortTag() != "!!merge" {
				idKey = k
				f.decode(r, resolve(m.Content[i+1]), a.with("id"), s)
				break
			}
		}
		if s.ID != nil {
			a.taskID = *s.ID
		}
	}
	for _, p := range r.pairs(m, a) {
		key := p.key.Value
		f, ok := lookupField(fields, key)
		switch {
		case !ok:
			r.add(p.key, a.with(key), "%s", unknownKey(key, a.field, fields))
		case inDefaults && f.perTask:
			r.add(p.key, a.with(key), "%q cannot be set in defaults, only on a task", key)
		case !inDefaults && fileWide[key]:
			r.add(p.key, a.with(key), "%q can only be set in defaults: it applies to the whole file", key)
		default:
			if v := resolve(p.value); !isNull(v) {
				s.seen[key] = true
			}
			if p.key != idKey {
				f.decode(r, resolve(p.value), a.with(key), s)
			}
		}
	}
}

func lookupField(fields []field, key string) (field, bool) {
	for _, f := range fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// unknownKey explains an unknown key found in the mapping named parent,
// suggesting the likely intended one.
func unknownKey(key, parent string, fields []field) string {
	where := ""
	if parent != "" {
		where = " in " + parent
	}
	known := make([]string, len(fields))
	for i, f := range fields {
		known[i] = f.key
	}
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf("unknown key %q%s (did you mean %q?)", key, where, s)
	}
	_, holdsLimits := lookupField(fields, "limits")
	if _, isLimit := lookupField(limitFields, key); holdsLimits && isLimit {
		return fmt.Sprintf("unknown key %q%s (did you mean %q?)", key, where, "limits."+key)
	}
	return fmt.Sprintf("unknown key %q%s", key, where)
}

// sizeField decodes a size like 512m or 2g of at least least bytes; with
// off, the word "off" is accepted too, as -1.
func sizeField(least int64, off bool, set func(*spec, int64)) func(*reader, *yaml.Node, at, *spec) {
	return func(r *reader, v *yaml.Node, a at, s *spec) {
		if v.Kind == yaml.ScalarNode && isNull(v) {
			return
		}
		if tag := v.ShortTag(); v.Kind != yaml.ScalarNode || tag != "!!str" && tag != "!!int" {
			r.addField(v, a, "want a size like 512m or 2g, got %s", describe(v))
			return
		}
		if off && strings.EqualFold(strings.TrimSpace(v.Value), "off") {
			set(s, -1)
			return
		}
		n, err := ParseMemory(v.Value)
		switch {
		case err != nil:
			r.addField(v, a, "%v", err)
		case n < least:
			r.addField(v, a, "%s is below the %s minimum", v.Value, formatSize(least))
		default:
			set(s, n)
		}
	}
}

// formatSize writes a whole number of mebibytes as "6m".
func formatSize(n int64) string { return fmt.Sprintf("%dm", n>>20) }
