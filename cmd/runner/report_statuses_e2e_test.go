package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/runner-dev/runner/internal/browsertest"
	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/fakellm"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// statusTask is one task of the every-status run: how it is written in the
// task file, the model's script for it, and how it must end.
type statusTask struct {
	id     string
	yaml   string // the task's keys beyond id and prompt, as a flow mapping's entries
	turns  []fakellm.Turn
	status tasks.Status
	// unused turns may be left when the task ends by running out.
	unused bool
}

// taskRunsCommand reports whether the sandbox of task id, owned by the
// runner process pid, runs a process whose command line holds what.
func taskRunsCommand(t *testing.T, pid int, id, what string) bool {
	t.Helper()
	name := containerOf(t, pid, id)
	if name == "" {
		return false
	}
	top, _ := exec.Command("docker", "top", name).CombinedOutput()
	return strings.Contains(string(top), what)
}

// A real run of 30 tasks ends them with every status a run can give: the
// scripted model and the agent's commands bring each about, the engine
// kills one sandbox from outside and a SIGINT stops the last task. The
// report then shows every status in its counts and its table, filters on
// each, and opens a page of each with its reason, diff and timeline.
func TestReportOfEveryStatus(t *testing.T) {
	repo, head := sourceRepo(t, map[string]string{"README.md": "# Helo\n", "a.txt": "a\n"})
	cmd := func(c string) fakellm.Turn {
		return fakellm.ToolCall("run_command", fmt.Sprintf(`{"command":%q,"timeout":1800}`, c))
	}
	write := func(path string) fakellm.Turn {
		return fakellm.ToolCall("write_file", fmt.Sprintf(`{"path":%q,"content":"work\n"}`, path))
	}
	var all []statusTask
	add := func(status tasks.Status, n int, yaml string, turns func(id string) []fakellm.Turn) {
		for i := range n {
			id := fmt.Sprintf("%s-%d", strings.ReplaceAll(string(status), "_", "-"), i+1)
			all = append(all, statusTask{id: id, yaml: yaml, turns: turns(id), status: status,
				unused: status == tasks.StatusBudgetExhausted || status == tasks.StatusTimeLimit})
		}
	}
	add(tasks.StatusSucceeded, 9, "check: grep -q Hello README.md", func(id string) []fakellm.Turn {
		return []fakellm.Turn{edit("README.md", "Helo", "Hello"), complete("Fixed the heading in " + id + ".")}
	})
	add(tasks.StatusCheckFailed, 3, "check: test -f never-there, check_retries: 0", func(id string) []fakellm.Turn {
		return []fakellm.Turn{write(id + ".txt"), complete("Wrote " + id + ".txt.")}
	})
	// A cap that pays for a call or two of the run's 1,000-token bound.
	add(tasks.StatusBudgetExhausted, 3, "budget_usd: 0.0015", func(id string) []fakellm.Turn {
		var turns []fakellm.Turn
		for i := range 8 {
			turns = append(turns, write(fmt.Sprintf("%s-%d.txt", id, i)))
		}
		return turns
	})
	add(tasks.StatusStepLimit, 3, "max_steps: 1", func(id string) []fakellm.Turn {
		return []fakellm.Turn{write(id + ".txt")}
	})
	// The deadline counts from the task's start: on a loaded machine it
	// may pass before the model is first asked.
	add(tasks.StatusTimeLimit, 2, "timeout: 8s", func(id string) []fakellm.Turn {
		return []fakellm.Turn{cmd("echo work > " + id + ".txt && sleep 30")}
	})
	add(tasks.StatusModelError, 3, "", func(id string) []fakellm.Turn {
		return []fakellm.Turn{write(id + ".txt"), fakellm.Unauthorized()}
	})
	add(tasks.StatusPolicyViolation, 2, "", func(id string) []fakellm.Turn {
		return []fakellm.Turn{cmd("mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml"), complete("Added CI.")}
	})
	// A hard link in the workspace is refused at the copy-out: an error.
	add(tasks.StatusError, 2, "", func(id string) []fakellm.Turn {
		return []fakellm.Turn{cmd("ln a.txt hard.txt"), complete("Linked.")}
	})
	// A setup that fails ends the task before any model call.
	add(tasks.StatusSetupFailed, 1, "setup: echo preparing && exit 3", func(id string) []fakellm.Turn { return nil })
	add(tasks.StatusSandboxError, 1, "", func(id string) []fakellm.Turn { return []fakellm.Turn{cmd("sleep 301")} })
	add(tasks.StatusInterrupted, 1, "", func(id string) []fakellm.Turn { return []fakellm.Turn{cmd("sleep 601")} })
	if len(all) != 30 {
		t.Fatalf("%d tasks, want 30", len(all))
	}
	// The slow ones first, so that the others run meanwhile.
	slices.SortStableFunc(all, func(a, b statusTask) int {
		slow := func(s statusTask) bool {
			return s.status == tasks.StatusInterrupted || s.status == tasks.StatusSandboxError || s.status == tasks.StatusTimeLimit
		}
		switch {
		case slow(a) && !slow(b):
			return -1
		case slow(b) && !slow(a):
			return 1
		}
		return 0
	})

	scripts := map[string][]fakellm.Turn{}
	var file strings.Builder
	fmt.Fprintf(&file, "defaults: {image: %s, repo: %s}\ntasks:\n", dockertest.Busybox(t), repo)
	for _, s := range all {
		scripts["["+s.id+"]"] = s.turns
		fmt.Fprintf(&file, "  - {id: %s, prompt: \"Task [%s].\"", s.id, s.id)
		if s.yaml != "" {
			fmt.Fprintf(&file, ", %s", s.yaml)
		}
		file.WriteString("}\n")
	}
	srv, script := modelServer(t, scripts)
	out := filepath.Join(t.TempDir(), "out")
	runnerBinary(t) // built before the run's clock starts
	begin := time.Now()
	run := runnerCmd(t, srv, "run", writeTaskFile(t, file.String()), "--out", out, "-j", "8", "--max-completion-tokens", "1000")
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	pid := run.Process.Pid
	done := make(chan struct{})
	go func() { run.Wait(); close(done) }()
	defer func() { // a test that fails midway leaves no run behind
		run.Process.Kill()
		<-done
	}()
	// The engine loses one sandbox: killed from outside mid-command.
	waitUntil(t, 3*time.Minute, "the sandbox-error task's command", func() bool { return taskRunsCommand(t, pid, "sandbox-error-1", "sleep 301") })
	if out, err := exec.Command("docker", "kill", "--signal", "KILL", containerOf(t, pid, "sandbox-error-1")).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v: %s", err, out)
	}
	// The run is stopped once every other task has ended.
	waitUntil(t, 4*time.Minute, "29 results", func() bool {
		return fileLines(filepath.Join(out, tasks.ResultsFile)) == 29 && taskRunsCommand(t, pid, "interrupted-1", "sleep 601")
	})
	run.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("runner still running two minutes after SIGINT:\n%s", stderr.String())
	}
	t.Logf("30 tasks ran in %s", time.Since(begin).Round(time.Second))
	if code := run.ProcessState.ExitCode(); code != cli.ExitInterrupted {
		t.Fatalf("runner run exited %d, want %d (interrupted):\n%s\n%s", code, cli.ExitInterrupted, stdout.String(), stderr.String())
	}

	results := byID(readResultLines(t, out))
	want := map[tasks.Status][]string{}
	for _, s := range all {
		r := results[s.id]
		if r.Status != s.status {
			t.Errorf("%s ended %s (%s), want %s", s.id, r.Status, r.Error, s.status)
		}
		want[s.status] = append(want[s.status], s.id)
	}
	if t.Failed() {
		t.FailNow()
	}
	script.mu.Lock()
	for _, s := range all {
		if left := script.scripts["["+s.id+"]"]; len(left) > 0 && !s.unused {
			t.Errorf("the script of %s has %d turns left", s.id, len(left))
		}
	}
	script.mu.Unlock()
	for _, id := range []string{"succeeded-1", "check-failed-1", "budget-exhausted-1", "step-limit-1", "model-error-1"} {
		if results[id].Commit == "" {
			t.Errorf("%s committed nothing; its work should be on its branch", id)
		} else if got := gitCLI(t, repo, "rev-parse", results[id].Branch); got != results[id].Commit {
			t.Errorf("%s: branch %s is at %s, the result names %s", id, results[id].Branch, got, results[id].Commit)
		}
	}
	for _, id := range []string{"policy-violation-1", "error-1", "sandbox-error-1", "interrupted-1"} {
		if results[id].Commit != "" {
			t.Errorf("%s committed %s", id, results[id].Commit)
		}
	}
	userRepoUnchanged(t, repo, head)
	noLeftovers(t, pid)
	checkEveryStatusInBrowser(t, out, results, want)
}

// checkEveryStatusInBrowser opens the report of the every-status run: each
// status is counted and listed, its filter shows its tasks and no other,
// and a page of each shows why it ended, its diff and its timeline.
func checkEveryStatusInBrowser(t *testing.T, out string, results map[string]tasks.Result, want map[tasks.Status][]string) {
	b := browsertest.New(t, 1200, 900)
	b.Watch(t)
	index := "file://" + filepath.Join(out, "report", "index.html")
	open := func() {
		browsertest.Do(t, b, "open the index", chromedp.Navigate(index), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
	}
	open()
	if n := eval[int](t, b, `document.querySelectorAll('#task-rows tr').length`); n != 30 {
		t.Errorf("the index lists %d tasks, want 30", n)
	}
	screenshot(t, b, "every-status-index.png")
	statuses := make([]string, 0, len(want))
	for s := range want {
		statuses = append(statuses, string(s))
	}
	sort.Strings(statuses)
	for _, status := range statuses {
		ids := slices.Sorted(slices.Values(want[tasks.Status(status)]))
		button := fmt.Sprintf(`button.status[data-status=%q]`, status)
		if got := eval[string](t, b, `document.querySelector('`+button+`')?.textContent ?? ''`); got != fmt.Sprintf("%s %d", status, len(ids)) {
			t.Errorf("the count of %s reads %q, want %q", status, got, fmt.Sprintf("%s %d", status, len(ids)))
			continue
		}
		browsertest.Do(t, b, "filter on "+status, chromedp.Click(chromedp.CSS(button)))
		rows := eval[[][]string](t, b, `[...document.querySelectorAll('#task-rows tr')].map(tr =>
			[tr.querySelector('td.id').textContent, tr.querySelector('.status').textContent])`)
		var got []string
		for _, r := range rows {
			got = append(got, r[0])
			if r[1] != status {
				t.Errorf("filtered on %s, the row of %s says %s", status, r[0], r[1])
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			t.Errorf("filtered on %s: %v, want %v", status, got, ids)
		}
		if status == string(tasks.StatusBudgetExhausted) {
			// Their Budget column: the share of the cap each spent.
			shares := eval[[]string](t, b, `[...document.querySelectorAll('#task-rows td.share')].map(td => td.textContent)`)
			for i, share := range shares {
				if want := fmt.Sprintf("%d%%", int(math.Round(100*results[rows[i][0]].BudgetShare))); len(shares) != len(rows) || share != want {
					t.Errorf("the Budget column of the budget_exhausted rows reads %q, want %s at row %d", shares, want, i)
				}
			}
		}
		// A click opens the first task's page.
		id := ids[0]
		browsertest.Run(t, b, "open "+id, chromedp.WaitEvent(page.LoadEventFired, nil,
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`#task-rows a[href="tasks/%s.html"]`, id)))))
		text := eval[string](t, b, `document.body.innerText`)
		r := results[id]
		reason, _, _ := strings.Cut(r.Error, "\n")
		if r.Status == tasks.StatusSucceeded {
			reason = r.Summary
		}
		explain := (&runreport.Attempt{Result: r}).Explain()
		for _, want := range []string{id, "Attempt 1: " + status, explain, reason, "Diff", "Timeline"} {
			if !strings.Contains(text, want) {
				t.Errorf("the page of %s (%s) does not show %q", id, status, want)
			}
		}
		if r.Commit != "" {
			if n := eval[int](t, b, `document.querySelectorAll('details.file').length`); n == 0 {
				t.Errorf("the page of %s shows no file of its diff", id)
			}
		} else if !strings.Contains(text, "Nothing was committed.") {
			t.Errorf("the page of %s, which committed nothing, does not say so", id)
		}
		if status == string(tasks.StatusSetupFailed) && !strings.Contains(text, "Setup echo preparing && exit 3") {
			t.Errorf("the page of %s does not show its setup's commands in its timeline:\n%s", id, text)
		}
		if status == string(tasks.StatusSetupFailed) && !strings.Contains(text, "preparing\n") {
			t.Errorf("the page of %s does not show its setup's output:\n%s", id, text)
		}
		if n := eval[int](t, b, `document.querySelectorAll('ol.timeline > li').length`); n == 0 {
			t.Errorf("the page of %s has an empty timeline", id)
		}
		if status == string(tasks.StatusTimeLimit) {
			screenshot(t, b, "every-status-task.png")
		}
		open()
	}
	pageClean(t, b)
}

// containerOf names the running sandbox of task id owned by the runner
// process pid, or "".
func containerOf(t *testing.T, pid int, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "--filter", fmt.Sprintf("label=dev.runner.owner.pid=%d", pid),
		"--filter", "label=dev.runner.task="+id, "--format", "{{.Names}}").CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v: %s", err, out)
	}
	name, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return name
}

// fileLines counts the lines of a file, 0 when it cannot be read.
func fileLines(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte("\n"))
}
