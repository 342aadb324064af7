package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and validates the task file at path. The format follows the
// extension: .jsonl or .ndjson is JSON Lines, anything else is YAML. A file
// with mistakes gives a *ValidationError listing all of them.
//
// The task file may be a regular file or a pipe; prompt files must be
// regular files (see max_prompt_size). Loading stops, with ctx's cause as
// the error, as soon as ctx ends, even while waiting on a pipe.
func Load(ctx context.Context, path string) (*Queue, error) {
	f, err := openTaskFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("read task file: %w", err)
	}
	defer f.Close()
	in, stop := interruptible(ctx, f)
	defer stop()
	return parse(ctx, path, in)
}

// Parse validates the task file content data, read from the file called
// name: name picks the format as in Load, labels problems, and is the base
// of relative repo paths and prompt files.
func Parse(name string, data []byte) (*Queue, error) {
	return parse(context.Background(), name, bytes.NewReader(data))
}

// parse reads a task file from in. An error that is not a
// *ValidationError means the file could not be read (or ctx ended).
func parse(ctx context.Context, name string, in io.Reader) (*Queue, error) {
	r := &reader{ctx: ctx, file: name, dir: filepath.Dir(name)}
	format := formatOf(name)
	var defaults *spec
	var specs []*spec
	var err error
	if format == FormatJSONL {
		defaults, specs, err = r.parseJSONL(in)
	} else {
		var data []byte
		var ok bool
		if data, ok, err = r.readYAML(in); ok {
			defaults, specs = r.parseYAML(data)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read task file %s: %w", name, err)
	}
	tasks := r.finish(defaults, specs)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read task file %s: %w", name, context.Cause(ctx))
	}
	if len(r.problems) > 0 {
		sortProblems(r.problems)
		return nil, &ValidationError{Problems: r.problems}
	}
	q := &Queue{File: name, Format: format, Tasks: tasks}
	if defaults != nil && defaults.Backend != nil {
		q.Backend, q.BackendLine = *defaults.Backend, defaults.backendLine
	}
	return q, nil
}

// readYAML reads a YAML task file whole, refusing one over maxYAMLSize or
// with invalid UTF-8 (which the YAML decoder reports without a position).
// ok is false when a problem was recorded instead.
func (r *reader) readYAML(in io.Reader) (data []byte, ok bool, err error) {
	data, err = io.ReadAll(io.LimitReader(in, maxYAMLSize+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > maxYAMLSize {
		r.add(nil, at{}, "the file is over %s; write large queues as JSON Lines (.jsonl), which is read one line at a time", humanSize(maxYAMLSize))
		return nil, false, nil
	}
	if !utf16BOM(data) {
		if line, col, what, bad := invalidUTF8(data); bad {
			r.problems = append(r.problems, Problem{File: r.file, Line: line, Col: col, Msg: what})
			return nil, false, nil
		}
	}
	return data, true, nil
}

func formatOf(name string) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return FormatJSONL
	}
	return FormatYAML
}

// topFields are the keys of a YAML task file.
var topFields = []field{{key: "defaults"}, {key: "tasks"}}

// parseYAML reads a document that is either a mapping with "defaults" and
// "tasks", or a bare list of tasks.
func (r *reader) parseYAML(data []byte) (*spec, []*spec) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.add(nil, at{}, "the file holds no tasks")
		} else {
			r.addYAMLError(err)
		}
		return nil, nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		r.add(&extra, at{}, "only one YAML document is allowed (remove the \"---\")")
	case !errors.Is(err, io.EOF):
		r.addYAMLError(err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = resolve(root.Content[0])
	}
	switch {
	case root.Kind == yaml.SequenceNode:
		return nil, r.taskList(root)
	case root.Kind != yaml.MappingNode:
		r.add(root, at{}, "want a mapping with defaults and tasks, or a list of tasks; got %s", describe(root))
		return nil, nil
	}
	var defaults *spec
	var list *yaml.Node
	for _, p := range r.pairs(root, at{}) {
		switch p.key.Value {
		case "defaults":
			defaults = r.defaults(resolve(p.value))
		case "tasks":
			list = resolve(p.value)
			if list.Kind != yaml.SequenceNode && !isNull(list) {
				r.add(list, at{field: "tasks"}, "tasks: want a list of tasks, got %s", describe(list))
				return defaults, nil
			}
		default:
			r.add(p.key, at{field: p.key.Value}, "%s", unknownKey(p.key.Value, "", topFields))
		}
	}
	if list == nil || len(list.Content) == 0 {
		r.add(list, at{}, "the file holds no tasks")
		return defaults, nil
	}
	return defaults, r.taskList(list)
}

// defaults decodes the defaults mapping.
func (r *reader) defaults(n *yaml.Node) *spec {
	s := &spec{node: n, seen: map[string]bool{}}
	if isNull(n) {
		return s
	}
	if n.Kind != yaml.MappingNode {
		r.add(n, at{field: "defaults"}, "defaults: want a mapping, got %s", describe(n))
		return s
	}
	r.decodeKeys(n, at{field: "defaults"}, taskFields, true, s)
	return s
}

// taskList decodes each entry of a list of tasks.
func (r *reader) taskList(list *yaml.Node) []*spec {
	var specs []*spec
	for _, item := range list.Content {
		if s := r.task(resolve(item)); s != nil {
			specs = append(specs, s)
		}
	}
	return specs
}

// task decodes one task mapping, or reports why it is not one.
func (r *reader) task(n *yaml.Node) *spec {
	if n.Kind != yaml.MappingNode {
		r.add(n, at{}, "want a task (a mapping with id, repo, prompt...), got %s", describe(n))
		return nil
	}
	s := &spec{node: n, seen: map[string]bool{}}
	r.decodeKeys(n, at{}, taskFields, false, s)
	return s
}

// yamlErrorLine matches the syntax errors of the yaml package.
var yamlErrorLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addYAMLError reports a YAML syntax error at its line.
func (r *reader) addYAMLError(err error) {
	msg := err.Error()
	if m := yamlErrorLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		r.add(&yaml.Node{Line: line}, at{}, "YAML syntax: %s", m[2])
		return
	}
	r.add(nil, at{}, "YAML syntax: %s", strings.TrimPrefix(msg, "yaml: "))
}
