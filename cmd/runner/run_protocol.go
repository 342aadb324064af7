package main

import (
	"log/slog"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/tasks"
)

// withProtocol gives a task's model the task's tool protocol, or the
// run's (--protocol). When auto falls back to xml, the task's trajectory
// records it as a protocol event and the log says so, once per task.
func (m *modelFlags) withProtocol(model agent.Model, t tasks.Task, traj *agent.Trajectory) (agent.Model, error) {
	name := t.Protocol
	if name == "" {
		name = m.protocol
	}
	return agent.WithProtocol(model, name, func(reason string) {
		traj.Record(agent.Event{Type: agent.EventProtocol, Protocol: agent.ProtocolXML, Text: reason})
		slog.Warn("tool protocol falls back to xml", "task", t.ID, "reason", reason)
	})
}
