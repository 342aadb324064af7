package tasks

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxAttempts caps the attempts key: each attempt is a sandbox and an
// agent of its own, and more than this many is a typo rather than a plan.
const MaxAttempts = 10

// Pick is how a best-of-n task chooses among its attempts that passed.
type Pick string

// The ways to pick an attempt.
const (
	// PickFirst keeps the attempt that passed first (the default).
	PickFirst Pick = "first"
	// PickCheapest keeps the passing attempt that cost least (the lowest
	// number on a tie); it waits for every attempt to end.
	PickCheapest Pick = "cheapest"
)

// AttemptBranch is the branch attempt k of a best-of-n task commits to:
// "<branch>-attempt-<k>", beside the task's branch rather than below it,
// since git cannot hold both a branch agent/x and a branch agent/x/...
func AttemptBranch(branch string, k int) string {
	return fmt.Sprintf("%s-attempt-%d", branch, k)
}

// TrajectoryName is the file name, under the out directory's
// trajectories/, of the trajectory of run attempt attempt of task id, or
// of its best-of-n attempt try when try > 0.
func TrajectoryName(id string, attempt, try int) string {
	if try > 0 {
		return fmt.Sprintf("%s.%d.attempt-%d.jsonl", id, attempt, try)
	}
	return fmt.Sprintf("%s.%d.jsonl", id, attempt)
}

// BestOf reports whether t runs as several attempts.
func (t Task) BestOf() bool { return t.Attempts > 1 }

// StopsOnSuccess reports whether the first attempt of t that passes stops
// the others: stop_on_success, true unless set false, and never with
// pick: cheapest, which must see every attempt end.
func (t Task) StopsOnSuccess() bool {
	if t.Pick == PickCheapest {
		return false
	}
	return t.StopOnSuccess == nil || *t.StopOnSuccess
}

// attemptFields are the keys of best-of-n, added to taskFields.
var attemptFields = []field{
	{"attempts", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if n, ok := r.integer(v, a); ok {
			switch {
			case n < 1:
				r.addField(v, a, "want at least 1, got %d", n)
			case n > MaxAttempts:
				r.addField(v, a, "at most %d attempts run on one task, got %d", MaxAttempts, n)
			default:
				i := int(n)
				s.Attempts = &i
			}
		}
	}},
	{"pick", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if p, ok := r.str(v, a); ok {
			switch Pick(p) {
			case PickFirst, PickCheapest:
				pk := Pick(p)
				s.Pick = &pk
			default:
				r.addField(v, a, "want %q or %q, got %q", PickFirst, PickCheapest, p)
			}
		}
	}},
	{"stop_on_success", false, func(r *reader, v *yaml.Node, a at, s *spec) {
		if b, ok := r.boolean(v, a); ok {
			s.StopOnSuccess = &b
		}
	}},
}

func init() { taskFields = append(taskFields, attemptFields...) }

// mergeAttempts sets the best-of-n fields of t from the task's spec and
// the defaults, and checks what only the two together can tell.
func (r *reader) mergeAttempts(t *Task, d, s *spec) {
	t.Attempts = deref(pick(s.Attempts, d.Attempts))
	t.Pick = deref(pick(s.Pick, d.Pick))
	if stop := pick(s.StopOnSuccess, d.StopOnSuccess); stop != nil {
		b := *stop // tasks must not share the defaults' pointer
		t.StopOnSuccess = &b
	}
	if t.Pick == PickCheapest && t.StopOnSuccess != nil && *t.StopOnSuccess {
		r.add(s.node, at{taskID: t.ID, field: "stop_on_success"},
			"stop_on_success: true cannot go with pick: cheapest, which waits for every attempt to end")
	}
	if t.Attempts > 1 && IsRemote(t.Repo) {
		r.add(s.node, at{taskID: t.ID, field: "attempts"},
			"attempts: a task with more than one attempt needs a local repository, where its attempt branches are kept; %s is a URL", t.Repo)
	}
}

// Tries returns, by attempt number, the last line recorded for each
// best-of-n attempt of task id since the task's last line of its own: the
// attempts a stopped run finished, which a rerun takes over rather than
// running again. Attempts whose line is not final are left out.
func (s *Store) Tries(id string) map[int]Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]Result{}
	for _, r := range s.all {
		switch {
		case r.ID != id:
		case r.Try == 0 && r.Status.Final():
			clear(out) // the task ended: a later run starts over
		case r.Try == 0:
		case r.Status.Final():
			out[r.Try] = r
		default:
			delete(out, r.Try)
		}
	}
	return out
}
