package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/tasks"
)

// A task's model speaks the task's protocol, else the flag's; when auto
// falls back, the trajectory and the log say so once.
func TestTaskModelProtocol(t *testing.T) {
	if !slices.Equal(tasks.Protocols, agent.Protocols()) {
		t.Fatalf("tasks.Protocols %q and agent.Protocols() %q differ", tasks.Protocols, agent.Protocols())
	}
	srv := fakellm.New(t, fakellm.Text("one"), fakellm.Text("two"))
	srv.SetMode(fakellm.ModeNoTools)
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(prev)

	m := &modelFlags{baseURL: srv.URL(), apiKey: "sk-test-0123456789abcdef", protocol: agent.ProtocolNative, maxRetries: 1}
	var traj bytes.Buffer
	model, err := m.factory(nil)(tasks.Task{ID: "a", Protocol: agent.ProtocolAuto}, agent.NewTrajectory(&traj))
	if err != nil {
		t.Fatal(err)
	}
	req := agent.Request{Model: "local", Messages: []agent.Message{{Role: agent.RoleSystem, Content: "s"}, {Role: agent.RoleUser, Content: "u"}},
		Tools: []agent.ToolSpec{{Name: "complete", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	for range 2 {
		if _, err := model.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(traj.String(), `"type":"protocol"`); n != 1 || !strings.Contains(traj.String(), `"protocol":"xml"`) {
		t.Errorf("trajectory has %d protocol events, want one to xml:\n%s", n, traj.String())
	}
	if n := strings.Count(logs.String(), "falls back to xml"); n != 1 || !strings.Contains(logs.String(), "task=a") {
		t.Errorf("log %q, want one line naming the task", logs.String())
	}
	if r := srv.Refusals(); len(r) != 1 {
		t.Errorf("refusals %+v, want one", r)
	}

	// The flag applies to tasks that name no protocol.
	m.protocol = agent.ProtocolXML
	model, err = m.factory(nil)(tasks.Task{ID: "b"}, agent.NewTrajectory(&traj))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := model.(interface{ Protocol() string }); !ok || p.Protocol() != agent.ProtocolXML {
		t.Errorf("task without a protocol under --protocol xml got %T", model)
	}
}
