package devcontainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
)

// Parse reads the configuration in data, found at cfgPath (relative to the
// repository's root). Errors name cfgPath and the key.
func Parse(cfgPath string, data []byte) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("devcontainer: %s is over %d KiB", cfgPath, MaxSize>>10)
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("devcontainer: %s: %w", cfgPath, err)
	}
	v.Standardize()
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, fmt.Errorf("devcontainer: %s: want a JSON object at the top", cfgPath)
	}
	c := &Config{Path: cfgPath}
	p := parser{cfg: c}
	seen := map[string]bool{}
	for _, m := range obj.Members {
		key := m.Name.Value.(hujson.Literal).String()
		if seen[key] {
			return nil, fmt.Errorf("devcontainer: %s: key %q is given twice", cfgPath, key)
		}
		seen[key] = true
		var raw bytes.Buffer
		if err := json.Compact(&raw, m.Value.Pack()); err != nil {
			return nil, fmt.Errorf("devcontainer: %s: %s: %w", cfgPath, key, err)
		}
		if err := p.member(key, raw.Bytes()); err != nil {
			return nil, fmt.Errorf("devcontainer: %s: %w", cfgPath, err)
		}
	}
	if err := p.finish(); err != nil {
		return nil, fmt.Errorf("devcontainer: %s: %w", cfgPath, err)
	}
	return c, nil
}

type parser struct {
	cfg *Config
	// legacy top-level dockerFile and context, and the build object.
	dockerfile, context string
	args                map[string]string
	target              string
	lifecycle           [3][]string // onCreate, updateContent, postCreate
}

var lifecycleKeys = []string{"onCreateCommand", "updateContentCommand", "postCreateCommand"}

func (p *parser) member(key string, raw []byte) error {
	if isEmpty(raw) {
		return nil
	}
	for i, k := range lifecycleKeys {
		if key == k {
			cmds, err := Lifecycle(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			p.lifecycle[i] = cmds
			return nil
		}
	}
	switch key {
	case "image":
		return p.str(key, raw, &p.cfg.Image)
	case "dockerFile", "dockerfile":
		return p.str(key, raw, &p.dockerfile)
	case "context":
		return p.str(key, raw, &p.context)
	case "build":
		return p.build(raw)
	case "containerEnv":
		env, err := p.env(key, raw)
		p.cfg.ContainerEnv = env
		return err
	case "dockerComposeFile", "service", "runServices":
		return fmt.Errorf("%s: Docker Compose configurations are not supported; use image or build", key)
	}
	p.ignore(key)
	return nil
}

func (p *parser) ignore(key string) {
	if why, ok := SecurityKeys[key]; ok {
		p.cfg.Ignored = append(p.cfg.Ignored, Ignored{Key: key, Security: true, Why: why})
		return
	}
	if why, ok := otherIgnored[key]; ok {
		p.cfg.Ignored = append(p.cfg.Ignored, Ignored{Key: key, Why: why})
		return
	}
	if !silent[key] {
		p.cfg.Ignored = append(p.cfg.Ignored, Ignored{Key: key, Why: "not a key runner knows"})
	}
}

func (p *parser) build(raw []byte) error {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("build: want an object")
	}
	for _, k := range sortedKeys(b) {
		v := b[k]
		if isEmpty(v) {
			continue
		}
		var err error
		switch k {
		case "dockerfile", "dockerFile":
			err = p.str("build."+k, v, &p.dockerfile)
		case "context":
			err = p.str("build.context", v, &p.context)
		case "target":
			err = p.str("build.target", v, &p.target)
		case "args":
			p.args, err = p.env("build.args", v)
		default:
			p.ignore("build." + k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) finish() error {
	c := p.cfg
	for _, cmds := range p.lifecycle {
		c.Setup = append(c.Setup, cmds...)
	}
	if p.dockerfile == "" {
		if c.Image == "" {
			return fmt.Errorf("neither image nor build.dockerfile is set")
		}
		if p.context != "" || p.args != nil || p.target != "" {
			p.ignore("build")
		}
		return nil
	}
	if c.Image != "" {
		return fmt.Errorf("both image and build.dockerfile are set; keep one")
	}
	df, err := inRepo(c.Path, "build.dockerfile", p.dockerfile)
	if err != nil {
		return err
	}
	ctx := "."
	if p.context != "" {
		if ctx, err = inRepo(c.Path, "build.context", p.context); err != nil {
			return err
		}
	} else {
		ctx = dirOf(c.Path)
	}
	if ctx != "." && df != ctx && !strings.HasPrefix(df, ctx+"/") {
		return fmt.Errorf("build.dockerfile %q is outside build.context %q", p.dockerfile, p.context)
	}
	c.Build = &Build{Dockerfile: df, Context: ctx, Args: p.args, Target: p.target}
	return nil
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func (p *parser) str(key string, raw []byte, dst *string) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%s: want a string", key)
	}
	if strings.ContainsRune(*dst, 0) {
		return fmt.Errorf("%s: holds a NUL byte", key)
	}
	return nil
}

// env reads a mapping of variable names to strings. Values that name the
// host's environment are dropped and reported: the host's environment
// never reaches the sandbox.
func (p *parser) env(key string, raw []byte) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: want an object of strings", key)
	}
	out := map[string]string{}
	for _, k := range sortedKeys(m) {
		v := m[k]
		if err := checkName(k); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%s.%s: holds a NUL byte", key, k)
		}
		v = strings.ReplaceAll(v, "${containerWorkspaceFolderBasename}", "workspace")
		v = strings.ReplaceAll(v, "${containerWorkspaceFolder}", "/workspace")
		if strings.Contains(v, "${") {
			p.cfg.Ignored = append(p.cfg.Ignored, Ignored{Key: key + "." + k,
				Why: "variables such as ${localEnv:...} are not substituted: nothing of the host's environment reaches the sandbox"})
			continue
		}
		out[k] = v
	}
	return out, nil
}

func checkName(k string) error {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("variable name %q: use letters, digits and '_', not starting with a digit", k)
		}
	}
	if k == "" {
		return fmt.Errorf("empty variable name")
	}
	return nil
}

// Lifecycle turns a lifecycle command of the devcontainer specification
// into shell commands: a string is one shell command; an array is one
// command run without a shell, here quoted into one; an object names
// commands (each a string or an array) that the specification runs in
// parallel and that run here one after another, in the order of their
// names.
func Lifecycle(raw []byte) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if isEmpty(raw) {
		return nil, nil
	}
	switch raw[0] {
	case '"', '[':
		c, err := command(raw)
		if err != nil || c == "" {
			return nil, err
		}
		return []string{c}, nil
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("want a string, an array of strings or an object of them")
		}
		var out []string
		for _, name := range sortedKeys(m) {
			c, err := command(m[name])
			if err != nil {
				return nil, fmt.Errorf("%q: %w", name, err)
			}
			if c != "" {
				out = append(out, c)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("want a string, an array of strings or an object of them")
}

func command(raw []byte) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.ContainsRune(s, 0) {
			return "", fmt.Errorf("holds a NUL byte")
		}
		return strings.TrimSpace(s), nil
	}
	var argv []string
	if err := json.Unmarshal(raw, &argv); err != nil {
		return "", fmt.Errorf("want a string or an array of strings")
	}
	q := make([]string, 0, len(argv))
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("holds a NUL byte")
		}
		q = append(q, shellQuote(a))
	}
	return strings.Join(q, " "), nil
}

// shellQuote quotes s for sh, so that it is one word, taken literally.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isEmpty reports a value that sets nothing: null, false, "", [] or {}.
func isEmpty(raw []byte) bool {
	switch s := string(bytes.TrimSpace(raw)); s {
	case "", "null", "false", `""`, "[]", "{}":
		return true
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
