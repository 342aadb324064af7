package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

// Tool is one function the model can call. Call runs it against the
// sandbox; its string result goes back to the model. An error is also shown
// to the model (as "error: ..."), unless it wraps ErrSandbox, which ends the
// run: the sandbox itself failed.
type Tool interface {
	Spec() ToolSpec
	Call(ctx context.Context, sb sandbox.Sandbox, args json.RawMessage) (string, error)
}

// ErrSandbox marks a tool error caused by the sandbox's infrastructure
// rather than by the call.
var ErrSandbox = errors.New("sandbox failure")

// errArgs is a problem with a call's arguments, reported to the model.
type errArgs struct{ msg string }

func (e *errArgs) Error() string { return e.msg }

// decodeArgs parses a call's JSON arguments into v, strictly: unknown
// fields and missing required fields (listed) are errors the model can fix.
func decodeArgs(raw json.RawMessage, v any, required ...string) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return &errArgs{fmt.Sprintf("arguments are not a JSON object: %v", err)}
	}
	for _, f := range required {
		if _, ok := fields[f]; !ok {
			return &errArgs{fmt.Sprintf("missing required argument %q", f)}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &errArgs{fmt.Sprintf("invalid arguments: %v", err)}
	}
	return nil
}

// sandboxErr classifies an error from the sandbox: a file-level error (not
// found, outside the workspace, a directory, permissions) is for the model;
// anything else is an infrastructure failure.
func sandboxErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sandbox.ErrNotFound), errors.Is(err, sandbox.ErrIsDir),
		errors.Is(err, sandbox.ErrTooLarge), errors.Is(err, sandbox.ErrOutsideWorkspace),
		errors.Is(err, sandbox.ErrNotDir), errors.Is(err, sandbox.ErrNotRegular),
		errors.Is(err, fs.ErrPermission):
		return err
	}
	return fmt.Errorf("%w: %w", ErrSandbox, err)
}

// schema builds a JSON schema object for a tool's parameters.
func schema(required []string, props ...prop) json.RawMessage {
	p := map[string]any{}
	for _, pr := range props {
		s := map[string]any{"type": pr.typ, "description": pr.desc}
		p[pr.name] = s
	}
	if required == nil {
		required = []string{}
	}
	b, _ := json.Marshal(map[string]any{
		"type": "object", "properties": p, "required": required, "additionalProperties": false,
	})
	return b
}

type prop struct{ name, typ, desc string }
