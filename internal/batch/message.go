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
