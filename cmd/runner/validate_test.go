package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/tasks"
)

const (
	exampleYAML  = "../../tasks/testdata/example.yaml"
	exampleJSONL = "../../tasks/testdata/example.jsonl"
	mistakesYAML = "testdata/mistakes.yaml"
)

// mistakes are the problems of testdata/mistakes.yaml, one per line of
// output, in file order.
var mistakes = []string{
	mistakesYAML + `:4:12: defaults.timeout: bad duration "forever"`,
	mistakesYAML + `:6:5: task "typo-in-key": missing prompt`,
	mistakesYAML + `:7:5: task "typo-in-key": unknown key "promt" (did you mean "prompt"?)`,
	mistakesYAML + `:8:9: id "bad network" has the character ' '`,
	mistakesYAML + `:10:14: task "bad network": network: want "none", "bridge" or a mapping with allow: [host names], got "internet"`,
	mistakesYAML + `:11:5: task "no-prompt": missing prompt`,
	mistakesYAML + `:15:21: task "secret-env": env.GITHUB_TOKEN: the value looks like a GitHub token`,
	mistakesYAML + `:19:15: task "bad-memory": limits.memory: memory size "lots"`,
	mistakesYAML + `:20:9: task "typo-in-key": duplicate id "typo-in-key" (first used on line 6)`,
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string // each line starts with its entry
		wantStderr []string // each line starts with its entry
	}{
		{
			name:     "valid YAML",
			args:     []string{exampleYAML},
			wantCode: cli.ExitOK,
			wantStdout: []string{exampleYAML + ": 3 tasks (yaml); 2 repos; model gpt-4.1-mini; image runner-sandbox:latest; " +
				"budgets $0.50, $2.00; timeouts 30m, 1h"},
		},
		{
			name:     "valid files of both formats",
			args:     []string{exampleYAML, exampleJSONL},
			wantCode: cli.ExitOK,
			wantStdout: []string{
				exampleYAML + ": 3 tasks (yaml)",
				exampleJSONL + ": 3 tasks (jsonl); repo git@github.com:example/cli.git; model gpt-4.1-mini; " +
					"image run default; budgets run default, $1.25; timeout 20m",
			},
		},
		{
			name:       "every mistake listed",
			args:       []string{mistakesYAML},
			wantCode:   cli.ExitUsage,
			wantStderr: append(mistakes, "runner: 9 problems in 1 of 1 task file"),
		},
		{
			name:       "valid and invalid files",
			args:       []string{exampleYAML, mistakesYAML},
			wantCode:   cli.ExitUsage,
			wantStdout: []string{exampleYAML + ": 3 tasks (yaml)"},
			wantStderr: append(mistakes, "runner: 9 problems in 1 of 2 task files"),
		},
		{
			name:       "missing file",
			args:       []string{"testdata/absent.yaml"},
			wantCode:   cli.ExitUsage,
			wantStderr: []string{"testdata/absent.yaml: read task file: open testdata/absent.yaml: no such file", "runner: 1 problem in 1 of 1 task file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runMain(t, append([]string{"validate"}, tt.args...)...)
			if res.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d\n%s", res.code, tt.wantCode, res)
			}
			checkLines(t, "stdout", res.stdout, tt.wantStdout)
			checkLines(t, "stderr", res.stderr, tt.wantStderr)
		})
	}
}

// checkLines requires the lines of got to start with the entries of want,
// one for one.
func checkLines(t *testing.T, name, got string, want []string) {
	t.Helper()
	gotLines := nonEmptyLines(got)
	if len(gotLines) != len(want) {
		t.Errorf("%s has %d lines, want %d:\n%s", name, len(gotLines), len(want), got)
		return
	}
	for i, w := range want {
		if !strings.HasPrefix(gotLines[i], w) {
			t.Errorf("%s line %d:\n got %s\nwant %s…", name, i+1, gotLines[i], w)
		}
	}
}

func TestValidateJSON(t *testing.T) {
	res := runMain(t, "--json", "validate", exampleJSONL, mistakesYAML)
	if res.code != cli.ExitUsage {
		t.Fatalf("exit code %d, want %d\n%s", res.code, cli.ExitUsage, res)
	}
	var got struct {
		OK    bool `json:"ok"`
		Files []struct {
			File     string `json:"file"`
			OK       bool   `json:"ok"`
			Format   string `json:"format"`
			Tasks    []taskView
			Problems []struct {
				File    string `json:"file"`
				Line    int    `json:"line"`
				Col     int    `json:"col"`
				Task    string `json:"task"`
				Field   string `json:"field"`
				Message string `json:"message"`
			} `json:"problems"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res.stdout)
	}
	if got.OK || len(got.Files) != 2 {
		t.Fatalf("ok=%v with %d files, want false with 2", got.OK, len(got.Files))
	}
	valid, invalid := got.Files[0], got.Files[1]
	if !valid.OK || valid.Format != "jsonl" || len(valid.Problems) != 0 {
		t.Errorf("valid file: ok=%v format=%q problems=%v", valid.OK, valid.Format, valid.Problems)
	}
	var ids []string
	for _, task := range valid.Tasks {
		ids = append(ids, task.ID)
	}
	if strings.Join(ids, ",") != "issue-101,issue-102,issue-103" {
		t.Errorf("tasks %v, want issue-101, issue-102, issue-103", ids)
	}
	if last := valid.Tasks[2]; last.Branch != "backport/issue-103" || !last.PushOnSuccess || last.Timeout != "20m" || last.Line != 5 {
		t.Errorf("issue-103 = %+v, want branch backport/issue-103, pushed, timeout 20m, line 5", last)
	}
	if invalid.OK || len(invalid.Problems) != len(mistakes) {
		t.Fatalf("invalid file: ok=%v with %d problems, want %d", invalid.OK, len(invalid.Problems), len(mistakes))
	}
	p := invalid.Problems[2]
	if p.Line != 7 || p.Col != 5 || p.Task != "typo-in-key" || p.Field != "promt" || !strings.HasPrefix(p.Message, `unknown key "promt"`) {
		t.Errorf("third problem = %+v, want line 7 col 5 of typo-in-key, field promt", p)
	}
	if strings.Contains(res.stderr, `"problems"`) || !strings.Contains(res.stderr, "runner: 9 problems") {
		t.Errorf("stderr should hold the error line only:\n%s", res.stderr)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name  string
		queue tasks.Queue
		want  string
	}{
		{
			name: "one task, nothing set",
			queue: tasks.Queue{Format: tasks.FormatYAML, Tasks: []tasks.Task{
				{ID: "a", Repo: "/src/app"},
			}},
			want: "1 task (yaml); repo /src/app; model run default; image run default; budget run default; timeout run default",
		},
		{
			name: "values counted",
			queue: tasks.Queue{Format: tasks.FormatJSONL, Tasks: []tasks.Task{
				{ID: "a", Repo: "https://example.com/app.git", Model: "m1", BudgetUSD: 1, Timeout: 90 * time.Minute},
				{ID: "b", Repo: "https://example.com/app.git", Model: "m2", BudgetUSD: 1, Timeout: 90 * time.Minute},
				{ID: "c", Repo: "https://example.com/app.git", Model: "m3", Timeout: 45 * time.Second},
				{ID: "d", Repo: "https://example.com/app.git", Model: "m4"},
				{ID: "e", Repo: "https://example.com/app.git", Model: "m4"},
			}},
			want: "5 tasks (jsonl); repo https://example.com/app.git; models m1, m2, m3, 1 more; image run default; " +
				"budgets $1.00, run default; timeouts 1h30m, 45s, run default",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := queueSummary(&tt.queue); got != tt.want {
				t.Errorf("summary:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	secret := &tasks.Queue{Tasks: []tasks.Task{{ID: "a", Repo: "https://user:s3cret@example.com/app.git"}}}
	if got := queueSummary(secret); strings.Contains(got, "s3cret") || !strings.Contains(got, "example.com/app.git") {
		t.Errorf("summary of a repo with a password: %s", got)
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{30 * time.Minute, "30m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 30*time.Second, "1h0m30s"},
		{45 * time.Second, "45s"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tt := range tests {
		got := shortDuration(tt.in)
		if got != tt.want {
			t.Errorf("shortDuration(%s) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != tt.in {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", got, back, err, tt.in)
		}
	}
}
