package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// Replay is a Model that plays back the replies recorded in a trajectory,
// in order, whatever it is sent: for offline demos and regression tests.
// The recorded usage is reported again, so budgets behave as they did.
type Replay struct {
	mu      sync.Mutex
	source  string
	replies []Response
	next    int
}

var _ Model = (*Replay)(nil)

// LoadReplay reads the model replies of the trajectory file at path.
func LoadReplay(path string) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load replay: %w", err)
	}
	defer f.Close()
	r, err := ReadReplay(f)
	if err != nil {
		return nil, fmt.Errorf("load replay %s: %w", path, err)
	}
	r.source = path
	return r, nil
}

// ReadReplay reads the model replies of a trajectory.
func ReadReplay(rd io.Reader) (*Replay, error) {
	r := &Replay{source: "trajectory"}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if e.Type != EventResponse || e.Message == nil || e.Error != "" {
			continue
		}
		resp := Response{Message: e.Message.Message(), FinishReason: e.FinishReason, Model: e.Model,
			UsageEstimated: e.UsageEstimated}
		if e.Usage != nil {
			resp.Usage = *e.Usage
		}
		r.replies = append(r.replies, resp)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r.replies) == 0 {
		return nil, fmt.Errorf("no model replies recorded")
	}
	return r, nil
}

// Complete returns the next recorded reply.
func (r *Replay) Complete(ctx context.Context, _ Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next >= len(r.replies) {
		return Response{}, fmt.Errorf("replay of %s: all %d recorded replies were used", r.source, len(r.replies))
	}
	resp := r.replies[r.next]
	r.next++
	return resp, nil
}
