package tasks

import (
	"errors"
	"strings"
	"testing"
)

// parseProblems parses input and returns the lines of its ValidationError.
func parseProblems(t *testing.T, name, input string) (*ValidationError, []string) {
	t.Helper()
	q, err := Parse(name, []byte(input))
	if err == nil {
		t.Fatalf("Parse succeeded with %d tasks, want a ValidationError", len(q.Tasks))
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T %v, want *ValidationError", err, err)
	}
	return ve, strings.Split(ve.Error(), "\n")
}

func assertLines(t *testing.T, got, want []string) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}

// TestParseReportsAllMistakes feeds a file full of mistakes and expects every
// one of them, in file order, with its position and task.
func TestParseReportsAllMistakes(t *testing.T) {
	const input = `defaults:
  timout: 30m
  id: nope
  limits:
    memory: 2 gigs
tasks:
  - id: fix-typo
    repo: https://github.com/example/app.git
    promt: Fix the typo.
  - id: fix-typo
    repo: /src/app
    prompt: "   "
  - id: bad id
    prompt: Do it.
    repo: /src/app
    branch: feature..x
    budget_usd: ten
    max_steps: -3
    timeout: 30 minutes
    network: host
    limits:
      memory: 1m
      cpus: -1
      pids: "64"
  - id: leaky
    repo: /src/app
    prompt: Deploy.
    check_retries: 1.5
    push: yes
    env:
      GH_TOKEN: ghp_abcdefghijklmnopqrstuvwxyz0123456789
      1BAD: x
    memory: 2g
  - prompt: no id here
  - id: Leaky
    repo: /src/app
    ref: --upload-pack=evil
    prompt: Case clash.
`
	ve, got := parseProblems(t, "tasks.yaml", input)
	want := []string{
		`tasks.yaml:2:3: unknown key "timout" in defaults (did you mean "timeout"?)`,
		`tasks.yaml:3:3: "id" cannot be set in defaults, only on a task`,
		`tasks.yaml:5:13: defaults.limits.memory: memory size "2 gigs": want a number with an optional unit, like 512m or 2g`,
		`tasks.yaml:7:5: task "fix-typo": missing prompt`,
		`tasks.yaml:9:5: task "fix-typo": unknown key "promt" (did you mean "prompt"?)`,
		`tasks.yaml:10:9: task "fix-typo": duplicate id "fix-typo" (first used on line 7)`,
		`tasks.yaml:12:13: task "fix-typo": prompt is empty`,
		`tasks.yaml:13:9: id "bad id" has the character ' '; use only letters, digits, '.', '_' and '-'`,
		`tasks.yaml:16:13: task "bad id": branch name "feature..x" must not contain ".."`,
		`tasks.yaml:17:17: task "bad id": budget_usd: want a number, got "ten"`,
		`tasks.yaml:18:16: task "bad id": max_steps: must be positive, got -3`,
		`tasks.yaml:19:14: task "bad id": timeout: bad duration "30 minutes" (want a Go duration like 30m or 1h30m)`,
		`tasks.yaml:20:14: task "bad id": network: want "none", "bridge" or a mapping with allow: [host names], got "host"`,
		`tasks.yaml:22:15: task "bad id": limits.memory: 1m is below the 6m minimum`,
		`tasks.yaml:23:13: task "bad id": limits.cpus: must be positive, got -1`,
		`tasks.yaml:24:13: task "bad id": limits.pids: want a whole number, got "64"`,
		`tasks.yaml:28:20: task "leaky": check_retries: want a whole number, got 1.5`,
		`tasks.yaml:29:11: task "leaky": push: want true or false, got "yes"`,
		`tasks.yaml:31:17: task "leaky": env.GH_TOKEN: the value looks like a GitHub token; env is for non-secret values only, since the agent can read and leak them`,
		`tasks.yaml:32:7: task "leaky": env: variable name "1BAD": use letters, digits and '_', not starting with a digit`,
		`tasks.yaml:33:5: task "leaky": unknown key "memory" (did you mean "limits.memory"?)`,
		`tasks.yaml:34:5: missing id`,
		`tasks.yaml:34:5: missing repo (set it on the task or in defaults)`,
		`tasks.yaml:35:9: task "Leaky": id "Leaky" differs only in case from "leaky" on line 25; ids name files and branches, which may be case-insensitive`,
		`tasks.yaml:37:10: task "Leaky": ref "--upload-pack=evil" must not start with "-"`,
	}
	assertLines(t, got, want)

	// The structured fields agree with the text.
	p := ve.Problems[4]
	wantP := Problem{File: "tasks.yaml", Line: 9, Col: 5, TaskID: "fix-typo", Field: "promt",
		Msg: `unknown key "promt" (did you mean "prompt"?)`}
	if p != wantP {
		t.Errorf("problem 5: got %+v, want %+v", p, wantP)
	}
	if strings.Contains(ve.Error(), "ghp_abc") {
		t.Errorf("the error repeats the secret value")
	}
}

func TestParseReportsAllMistakesJSONL(t *testing.T) {
	const input = `{"id": "a", "repo": "/src/app", "prompt": "x"}
{"defaults": {"model": "m"}}
{"id": "b", "repo": "/src/app", "prompt": "y", "max_steps": "10", "budget_usd": -1}
{"id": "c", "repo": "/src/app", "prompt": "z", "branch": "agent/a"}
{"id": "d", "repo": "/src/app" "prompt": "z"}
["not", "an", "object"]
{"id": "é", "repo": "/src/app", "prompt": "z", "prompt": "again", "check_retry": 2}
{"id": "e", "repo": "/src/app", "prompt": "z"} {"id": "f"}
{"id": "g", "repo": "/src/app", "prompt": "z"

{"id": "h", "repo": "/src/app", "prompt": "z", "timeout": 30, "limits": {"memroy": "1g"}, "env": {"A": 1, "B": true}}
`
	_, got := parseProblems(t, "queue.jsonl", input)
	want := []string{
		`queue.jsonl:2:1: defaults must be on the first line`,
		`queue.jsonl:3:61: task "b": max_steps: want a whole number, got "10"`,
		`queue.jsonl:3:81: task "b": budget_usd: must be positive, got -1`,
		`queue.jsonl:4:58: task "c": branch "agent/a" is also the branch of task "a" (line 1)`,
		`queue.jsonl:5:32: JSON syntax: invalid character '"' after object key:value pair`,
		`queue.jsonl:6:1: want a JSON object (a task), got a list`,
		`queue.jsonl:7:8: id "é" has the character 'é'; use only letters, digits, '.', '_' and '-'`,
		`queue.jsonl:7:48: task "é": duplicate key "prompt" (first at column 33)`,
		`queue.jsonl:7:67: task "é": unknown key "check_retry" (did you mean "check_retries"?)`,
		`queue.jsonl:8:48: JSON syntax: more than one JSON value on the line`,
		`queue.jsonl:9:46: JSON syntax: the line ends before the JSON value does`,
		`queue.jsonl:11:59: task "h": timeout: want a duration with a unit, like 30m or 1h30m, got 30`,
		`queue.jsonl:11:74: task "h": unknown key "memroy" in limits (did you mean "memory"?)`,
	}
	assertLines(t, got, want)
}

// TestParseProblem checks one mistake at a time.
func TestParseProblem(t *testing.T) {
	tests := []struct {
		name, file, input, want string
	}{
		{"yaml syntax", "q.yaml", "tasks:\n  - id: a\n    prompt: [unclosed\n",
			`q.yaml:2: YAML syntax: did not find expected ',' or ']'`},
		{"unknown top-level key", "q.yaml", "defaults: {}\ntask:\n  - {id: a, repo: /r, prompt: p}\n",
			"q.yaml: the file holds no tasks\n" + `q.yaml:2:1: unknown key "task" (did you mean "tasks"?)`},
		{"empty task list", "q.yaml", "tasks: []\n", `q.yaml:1:8: the file holds no tasks`},
		{"empty file", "q.yaml", "", `q.yaml: the file holds no tasks`},
		{"two documents", "q.yaml", "- {id: a, repo: /r, prompt: p}\n---\n- {id: b, repo: /r, prompt: p}\n",
			`q.yaml:2:1: only one YAML document is allowed (remove the "---")`},
		{"tasks not a list", "q.yaml", "tasks: {id: a}\n", `q.yaml:1:8: tasks: want a list of tasks, got a mapping`},
		{"task not a mapping", "q.yaml", "- just a string\n", `q.yaml:1:3: want a task (a mapping with id, repo, prompt...), got "just a string"`},
		{"string where a mapping is expected", "q.yaml", "- {id: a, repo: /r, prompt: p, limits: 2g}\n",
			`q.yaml:1:40: task "a": limits: want a mapping of memory, disk, commit_size, cpus and pids, got "2g"`},
		{"mapping where a string is expected", "q.yaml", "- {id: a, repo: /r, prompt: {text: p}}\n",
			`q.yaml:1:29: task "a": prompt: want a string, got a mapping`},
		{"duration without unit", "q.yaml", "- {id: a, repo: /r, prompt: p, timeout: 30}\n",
			`q.yaml:1:41: task "a": timeout: want a duration with a unit, like 30m or 1h30m, got 30`},
		{"zero duration", "q.yaml", "- {id: a, repo: /r, prompt: p, check_timeout: 0s}\n",
			`q.yaml:1:47: task "a": check_timeout: must be positive, got 0s`},
		{"negative retries", "q.yaml", "- {id: a, repo: /r, prompt: p, check_retries: -1}\n",
			`q.yaml:1:47: task "a": check_retries: must not be negative, got -1`},
		{"zero budget", "q.yaml", "- {id: a, repo: /r, prompt: p, budget_usd: 0}\n",
			`q.yaml:1:44: task "a": budget_usd: must be positive, got 0`},
		{"infinite budget", "q.yaml", "- {id: a, repo: /r, prompt: p, budget_usd: .inf}\n",
			`q.yaml:1:44: task "a": budget_usd: want a finite number, got .inf`},
		{"too few pids", "q.yaml", "- {id: a, repo: /r, prompt: p, limits: {pids: 4}}\n",
			`q.yaml:1:47: task "a": limits.pids: want at least 8, got 4`},
		{"tiny cpus", "q.yaml", "- {id: a, repo: /r, prompt: p, limits: {cpus: 0.001}}\n",
			`q.yaml:1:47: task "a": limits.cpus: want at least 0.01, got 0.001`},
		{"quoted boolean", "q.yaml", `- {id: a, repo: /r, prompt: p, push: "true"}` + "\n",
			`q.yaml:1:38: task "a": push: want true or false, got "true"`},
		{"empty repo", "q.yaml", `- {id: a, repo: "", prompt: p}` + "\n",
			`q.yaml:1:17: task "a": repo: is empty`},
		{"null prompt is missing", "q.yaml", "- id: a\n  repo: /r\n  prompt:\n",
			`q.yaml:1:3: task "a": missing prompt`},
		{"prompt and prompt_file", "q.yaml", "- {id: a, repo: /r, prompt: p, prompt_file: /dev/null}\n",
			`q.yaml:1:45: task "a": set prompt or prompt_file, not both`},
		{"empty prompt file", "q.yaml", "- {id: a, repo: /r, prompt_file: testdata/empty.md}\n",
			`q.yaml:1:34: task "a": prompt_file: the file is empty`},
		{"duplicate key", "q.yaml", "- id: a\n  repo: /r\n  prompt: p\n  repo: /s\n",
			`q.yaml:4:3: task "a": duplicate key "repo" (first on line 2)`},
		{"duplicate branch", "q.yaml", "- {id: a, repo: /r, prompt: p, branch: x}\n- {id: b, repo: /r, prompt: p, branch: x}\n",
			`q.yaml:2:40: task "b": branch "x" is also the branch of task "a" (line 1)`},
		{"per-task key in defaults", "q.yaml", "defaults: {branch: x}\ntasks: [{id: a, repo: /r, prompt: p}]\n",
			`q.yaml:1:12: "branch" cannot be set in defaults, only on a task`},
		{"secret in defaults env", "q.yaml", "defaults: {env: {KEY: sk-proj-0123456789abcdefghij}}\ntasks: [{id: a, repo: /r, prompt: p}]\n",
			`q.yaml:1:23: defaults.env.KEY: the value looks like an API key (sk-...); env is for non-secret values only, since the agent can read and leak them`},
		{"suggestion from a word", "q.yaml", "- {id: a, repo: /r, prompt: p, retries: 2}\n",
			`q.yaml:1:32: task "a": unknown key "retries" (did you mean "check_retries"?)`},
		{"no suggestion when nothing is close", "q.yaml", "- {id: a, repo: /r, prompt: p, colour: red}\n",
			`q.yaml:1:32: task "a": unknown key "colour"`},
		{"jsonl defaults with other keys", "q.jsonl", `{"defaults": {}, "id": "a"}` + "\n" + `{"id": "b", "repo": "/r", "prompt": "p"}` + "\n",
			`q.jsonl:1:1: the defaults line must hold only the "defaults" key`},
		{"jsonl number too large", "q.jsonl", `{"id": "b", "repo": "/r", "prompt": "p", "max_steps": 99999999999999999999}` + "\n",
			`q.jsonl:1:55: task "b": max_steps: want a whole number, got 99999999999999999999`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := parseProblems(t, tt.file, tt.input)
			assertLines(t, got, strings.Split(tt.want, "\n"))
		})
	}
}
