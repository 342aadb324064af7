package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/runner-dev/runner/internal/redact"
	"github.com/runner-dev/runner/internal/termsafe"
)

// TasksDir, in an out directory, holds the definition of each task as it
// last ran (defaults applied), one JSON file per task: what `runner
// continue` needs to start the task again without its task file.
const TasksDir = "tasks"

// ErrNoDefinition: the out directory holds no definition of the task (it
// never ran there, or ran with a version of runner that kept none).
var ErrNoDefinition = errors.New("no task definition")

// DefinitionPath is where the definition of task id is kept in out.
func DefinitionPath(out, id string) string {
	return filepath.Join(out, TasksDir, id+".json")
}

// SaveDefinition keeps t, as it runs, in the out directory, atomically.
// The repository URL is kept without credentials; the environment is
// kept as is, since a task's env holds no secrets (see Task.Env).
func (s *Store) SaveDefinition(t Task) error {
	if err := CheckID(t.ID); err != nil {
		return fmt.Errorf("save task definition: %w", err)
	}
	t.Repo = redact.URL(t.Repo)
	data, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("save task definition %s: %w", t.ID, err)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, TasksDir), 0o755); err != nil {
		return fmt.Errorf("save task definition %s: %w", t.ID, err)
	}
	if err := WriteFileAtomic(DefinitionPath(s.dir, t.ID), termsafe.JSON(append(data, '\n')), 0o644); err != nil {
		return fmt.Errorf("save task definition %s: %w", t.ID, err)
	}
	return nil
}

// LoadDefinition reads the definition of task id that SaveDefinition kept.
// A missing file is an error wrapping ErrNoDefinition; both errors name
// the file.
func (s *Store) LoadDefinition(id string) (Task, error) {
	if err := CheckID(id); err != nil {
		return Task{}, fmt.Errorf("load task definition: %w", err)
	}
	path := DefinitionPath(s.dir, id)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, fmt.Errorf("%w of task %s: %s does not exist", ErrNoDefinition, id, path)
	}
	if err != nil {
		return Task{}, fmt.Errorf("load task definition %s: %w", id, err)
	}
	var t Task
	if err := json.Unmarshal(data, &t); err != nil {
		return Task{}, fmt.Errorf("task %s: %s cannot be read: %w", id, path, err)
	}
	if t.ID != id {
		return Task{}, fmt.Errorf("task %s: %s defines task %q", id, path, t.ID)
	}
	return t, nil
}
