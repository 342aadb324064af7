package report

import (
	"context"
	"slices"
	"sync"
)

// Updater keeps the report of a running run up to date: the index when
// tasks start and end, a task's page when it ends. It writes in the
// background, what piled up since the last write at once, so that the run
// never waits for its report. A nil *Updater does nothing.
type Updater struct {
	out  string
	opt  Options
	warn func(error)

	mu      sync.Mutex
	pending []string // tasks whose page is to be written
	dirty   bool     // the index is to be written
	failed  bool     // a write failed: warned once

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewUpdater starts keeping the report of out directory out; warn hears
// the first error.
func NewUpdater(out string, opt Options, warn func(error)) *Updater {
	u := &Updater{out: out, opt: opt, warn: warn, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go u.loop()
	return u
}

// Changed says that tasks ids ended (their pages are due), or, with no
// ids, that the index is out of date.
func (u *Updater) Changed(ids ...string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	u.pending = append(u.pending, ids...)
	u.dirty = true
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

func (u *Updater) loop() {
	defer close(u.done)
	for {
		select {
		case <-u.stop:
			return
		case <-u.wake:
			u.write(context.Background(), u.opt)
		}
	}
}

// write writes what is due.
func (u *Updater) write(ctx context.Context, opt Options) error {
	u.mu.Lock()
	ids, dirty := u.pending, u.dirty
	u.pending, u.dirty = nil, false
	u.mu.Unlock()
	if !dirty {
		return nil
	}
	slices.Sort(ids)
	err := WriteTasks(ctx, u.out, slices.Compact(ids), opt)
	if err != nil {
		u.mu.Lock()
		first := !u.failed
		u.failed = true
		u.pending = append(u.pending, ids...) // tried again at the next write
		u.mu.Unlock()
		if first && u.warn != nil {
			u.warn(err)
		}
	}
	return err
}

// Close stops the updates and writes the report as the run leaves it: the
// pages due, those of finished tasks that have none (an earlier run's),
// and the index, without live tasks.
func (u *Updater) Close(ctx context.Context) error {
	if u == nil {
		return nil
	}
	close(u.stop)
	<-u.done
	missing, err := Missing(u.out, u.opt)
	if err != nil {
		return err
	}
	u.Changed(missing...)
	final := u.opt
	final.Live = nil
	return u.write(ctx, final)
}
