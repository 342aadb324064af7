package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/runner-dev/runner/internal/browsertest"
	"github.com/runner-dev/runner/internal/cli"
	runreport "github.com/runner-dev/runner/internal/report"
	"github.com/runner-dev/runner/tasks"
)

// screenshot writes a PNG of the tab's viewport to the test's artifact
// directory (kept with go test -artifacts) and returns it.
func screenshot(t *testing.T, b *browsertest.Browser, name string) []byte {
	t.Helper()
	shot := browsertest.Run(t, b, "screenshot", chromedp.CaptureScreenshot())
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return shot
}

func eval[T any](t *testing.T, b *browsertest.Browser, js string) T {
	t.Helper()
	return browsertest.Run(t, b, js, chromedp.Evaluate[T](js))
}

// pageClean fails when a page of the report logged to the console, threw,
// opened a dialog or asked for anything but a file.
func pageClean(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	if c := b.Console(); len(c) > 0 {
		t.Errorf("the console got messages:\n%s", strings.Join(c, "\n"))
	}
	if d := b.Dialogs(); len(d) > 0 {
		t.Errorf("dialogs opened: %v", d)
	}
	for _, u := range b.Requests() {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("a request left the report: %s", u)
		}
	}
}

// noInjectedElements fails when the page holds an element that only the
// hostile texts could have made.
const noInjectedElements = `document.querySelectorAll('img, svg, iframe, object, embed, b, [onerror], [onload], [onmouseover]').length`

// checkReportInBrowser opens the run's report in Chromium: the index
// loads with no console message, sorts and filters, a click opens a task,
// whose page shows the diff and the timeline; the hostile texts stay text.
func checkReportInBrowser(t *testing.T, r *reportRun) {
	t.Run("browser", func(t *testing.T) {
		b := browsertest.New(t, 1100, 760)
		b.Watch(t)
		index := "file://" + filepath.Join(r.out, "report", "index.html")
		browsertest.Do(t, b, "open the index", chromedp.Navigate(index),
			chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
		if n := eval[int](t, b, `document.querySelectorAll('#task-rows tr').length`); n != 5 {
			t.Errorf("the index lists %d tasks, want 5", n)
		}
		if n := eval[int](t, b, `document.scripts.length`); n != 2 {
			t.Errorf("the index has %d scripts, want its data and its own", n)
		}
		// Filter by status with its button, then by repository, then sort.
		browsertest.Do(t, b, "filter", chromedp.Click(chromedp.CSS(`button[data-status="check_failed"]`)))
		if ids := eval[[]string](t, b, `[...document.querySelectorAll('#task-rows tr td.id')].map(td => td.textContent)`); len(ids) != 1 || ids[0] != "hostile" {
			t.Errorf("filtered on check_failed: %v", ids)
		}
		browsertest.Do(t, b, "unfilter", chromedp.Click(chromedp.CSS(`button[data-status="check_failed"]`)))
		repo := eval[int](t, b, fmt.Sprintf(`(() => { const s = document.getElementById('f-repo'); s.value = %q;
			s.dispatchEvent(new Event('input')); const n = document.querySelectorAll('#task-rows tr').length;
			s.value = ''; s.dispatchEvent(new Event('input')); return n })()`, r.repoB))
		if repo != 1 {
			t.Errorf("filtered on %s: %d rows, want 1", r.repoB, repo)
		}
		browsertest.Do(t, b, "sort by cost", chromedp.Click(chromedp.CSS(`th[data-key="cost"] button`)))
		first := eval[string](t, b, `document.querySelector('#task-rows tr td.id').textContent`)
		costliest := ""
		for id, res := range r.results {
			if costliest == "" || res.CostUSD > r.results[costliest].CostUSD {
				costliest = id
			}
		}
		if first != costliest {
			t.Errorf("sorted by cost, %s comes first; the most expensive is %s", first, costliest)
		}
		if why := eval[string](t, b, `[...document.querySelectorAll('#task-rows tr')].find(tr => tr.textContent.startsWith('broken')).querySelector('td.why').textContent`); !strings.Contains(why, "Incorrect API key") {
			t.Errorf("the broken task's row says %q", why)
		}
		shot := screenshot(t, b, "report-index.png")
		if os.Getenv("RUNNER_UPDATE_SCREENSHOTS") == "1" {
			dst := filepath.Join(repoRoot(t), "docs", "report.png")
			os.MkdirAll(filepath.Dir(dst), 0o755)
			if err := os.WriteFile(dst, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("updated %s", dst)
		}

		// A click on a task opens its page.
		browsertest.Run(t, b, "open the hostile task", chromedp.WaitEvent(page.LoadEventFired, nil,
			chromedp.Click(chromedp.CSS(`#task-rows a[href="tasks/hostile.html"]`))))
		if loc := browsertest.Run(t, b, "location", chromedp.Location()); !strings.HasSuffix(loc, "/report/tasks/hostile.html") {
			t.Fatalf("the click led to %s", loc)
		}
		text := eval[string](t, b, `document.body.innerText`)
		for _, want := range []string{evilFile, "made", evilOutput, evilSummary, evilBranch + " at " + r.results["hostile"].Commit,
			evilQuestion, "refused by the policy", "Check", "test -f never-there", "exit 1", "Do the hostile <b onmouseover=alert(5)>thing</b>."} {
			if !strings.Contains(text, want) {
				t.Errorf("the task page does not show %q", want)
			}
		}
		files := eval[[]string](t, b, `[...document.querySelectorAll('details.file > summary')].map(s => s.textContent)`)
		if len(files) != 1 || !strings.HasPrefix(files[0], evilFile+" added") {
			t.Errorf("the diff lists %q", files)
		}
		if n := eval[int](t, b, `document.querySelectorAll('ol.timeline > li.k-step').length`); n != 5 {
			t.Errorf("the timeline has %d steps, want 5", n)
		}
		if n := eval[int](t, b, `document.querySelectorAll('.call.blocked').length`); n != 1 {
			t.Errorf("%d refused calls shown, want 1", n)
		}
		if n := eval[int](t, b, noInjectedElements+` + document.scripts.length`); n != 0 {
			t.Errorf("the task page holds %d injected element(s) or scripts", n)
		}
		screenshot(t, b, "report-task.png")

		// A task page of another kind: a retry, and a diff of one line.
		browsertest.Do(t, b, "open fix-heading", chromedp.Navigate("file://"+filepath.Join(r.out, "report", "tasks", "fix-heading.html")))
		text = eval[string](t, b, `document.body.innerText`)
		for _, want := range []string{"Retry of step 1", "-# Helo", "+# Hello", "Fixed the heading."} {
			if !strings.Contains(text, want) {
				t.Errorf("fix-heading's page does not show %q", want)
			}
		}
		browsertest.Do(t, b, "back to the index", chromedp.Navigate(index), chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
		if n := eval[int](t, b, noInjectedElements); n != 0 {
			t.Errorf("the index holds %d injected element(s)", n)
		}
		pageClean(t, b)
	})
}

// checkThousandTasks: the report of 1,000 tasks keeps its index small,
// each task on its own page, and the index loads, filters and sorts at
// once in the browser.
func checkThousandTasks(t *testing.T, r *reportRun) {
	t.Run("1000 tasks", func(t *testing.T) {
		const n = 1000
		out := filepath.Join(t.TempDir(), "out")
		os.MkdirAll(filepath.Join(out, "trajectories"), 0o755)
		ids := make([]string, 0, len(r.results))
		for id := range r.results {
			ids = append(ids, id)
		}
		var lines bytes.Buffer
		var queue []string
		for i := range n {
			res := r.results[ids[i%len(ids)]]
			src := runreport.TrajectoryPath(r.out, res.ID, res.Attempt)
			res.ID = fmt.Sprintf("task-%04d", i)
			copyFile(t, src, runreport.TrajectoryPath(out, res.ID, res.Attempt))
			b, _ := json.Marshal(res)
			lines.Write(append(b, '\n'))
			queue = append(queue, res.ID)
		}
		os.WriteFile(filepath.Join(out, tasks.ResultsFile), lines.Bytes(), 0o644)
		now := time.Now().UTC()
		runreport.WriteMeta(out, runreport.Meta{RunID: "big", StartedAt: now.Add(-time.Hour), FinishedAt: now, Queue: queue})
		if res := runBinary(t, "report", out); res.code != cli.ExitOK {
			t.Fatalf("runner report: %s", res)
		}
		// The index carries a row per task, and nothing of their diffs or
		// trajectories: it stays small however long the tasks ran.
		info, err := os.Stat(filepath.Join(out, "report", "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("the index of %d tasks: %d bytes", n, info.Size())
		if info.Size() > 600<<10 {
			t.Errorf("the index of %d tasks is %d bytes, over 600 KiB", n, info.Size())
		}
		if pages, _ := filepath.Glob(filepath.Join(out, "report", "tasks", "*.html")); len(pages) != n {
			t.Errorf("%d task pages, want %d", len(pages), n)
		}

		b := browsertest.New(t, 1100, 760)
		b.Watch(t)
		browsertest.Do(t, b, "open the index", chromedp.Navigate("file://"+filepath.Join(out, "report", "index.html")),
			chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)))
		// Measured by the browser, with bounds far above what it takes.
		if ms := eval[float64](t, b, `performance.now()`); ms > 15000 {
			t.Errorf("the index of %d tasks took %.0f ms to render", n, ms)
		}
		if rows := eval[int](t, b, `document.querySelectorAll('#task-rows tr').length`); rows != n {
			t.Errorf("%d rows, want %d", rows, n)
		}
		got := eval[[]float64](t, b, `(() => { const t0 = performance.now(); const i = document.getElementById('f-text');
			i.value = 'task-09'; i.dispatchEvent(new Event('input'));
			return [document.querySelectorAll('#task-rows tr').length, performance.now() - t0] })()`)
		if got[0] != 100 || got[1] > 3000 {
			t.Errorf("filtering %d tasks on task-09: %v rows in %.0f ms; want 100, at once", n, got[0], got[1])
		}
		got = eval[[]float64](t, b, `(() => { const t0 = performance.now(); const i = document.getElementById('f-text');
			i.value = ''; i.dispatchEvent(new Event('input'));
			document.querySelector('th[data-key="seconds"] button').click();
			return [document.querySelectorAll('#task-rows tr').length, performance.now() - t0] })()`)
		if got[0] != n || got[1] > 3000 {
			t.Errorf("sorting %d tasks: %v rows in %.0f ms", n, got[0], got[1])
		}
		screenshot(t, b, "report-1000.png")
		pageClean(t, b)
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
}
