package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// toolSection describes the grammar and the tools for the system message.
// It is generated from the same ToolSpecs the native protocol sends, so
// the two never differ in what they offer.
func toolSection(tools []ToolSpec) string {
	var b strings.Builder
	b.WriteString(`Tool calls: you call a tool by writing this in your reply, exactly:

<tool_call name="TOOL">
<parameter name="PARAM">VALUE</parameter>
</tool_call>

- A VALUE is the exact text between the tags: nothing is escaped or unescaped (write < and & as they are), and only one newline right after <parameter ...> is dropped, so a long value may start on its own line.
- If a VALUE contains the text </parameter>, <parameter, <tool_call or </tool_call>, pick a word MARK of letters, digits or _ that does not occur in it and write <parameter name="PARAM" end="MARK">VALUE` + "MARK</parameter>" + `: the value then ends at MARK</parameter>.
- Write numbers and booleans plainly (42, true) and arrays or objects as JSON. Give every required parameter and no others.
- You may write several calls in one reply; they run in order. Then end your reply: each result comes back in the next message as <tool_result name="TOOL">...</tool_result>. Never write tool results yourself.
- Calls inside markdown code blocks are not run: never put a call in a code block.
- A call that breaks these rules is not run, and you are told why.

Example:
<tool_call name="TOOL">
<parameter name="path">notes/todo.txt</parameter>
<parameter name="content">
first line
second line
</parameter>
</tool_call>

The tools, each with the JSON schema of its parameters:`)
	for _, t := range tools {
		params := t.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		fmt.Fprintf(&b, "\n\n<tool name=%q>\n%s\nParameters: %s\n</tool>", t.Name, strings.TrimSpace(t.Description), compactJSON(params))
	}
	return b.String()
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// paramSchema is the part of a tool's JSON schema that reading a text call
// needs.
type paramSchema struct {
	Properties map[string]struct {
		Type json.RawMessage `json:"type"`
	} `json:"properties"`
	Required             []string        `json:"required"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
}

// callArguments turns a text call's parameters into the JSON arguments
// object the tool takes, strictly: a parameter the schema does not have
// (unless it allows others), a missing required one, or a value that is
// not of its type (integer, number, boolean, array, object) is an error
// naming it. A string parameter takes its value as written.
func callArguments(spec ToolSpec, params []textParam) (string, error) {
	var s paramSchema
	if len(bytes.TrimSpace(spec.Parameters)) > 0 {
		if err := json.Unmarshal(spec.Parameters, &s); err != nil {
			return "", fmt.Errorf("the tool's schema cannot be read: %v", err)
		}
	}
	closed := string(bytes.TrimSpace(s.AdditionalProperties)) == "false" || len(bytes.TrimSpace(spec.Parameters)) == 0
	given := map[string]bool{}
	var b strings.Builder
	b.WriteString("{")
	for i, p := range params {
		prop, known := s.Properties[p.name]
		if !known && closed {
			return "", fmt.Errorf("%s has no parameter %q; its parameters are: %s", spec.Name, p.name, paramList(s))
		}
		value, err := typedValue(prop.Type, p.value)
		if err != nil {
			return "", fmt.Errorf("parameter %q %v", p.name, err)
		}
		given[p.name] = true
		if i > 0 {
			b.WriteString(",")
		}
		key, _ := json.Marshal(p.name)
		b.Write(key)
		b.WriteString(":")
		b.WriteString(value)
	}
	b.WriteString("}")
	var missing []string
	for _, r := range s.Required {
		if !given[r] {
			missing = append(missing, strconv.Quote(r))
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("missing required parameter %s", strings.Join(missing, ", "))
	}
	return b.String(), nil
}

func paramList(s paramSchema) string {
	if len(s.Properties) == 0 {
		return "none"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// typedValue is value as JSON of the schema type typ (a name, or a list
// of names of which the first that is not "null" counts; no type takes
// the value as a string).
func typedValue(typ json.RawMessage, value string) (string, error) {
	var name string
	if json.Unmarshal(typ, &name) != nil {
		var names []string
		_ = json.Unmarshal(typ, &names)
		for _, n := range names {
			if n == "string" || name == "" && n != "null" {
				name = n
			}
		}
	}
	trimmed := strings.TrimSpace(value)
	switch name {
	case "", "string":
		b, _ := json.Marshal(value)
		return string(b), nil
	case "integer":
		if _, err := strconv.ParseInt(trimmed, 10, 64); err != nil {
			return "", fmt.Errorf("must be an integer, got %q", snippet(trimmed))
		}
		return trimmed, nil
	case "number":
		if _, err := strconv.ParseFloat(trimmed, 64); err != nil || !json.Valid([]byte(trimmed)) {
			return "", fmt.Errorf("must be a number, got %q", snippet(trimmed))
		}
		return trimmed, nil
	case "boolean":
		if trimmed != "true" && trimmed != "false" {
			return "", fmt.Errorf("must be true or false, got %q", snippet(trimmed))
		}
		return trimmed, nil
	case "array", "object":
		open := map[string]byte{"array": '[', "object": '{'}[name]
		if trimmed == "" || trimmed[0] != open || !json.Valid([]byte(trimmed)) {
			return "", fmt.Errorf("must be a JSON %s, got %q", name, snippet(trimmed))
		}
		var buf bytes.Buffer
		_ = json.Compact(&buf, []byte(trimmed))
		return buf.String(), nil
	case "null":
		if trimmed != "null" {
			return "", fmt.Errorf("must be null, got %q", snippet(trimmed))
		}
		return trimmed, nil
	}
	return "", fmt.Errorf("has a schema type %q that text calls do not support", name)
}
