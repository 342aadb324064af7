package tasks

import (
	"errors"
	"strings"
	"testing"
)

// backend: is read from the defaults, with its line; a bad value or one on
// a task is a problem at its place.
func TestParseBackend(t *testing.T) {
	q, err := Parse("q.yaml", []byte("defaults:\n  repo: /r\n  backend: kubernetes\ntasks:\n  - {id: a, prompt: p}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Backend != BackendKubernetes || q.BackendLine != 3 {
		t.Errorf("Backend = %q at line %d, want kubernetes at line 3", q.Backend, q.BackendLine)
	}
	q, err = Parse("q.jsonl", []byte(`{"defaults": {"repo": "/r", "backend": "docker"}}`+"\n"+`{"id": "a", "prompt": "p"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Backend != BackendDocker || q.BackendLine != 1 {
		t.Errorf("jsonl: Backend = %q at line %d, want docker at line 1", q.Backend, q.BackendLine)
	}
	q, err = Parse("q.yaml", []byte("- {id: a, repo: /r, prompt: p}\n"))
	if err != nil || q.Backend != "" {
		t.Errorf("no backend: %q, %v", q.Backend, err)
	}

	for _, tt := range []struct{ input, want string }{
		{"defaults:\n  repo: /r\n  backend: kubernets\ntasks:\n  - {id: a, prompt: p}\n",
			`q.yaml:3:12: defaults.backend: want docker or kubernetes, got "kubernets" (did you mean "kubernetes"?)`},
		{"defaults:\n  repo: /r\n  backend: [docker]\ntasks:\n  - {id: a, prompt: p}\n",
			`q.yaml:3:12: defaults.backend: want a string, got a list`},
		{"defaults:\n  repo: /r\ntasks:\n  - {id: a, prompt: p, backend: docker}\n",
			`q.yaml:4:24: task "a": "backend" can only be set in defaults: it applies to the whole file`},
	} {
		_, err := Parse("q.yaml", []byte(tt.input))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%q: err = %v, want a ValidationError", tt.input, err)
			continue
		}
		if got := strings.Join(ve.ErrorLines(), "\n"); got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.input, got, tt.want)
		}
	}
}
