package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/sandbox"
)

// Labels select runner's pods and policies (label values are short and
// plain); annotations keep what labels cannot hold: the exact task id, the
// owner and the deadline. They are the Docker backend's labels, under the
// same names.
const (
	LabelTool    = "dev.runner.tool" // always "runner"
	LabelRun     = "dev.runner.run"
	LabelTask    = "dev.runner.task"
	LabelSandbox = "dev.runner.sandbox" // the pod's name: its policy selects it

	AnnotationRun       = "dev.runner.run"
	AnnotationTask      = "dev.runner.task"
	AnnotationOwnerHost = "dev.runner.owner.host"
	AnnotationOwnerPID  = "dev.runner.owner.pid"
	AnnotationOwnerAt   = "dev.runner.owner.start"
	AnnotationDeadline  = "dev.runner.deadline" // RFC 3339, UTC
	toolName            = "runner"
)

func labels(c sandbox.Config, name string) map[string]string {
	return map[string]string{
		LabelTool:    toolName,
		LabelRun:     labelValue(c.RunID),
		LabelTask:    labelValue(c.TaskID),
		LabelSandbox: name,
	}
}

func annotations(c sandbox.Config, owner sandbox.Owner, deadline time.Time) map[string]string {
	return map[string]string{
		AnnotationRun:       c.RunID,
		AnnotationTask:      c.TaskID,
		AnnotationOwnerHost: owner.Host,
		AnnotationOwnerPID:  strconv.Itoa(owner.PID),
		AnnotationOwnerAt:   owner.Start,
		AnnotationDeadline:  deadline.UTC().Format(time.RFC3339),
	}
}

// ownerFromMeta reads back the Owner and deadline. ok is false when the
// labels are not runner's or are damaged.
func ownerFromMeta(l, a map[string]string) (o sandbox.Owner, deadline time.Time, ok bool) {
	if l[LabelTool] != toolName {
		return o, deadline, false
	}
	pid, err := strconv.Atoi(a[AnnotationOwnerPID])
	if err != nil {
		return o, deadline, false
	}
	deadline, err = time.Parse(time.RFC3339, a[AnnotationDeadline])
	if err != nil {
		return o, deadline, false
	}
	return sandbox.Owner{Host: a[AnnotationOwnerHost], PID: pid, Start: a[AnnotationOwnerAt]}, deadline, true
}

// labelValue makes s a valid label value (at most 63 letters, digits, '-',
// '_' and '.', starting and ending with a letter or digit), the same for
// the same s; a value it had to change gets a hash of s, so that two ids
// do not meet.
func labelValue(s string) string {
	ok := len(s) <= 63
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i], ok = '_', false
		}
	}
	out := string(b)
	if ok && (s == "" || isAlnum(s[0]) && isAlnum(s[len(s)-1])) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	if len(out) > 50 {
		out = out[:50]
	}
	out = strings.Trim(out, "-_.")
	return out + "-" + hex.EncodeToString(sum[:])[:10]
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// podName is a fresh DNS-1123 name for a sandbox of task (or run).
func podName(c sandbox.Config) string {
	base := c.TaskID
	if base == "" {
		base = c.RunID
	}
	b := []byte(strings.ToLower(base))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9') {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	s := strings.Trim(string(b), "-")
	if s == "" {
		return "runner-" + sandbox.RandomID()
	}
	return "runner-" + s + "-" + sandbox.RandomID()
}
