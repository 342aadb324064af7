package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/egress"
)

// maxRefusedHosts caps the refused hosts a result lists (the sandbox
// chooses them, and may try many).
const maxRefusedHosts = 50

// egressWatch hears the egress proxy of a task: it records each decision
// in the trajectory, keeps the refused hosts for the result, and halts
// the task when the proxy stops, which ends it as sandbox_error.
type egressWatch struct {
	traj *agent.Trajectory
	halt context.CancelCauseFunc

	mu      sync.Mutex
	refused []string
	seen    map[string]bool
	more    int
	stopped error
}

// errEgressStopped is the cause of the halt when the proxy stops.
var errEgressStopped = errors.New("egress proxy stopped")

func (e *egressWatch) report(ev egress.Event) {
	e.traj.Record(agent.Event{Type: agent.EventEgress, Time: ev.Time, Egress: &ev})
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case ev.Method == egress.Stopped:
		if e.stopped == nil {
			e.stopped = fmt.Errorf("%w during the task, so the sandbox lost its network: %s", errEgressStopped, ev.Reason)
			e.halt(e.stopped)
		}
	case ev.Decision == egress.Refused:
		hostPort := ev.Host
		if ev.Port != 0 {
			hostPort = net.JoinHostPort(ev.Host, strconv.Itoa(ev.Port))
		}
		if len(hostPort) > 260 {
			hostPort = hostPort[:260] + "..."
		}
		if e.seen[hostPort] {
			return
		}
		if len(e.refused) >= maxRefusedHosts {
			e.more++
			return
		}
		if e.seen == nil {
			e.seen = map[string]bool{}
		}
		e.seen[hostPort] = true
		e.refused = append(e.refused, hostPort)
	}
}

// result returns the refused hosts (with a last entry counting those left
// out) and the proxy's failure, if it stopped.
func (e *egressWatch) result() ([]string, error) {
	if e == nil {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	hosts := append([]string(nil), e.refused...)
	if e.more > 0 {
		hosts = append(hosts, fmt.Sprintf("(%d more)", e.more))
	}
	return hosts, e.stopped
}
