package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/ptytest"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// eventLine is an event of --events as a reader decodes it.
type eventLine struct {
	Event   string        `json:"event"`
	Task    string        `json:"task"`
	Phase   string        `json:"phase"`
	Step    int           `json:"step"`
	Attempt int           `json:"attempt"`
	CostUSD *float64      `json:"cost_usd"`
	TaskUSD *float64      `json:"task_cost_usd"`
	Tokens  *tasks.Tokens `json:"tokens"`
	Result  *tasks.Result `json:"result"`
	Tasks   int           `json:"tasks"`
	Summary *struct {
		Results []tasks.Result
	} `json:"summary"`
	Report string `json:"report"`
}

// With --events, stdout is JSON Lines and nothing else: the run's start,
// each task's start, phases, steps with their cost, and end with its
// result (the line results.jsonl holds), then the run's end.
func TestRunEvents(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"heading": {edit("README.md", "Helo", "Hello"), complete("Fixed.")},
		"never":   {complete("Nothing to do.")},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s, budget_usd: 0.5}
tasks:
  - {id: good, prompt: "Fix the heading.", check: "grep -q Hello README.md"}
  - {id: bad, prompt: "This will never pass.", check: "false"}
`, repo, dockertest.Busybox(t)))
	out := filepath.Join(t.TempDir(), "out")
	res, pid := runRunner(t, srv, "run", file, "--out", out, "--events")
	if res.code != cli.ExitFailure {
		t.Fatalf("runner run --events: %s", res)
	}
	scripts.left(t)
	noLeftovers(t, pid)
	var events []eventLine
	perTask := map[string][]string{}
	for i, line := range strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n") {
		var e eventLine
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Event == "" {
			t.Fatalf("stdout line %d is not an event: %q (%v)", i+1, line, err)
		}
		events = append(events, e)
		name := e.Event
		if e.Event == "phase" {
			name = e.Phase
			if e.Step > 0 {
				name += fmt.Sprint(" ", e.Step)
			}
		}
		if e.Event == "step" {
			name = fmt.Sprint("step done ", e.Step)
		}
		if e.Task != "" {
			perTask[e.Task] = append(perTask[e.Task], name)
		}
	}
	want := map[string]string{
		"good": "task_started, cloning, sandbox, step 1, step done 1, step 2, step done 2, check, committing, task_finished",
		"bad":  "task_started, cloning, sandbox, step 1, step done 1, check, committing, task_finished",
	}
	for id, w := range want {
		if got := strings.Join(perTask[id], ", "); got != w {
			t.Errorf("events of %s:\n  %s\nwant\n  %s", id, got, w)
		}
	}
	first, last := events[0], events[len(events)-1]
	if first.Event != "run_started" || first.Tasks != 2 {
		t.Errorf("first event: %+v", first)
	}
	if last.Event != "run_finished" || last.Summary == nil || len(last.Summary.Results) != 2 ||
		last.Report != filepath.Join(out, "report", "index.html") {
		t.Errorf("last event: %+v", last)
	}
	recorded := byID(readResultLines(t, out))
	for _, e := range events {
		switch e.Event {
		case "task_finished":
			got, _ := json.Marshal(e.Result)
			want, _ := json.Marshal(recorded[e.Task])
			if string(got) != string(want) {
				t.Errorf("task_finished of %s carries\n%s\nresults.jsonl holds\n%s", e.Task, got, want)
			}
		case "step":
			if e.CostUSD == nil || *e.CostUSD <= 0 || e.Tokens == nil || e.Tokens.In == 0 || e.TaskUSD == nil {
				t.Errorf("a step without its cost: %+v", e)
			}
		}
	}
	var lastSpent float64
	for _, e := range events {
		if e.Event == "step" && e.Task == "good" {
			lastSpent = *e.TaskUSD
		}
	}
	if lastSpent != recorded["good"].CostUSD {
		t.Errorf("the last step of good says the task spent $%v; the result says $%v", lastSpent, recorded["good"].CostUSD)
	}
	if strings.Contains(res.stdout, "TASK") || !strings.Contains(res.stderr, "+ good: succeeded") {
		t.Errorf("the summary table went to stdout, or progress missed stderr:\n%s", res)
	}
	if res := runBinary(t, "run", file, "--events", "--json"); res.code != cli.ExitUsage || !strings.Contains(res.stderr, "choose one") {
		t.Errorf("--events with --json: %s", res)
	}
}

// ownControls are the controls of the live board.
var ownControls = regexp.MustCompile(`\x1b\[\d*[AKJ]`)

// On a terminal the progress is a board redrawn in place: a line per
// running task with its phase and spend, and the totals; when the run is
// over only the lines of the finished tasks are left, the untrusted text
// in them escaped. NO_COLOR leaves no colour; a narrow terminal, no line
// of the board wider than it.
func TestLiveProgressOnATerminal(t *testing.T) {
	repo, _ := sourceRepo(t, map[string]string{"README.md": "# Helo\n"})
	release := make(chan struct{})
	held := fakellm.Func(func(fakellm.Request) fakellm.Turn {
		<-release
		return complete("Waited.").WithUsage(100, 10, 0)
	})
	srv, scripts := modelServer(t, map[string][]fakellm.Turn{
		"wait":    {held},
		"heading": {edit("README.md", "Helo", "Hello"), complete("Fixed.")},
		"refused": {fakellm.APIError(400, "invalid_request_error", "", "bad request "+hostileText)},
	})
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s, budget_usd: 0.5}
tasks:
  - {id: slow, prompt: "Please wait."}
  - {id: quick, prompt: "Fix the heading."}
  - {id: refused, prompt: "This one is refused."}
`, repo, dockertest.Busybox(t)))
	tty, ptmx := ptytest.Open(t)
	const width = 60
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 20, Col: width}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := runnerCmd(t, srv, "run", file, "--out", out, "-j", "2", "--run-budget", "2")
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	tr := readTranscript(ptmx)
	// The board shows the held task at its first step, with the run's
	// totals, before it is let go.
	waitUntil(t, 3*time.Minute, "the board with the held task", func() bool {
		s := tr.String()
		return strings.Contains(s, "  slow ") && strings.Contains(s, "step 1") && strings.Contains(s, "of $2.00")
	})
	// Meanwhile the report is refreshed as tasks end: the quick task
	// finished, the held one is running; a read never finds half a page.
	index := filepath.Join(out, "report", "index.html")
	waitUntil(t, 3*time.Minute, "the report with quick finished and slow running", func() bool {
		data, err := os.ReadFile(index)
		if err != nil {
			return false
		}
		if !strings.HasSuffix(string(data), "</html>\n") {
			t.Fatalf("the report was read half written:\n%s", data)
		}
		rows := reportRows(t, data)
		return rows["quick"].Status == "succeeded" && rows["slow"].Status == "running" && rows["quick"].Page != ""
	})
	close(release)
	if err := waitExit(cmd, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	<-tr.done
	scripts.left(t)
	text := tr.String()
	if cmd.ProcessState.ExitCode() != cli.ExitFailure {
		t.Fatalf("runner run: exit %d\n%s\n%s", cmd.ProcessState.ExitCode(), text, stdout.String())
	}
	if sgr := regexp.MustCompile(`\x1b\[[0-9;]*m`); sgr.MatchString(text) {
		t.Errorf("colour with NO_COLOR set: %q", sgr.FindString(text))
	}
	noRawControls(t, "the terminal, but for the board's controls", ownControls.ReplaceAllString(text, ""))
	screen := ptytest.Render(text, width)
	if len(screen.Errors) > 0 {
		t.Errorf("controls the board should not use: %v", screen.Errors)
	}
	lines := screen.Lines()
	var finished []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+ ") || strings.HasPrefix(l, "x "):
			finished = append(finished, l)
		case strings.Contains(l, " running ·") || strings.Contains(l, "step "):
			t.Errorf("the board is left on screen: %q", l)
		}
	}
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"+ slow: succeeded", "+ quick: succeeded", "x refused: model_error",
		`bad request \x1b]0;pwned\a\x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\u202eevil\nrunner: all tasks succeeded`} {
		if !strings.Contains(strings.ReplaceAll(joined, "\n", ""), want) {
			t.Errorf("the screen lacks %q:\n%s", want, joined)
		}
	}
	if len(finished) != 3 {
		t.Errorf("%d lines of finished tasks, want 3:\n%s", len(finished), joined)
	}
	// Each frame of the board fits the width: no line drawn between two
	// controls is wider.
	for _, frame := range regexp.MustCompile(`\r([^\r\n]*)\x1b\[K`).FindAllStringSubmatch(text, -1) {
		if n := len([]rune(frame[1])); n >= width && !strings.HasPrefix(frame[1], "+ ") && !strings.HasPrefix(frame[1], "x ") {
			t.Errorf("a line of the board is %d columns wide on a terminal of %d: %q", n, width, frame[1])
		}
	}
	if !strings.Contains(stdout.String(), "3 task(s): 2 succeeded, 1 not") {
		t.Errorf("the summary:\n%s", stdout.String())
	}
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if rows := reportRows(t, data); rows["slow"].Status != "succeeded" || rows["refused"].Status != "model_error" {
		t.Errorf("the report after the run: %+v", rows)
	}
}

// reportRows reads the rows of the report's index from the JSON it embeds.
func reportRows(t *testing.T, index []byte) map[string]runreport.Row {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="runner-data">(.*?)</script>`).FindSubmatch(index)
	if m == nil {
		t.Fatalf("no data in the index:\n%s", index)
	}
	var data struct{ Rows []runreport.Row }
	if err := json.Unmarshal(m[1], &data); err != nil {
		t.Fatalf("the index's data: %v", err)
	}
	rows := map[string]runreport.Row{}
	for _, r := range data.Rows {
		rows[r.ID] = r
	}
	return rows
}
