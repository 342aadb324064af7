package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/runner-dev/runner/sandbox"
)

// maxListed caps the entries list_files returns.
const maxListed = 1000

type listFiles struct{}

func (listFiles) Spec() ToolSpec {
	return ToolSpec{
		Name: "list_files",
		Description: "List the files and directories under a path of the workspace, one per line, directories " +
			"ending with '/' and symlinks with '@'. The contents of .git directories are left out. Use recursive " +
			"to see a whole tree; at most 1000 entries are shown.",
		Parameters: schema(nil,
			prop{"path", "string", "Directory relative to the workspace root; default \".\"."},
			prop{"recursive", "boolean", "List the whole tree below path; default false."},
		),
	}
}

func (listFiles) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	files, err := sb.ListFiles(ctx, a.Path, a.Recursive)
	if err != nil {
		return "", sandboxErr(err)
	}
	if len(files) == 0 {
		return "(empty directory)", nil
	}
	var b strings.Builder
	for i, f := range files {
		if i == maxListed {
			fmt.Fprintf(&b, "[... %d more entries not shown; list a subdirectory ...]\n", len(files)-maxListed)
			break
		}
		b.WriteString(f.Path)
		switch f.Type {
		case fs.ModeDir:
			b.WriteString("/")
		case fs.ModeSymlink:
			b.WriteString("@")
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

type readFile struct{}

func (readFile) Spec() ToolSpec {
	return ToolSpec{
		Name: "read_file",
		Description: "Read a text file of the workspace. Lines are shown numbered as '<number>\\t<text>'; the " +
			"numbers are not part of the file. Give start_line and end_line (1-based, inclusive) to read part of " +
			"a long file. Binary files are not shown.",
		Parameters: schema([]string{"path"},
			prop{"path", "string", "File path relative to the workspace root."},
			prop{"start_line", "integer", "First line to show (1-based); default 1."},
			prop{"end_line", "integer", "Last line to show (inclusive); default the end of the file."},
		),
	}
}

func (readFile) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	}
	if err := decodeArgs(raw, &a, "path"); err != nil {
		return "", err
	}
	data, err := sb.ReadFile(ctx, a.Path)
	if err != nil {
		return "", sandboxErr(err)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return fmt.Sprintf("%s is a binary file of %d bytes; not shown.", a.Path, len(data)), nil
	}
	if len(data) == 0 {
		return fmt.Sprintf("%s is empty.", a.Path), nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	start, end := max(a.StartLine, 1), a.EndLine
	if end <= 0 || end > len(lines) {
		end = len(lines)
	}
	if start > len(lines) {
		return "", &errArgs{fmt.Sprintf("start_line %d is past the end of %s (%d lines)", start, a.Path, len(lines))}
	}
	if start > end {
		return "", &errArgs{fmt.Sprintf("start_line %d is after end_line %d", start, end)}
	}
	var b strings.Builder
	for i := start; i <= end; i++ {
		fmt.Fprintf(&b, "%6d\t%s", i, lines[i-1])
		if !strings.HasSuffix(lines[i-1], "\n") {
			b.WriteString("\n[no newline at end of file]\n")
		}
	}
	if start > 1 || end < len(lines) {
		fmt.Fprintf(&b, "[lines %d-%d of %d]\n", start, end, len(lines))
	}
	return b.String(), nil
}

type writeFile struct{}

func (writeFile) Spec() ToolSpec {
	return ToolSpec{
		Name: "write_file",
		Description: "Create or overwrite a file of the workspace with the given content, creating missing " +
			"parent directories. Prefer edit_file to change part of an existing file.",
		Parameters: schema([]string{"path", "content"},
			prop{"path", "string", "File path relative to the workspace root."},
			prop{"content", "string", "The complete new content of the file."},
		),
	}
}

func (writeFile) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := decodeArgs(raw, &a, "path", "content"); err != nil {
		return "", err
	}
	if err := sb.WriteFile(ctx, a.Path, []byte(a.Content), 0); err != nil {
		return "", sandboxErr(err)
	}
	return fmt.Sprintf("Wrote %d bytes to %s.", len(a.Content), a.Path), nil
}

type editFile struct{}

func (editFile) Spec() ToolSpec {
	return ToolSpec{
		Name: "edit_file",
		Description: "Replace an exact piece of text in a file of the workspace. old_string must match the file " +
			"exactly (whitespace and indentation included, no line numbers) and occur exactly once, unless " +
			"replace_all is true; include surrounding lines to make it unique.",
		Parameters: schema([]string{"path", "old_string", "new_string"},
			prop{"path", "string", "File path relative to the workspace root."},
			prop{"old_string", "string", "The exact text to replace."},
			prop{"new_string", "string", "The text to put in its place."},
			prop{"replace_all", "boolean", "Replace every occurrence instead of exactly one; default false."},
		),
	}
}

func (editFile) Call(ctx context.Context, sb sandbox.Sandbox, raw json.RawMessage) (string, error) {
	var a struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := decodeArgs(raw, &a, "path", "old_string", "new_string"); err != nil {
		return "", err
	}
	if a.OldString == "" {
		return "", &errArgs{"old_string is empty; use write_file to create a file"}
	}
	if a.OldString == a.NewString {
		return "", &errArgs{"old_string and new_string are the same; nothing to change"}
	}
	data, err := sb.ReadFile(ctx, a.Path)
	if err != nil {
		return "", sandboxErr(err)
	}
	text := string(data)
	n := strings.Count(text, a.OldString)
	switch {
	case n == 0:
		return "", &errArgs{fmt.Sprintf("old_string does not occur in %s; read the file and copy the text exactly", a.Path)}
	case n > 1 && !a.ReplaceAll:
		return "", &errArgs{fmt.Sprintf("old_string occurs %d times in %s; add surrounding lines to make it unique, or set replace_all", n, a.Path)}
	}
	if err := sb.WriteFile(ctx, a.Path, []byte(strings.ReplaceAll(text, a.OldString, a.NewString)), 0); err != nil {
		return "", sandboxErr(err)
	}
	return fmt.Sprintf("Replaced %d occurrence(s) in %s.", n, a.Path), nil
}
