package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/internal/batch"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/tasks"
)

// session is what `runner run`, `exec` and `continue` share while tasks
// run: the prices and secrets of the model flags, the out directory's
// store (its lock held), the engine, and a run begun in the store.
type session struct {
	prices  budget.PriceTable
	secrets []string
	store   *tasks.Store
	engine  sandbox.Backend
	runID   string
}

// sessionHooks are the checks a command adds to the set-up; each may be
// nil, and an error from one ends the set-up as a configuration error.
type sessionHooks struct {
	// opened runs once the store is open, before the engine is reached.
	opened func(store *tasks.Store) error
	// connected runs once the engine is reached, before earlier runs'
	// sandboxes are removed.
	connected func(e sandbox.Backend) error
}

// openSession sets up the tasks of queue (nil for a continuation, whose
// task the store holds): prices, secrets, the store with its warnings
// printed, the engine, earlier runs' sandboxes removed, and a new run
// begun. The caller calls end, then close, whatever happens next.
func openSession(ctx context.Context, d *deps, m *modelFlags, out string, queue []tasks.Task, hooks sessionHooks) (s *session, err error) {
	// A failed set-up lets go of what it opened. The deferred close holds
	// its own pointer: every "return nil, err" below sets s to nil first.
	opened := &session{}
	s = opened
	defer func() {
		if err != nil {
			opened.close()
			s = nil
		}
	}()
	if s.prices, err = m.prices(); err != nil {
		return nil, err
	}
	if s.secrets, err = m.secrets(d.getenv, queue); err != nil {
		return nil, configErr(err)
	}
	if s.store, err = tasks.OpenStore(out); err != nil {
		return nil, configErr(err)
	}
	for _, w := range s.store.Warnings() {
		d.printer.Warn("%s", w)
	}
	if hooks.opened != nil {
		if err := hooks.opened(s.store); err != nil {
			return nil, configErr(err)
		}
	}
	if s.engine, err = d.engine(ctx); err != nil {
		return nil, err
	}
	if hooks.connected != nil {
		if err := hooks.connected(s.engine); err != nil {
			return nil, configErr(err)
		}
	}
	removeEarlierRuns(ctx, d, s.engine, s.store)
	s.runID = fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102-150405"), os.Getpid())
	if err := s.store.BeginRun(s.runID); err != nil {
		return nil, err
	}
	return s, nil
}

// deps are the batch dependencies every command fills in the same way;
// the caller adds what is its own (questions, approvals, progress).
func (s *session) deps(d *deps, m *modelFlags, endpoint *agent.Endpoint) batch.Deps {
	return batch.Deps{
		Store:        s.store,
		StartSandbox: s.engine.Start,
		BuildImage:   buildImage(s.engine),
		Environments: environments(s.engine),
		ImageExists:  imageExists(s.engine),
		NewModel:     m.factory(endpoint),
		Endpoint:     endpoint,
		Prices:       s.prices,
		GitAuth:      gitAuth(d.getenv),
		Secrets:      s.secrets,
	}
}

// end removes the run's sandboxes, whatever happened (what names them
// says so), and ends the run in the store once they are gone.
func (s *session) end(ctx context.Context, d *deps, what string) {
	if _, err := s.engine.RemoveRun(context.WithoutCancel(ctx), s.runID); err != nil {
		d.printer.Warn("removing %s: %v", what, err)
	} else if err := s.store.EndRun(s.runID); err != nil {
		d.printer.Warn("%v", err)
	}
}

// close lets go of the engine and the store's lock.
func (s *session) close() {
	if s.engine != nil {
		s.engine.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}
