package batch

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

// commitMessage is the subject naming the task (and marking partial work)
// and the agent's summary as the body.
func commitMessage(t tasks.Task, r *tasks.Result) string {
	subject := "runner: " + t.ID
	if r.Status != tasks.StatusSucceeded {
		subject += fmt.Sprintf(" (partial: %s)", r.Status)
	}
	body := strings.TrimSpace(r.Summary)
	if body == "" {
		body = "The agent left no summary."
	}
	if r.Status != tasks.StatusSucceeded && r.Error != "" {
		body += "\n\nStopped: " + r.Error
	}
	return subject + "\n\n" + body
}

// trailers record what made the commit and what it cost.
func trailers(t tasks.Task, r *tasks.Result) []gitops.Trailer {
	return []gitops.Trailer{
		{Key: "Runner-Task", Value: t.ID},
		{Key: "Runner-Model", Value: t.Model},
		{Key: "Runner-Status", Value: string(r.Status)},
		{Key: "Runner-Tokens", Value: fmt.Sprintf("in=%d cached=%d out=%d", r.Tokens.In, r.Tokens.Cached, r.Tokens.Out)},
		{Key: "Runner-Cost-USD", Value: fmt.Sprintf("%.6f", r.CostUSD)},
	}
}

// madeForTask reports whether a commit message closes with the trailer
// block runner writes for task id. Only that block counts, as git parses
// it: the same words in the summary above it do not.
func madeForTask(message, id string) bool {
	n := 0
	for _, tr := range gitops.Trailers(message) {
		if tr.Key == "Runner-Task" {
			if tr.Value != id {
				return false
			}
			n++
		}
	}
	return n == 1
}
