package tasks

import (
	"testing"
)

// provider: names the service behind the endpoint; defaults apply, a task
// overrides, the name is case-insensitive, and a wrong one is reported with
// its place and a suggestion.
func TestProviderKey(t *testing.T) {
	q, err := Parse("tasks.yaml", []byte(`defaults:
  repo: /src/app
  provider: DeepSeek
tasks:
  - id: a
    prompt: Do it.
  - id: b
    prompt: Do it.
    provider: ollama
  - id: c
    prompt: Do it.
    provider: auto
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"deepseek", "ollama", "auto"} {
		if got := q.Tasks[i].Provider; got != want {
			t.Errorf("task %s: provider %q, want %q", q.Tasks[i].ID, got, want)
		}
	}

	_, lines := parseProblems(t, "tasks.yaml", `tasks:
  - id: a
    repo: /src/app
    prompt: Do it.
    provider: gemeni
  - id: b
    repo: /src/app
    prompt: Do it.
    provider: [openai]
`)
	assertLines(t, lines, []string{
		`tasks.yaml:5:15: task "a": provider: unknown provider "gemeni": want one of auto, openai, gemini, anthropic, deepseek, mistral, groq, openrouter, ollama, vllm, litellm (did you mean "gemini"?)`,
		`tasks.yaml:9:15: task "b": provider: want a string, got a list`,
	})
}
