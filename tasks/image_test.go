package tasks

import (
	"reflect"
	"strings"
	"testing"
)

func TestImageFromTheRepository(t *testing.T) {
	q, err := Parse("q.yaml", []byte(`
defaults:
  repo: /r
  image: dockerfile:ci/Dockerfile
tasks:
  - {id: a, prompt: p}
  - {id: b, prompt: p, image: devcontainer}
  - {id: c, prompt: p, image: "dockerfile:./build/../Dockerfile.dev"}
  - {id: d, prompt: p, image: "python:3.12"}
`))
	if err != nil {
		t.Fatal(err)
	}
	type img struct {
		Image string
		Build *ImageBuild
	}
	got := map[string]img{}
	for _, tk := range q.Tasks {
		got[tk.ID] = img{tk.Image, tk.Build}
	}
	want := map[string]img{
		"a": {"", &ImageBuild{Dockerfile: "ci/Dockerfile", Source: Source{"q.yaml", 4}}},
		"b": {"", &ImageBuild{Devcontainer: true, Source: Source{"q.yaml", 7}}},
		"c": {"", &ImageBuild{Dockerfile: "Dockerfile.dev", Source: Source{"q.yaml", 8}}},
		"d": {"python:3.12", nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got["a"].Build == got["b"].Build || q.Tasks[0].Build.String() != "dockerfile:ci/Dockerfile" {
		t.Errorf("builds shared or misnamed: %v", q.Tasks[0].Build)
	}
}

func TestImageFromTheRepositoryMistakes(t *testing.T) {
	_, lines := parseProblems(t, "q.yaml", `
tasks:
  - {id: a, repo: /r, prompt: p, image: "dockerfile:"}
  - {id: b, repo: /r, prompt: p, image: "dockerfile:/etc/Dockerfile"}
  - {id: c, repo: /r, prompt: p, image: "dockerfile:../outside/Dockerfile"}
  - {id: d, repo: /r, prompt: p, image: "dockerfile:."}
`)
	want := []string{
		`q.yaml:3:41: task "a": image: want dockerfile:PATH, the Dockerfile's path in the repository (dockerfile:Dockerfile)`,
		`q.yaml:4:41: task "b": image: dockerfile:/etc/Dockerfile: want a path relative to the repository's root, not an absolute one`,
		`q.yaml:5:41: task "c": image: dockerfile:../outside/Dockerfile: the Dockerfile must be a file in the repository`,
		`q.yaml:6:41: task "d": image: dockerfile:.: the Dockerfile must be a file in the repository`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		assertLines(t, lines, want)
	}
}
