package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/gitops"
	"github.com/runner-dev/runner/tasks"
)

//go:embed assets
var assets embed.FS

var (
	style  = mustAsset("assets/report.css")
	script = mustAsset("assets/report.js")
	pages  = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/index.html", "assets/task.html"))
)

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hash is a CSP source for an inline element whose content is s.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// The pages' Content-Security-Policy: nothing is loaded from anywhere, no
// inline event handler or style attribute is obeyed, and the only script
// that runs is the index's own, named by its hash. Task pages, which show
// the most untrusted text, run no script at all.
var (
	indexCSP = "default-src 'none'; script-src " + hash(script) + "; style-src " + hash(style) +
		"; img-src data:; base-uri 'none'; form-action 'none'"
	taskCSP = "default-src 'none'; style-src " + hash(style) + "; img-src data:; base-uri 'none'; form-action 'none'"
)

var funcs = template.FuncMap{
	"usd":    func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"budget": func(v float64) string { return fmt.Sprintf("$%.2f", v) },
	"num":    formatNum,
	"pct":    func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"dur": func(v any) string {
		switch d := v.(type) {
		case time.Duration:
			return formatDuration(d)
		case tasks.Duration:
			return formatDuration(time.Duration(d))
		}
		return fmt.Sprint(v)
	},
	"page": PagePath,
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"since": func(start, t time.Time) string {
		if start.IsZero() || t.IsZero() {
			return ""
		}
		return "+" + formatDuration(t.Sub(start))
	},
	"lineClass": func(line string) string {
		switch {
		case strings.HasPrefix(line, "@@"):
			return "hunk"
		case strings.HasPrefix(line, "+"):
			return "add"
		case strings.HasPrefix(line, "-"):
			return "del"
		}
		return "ctx"
	},
}

// formatNum writes n with thousands separators.
func formatNum(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatDuration writes d as a person reads it: 850ms, 12.3s, 4m05s, 1h02m.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Options say where a report goes and what it says of itself.
type Options struct {
	// To is the report's directory; default the out directory's "report".
	To string
	// Version is runner's version, shown in the footer.
	Version string
	// Live tells, during a run, which tasks it is working on; nil when the
	// report is made after a run, or beside one.
	Live func() map[string]Live
	// Limits bound the diffs shown.
	Limits gitops.DiffLimits
}

// Dir is the directory of the report of out directory out.
func (o Options) Dir(out string) string {
	if o.To != "" {
		return o.To
	}
	return filepath.Join(out, "report")
}

// Index is the path of the report's index page.
func (o Options) Index(out string) string { return filepath.Join(o.Dir(out), "index.html") }

// load reads the out directory with what the run knows of its live tasks.
func (o Options) load(out string) (*Run, error) {
	var live map[string]Live
	if o.Live != nil {
		live = o.Live()
	}
	return Load(out, live)
}

// Write writes the whole report of out directory out: the index and a
// page per task that has a result. Each file is replaced at once, so a
// reader never sees one half written.
func Write(ctx context.Context, out string, opt Options) error {
	run, err := opt.load(out)
	if err != nil {
		return err
	}
	for _, t := range run.Tasks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if t.State == StateFinished {
			if err := writeTask(ctx, run, t, opt); err != nil {
				return err
			}
		}
	}
	return writeIndex(run, opt)
}

// WriteTasks writes the pages of the tasks ids, and the index.
func WriteTasks(ctx context.Context, out string, ids []string, opt Options) error {
	run, err := opt.load(out)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if t := run.Task(id); t != nil && t.State == StateFinished {
			if err := writeTask(ctx, run, t, opt); err != nil {
				return err
			}
		}
	}
	return writeIndex(run, opt)
}

// Missing returns the tasks of out that have a result and no page yet.
func Missing(out string, opt Options) ([]string, error) {
	run, err := Load(out, nil)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, t := range run.Tasks {
		if _, err := os.Stat(filepath.Join(opt.Dir(out), PagePath(t.ID))); t.State == StateFinished && err != nil {
			ids = append(ids, t.ID)
		}
	}
	return ids, nil
}

type indexPage struct {
	CSP, Title, RunID, Written, Version, Out string
	Style                                    template.CSS
	Script                                   template.JS
	Live                                     bool
	Summary                                  Summary
	Warnings                                 []string
	Data                                     any
}

func writeIndex(run *Run, opt Options) error {
	p := indexPage{
		CSP: indexCSP, Title: filepath.Base(run.Dir), Written: run.Now.Format("2006-01-02 15:04:05Z"),
		Version: opt.Version, Out: run.Dir, Style: template.CSS(style), Script: template.JS(script),
		Live: opt.Live != nil, Summary: run.Summarize(), Warnings: run.Warnings,
		Data: map[string]any{"rows": run.Rows()},
	}
	if abs, err := filepath.Abs(run.Dir); err == nil {
		p.Title = abs
	}
	if run.Meta != nil {
		p.RunID = run.Meta.RunID
	}
	return render(filepath.Join(opt.Dir(run.Dir), "index.html"), "index.html", p)
}

type taskPage struct {
	CSP, ID, Status, Written, Version string
	Style                             template.CSS
	// Attempts are the latest first.
	Attempts []*Attempt
	// Tries are the attempts of a best-of-n task, by number.
	Tries []*Attempt
}

func writeTask(ctx context.Context, run *Run, t *Task, opt Options) error {
	p := taskPage{CSP: taskCSP, ID: t.ID, Status: t.Status(), Written: run.Now.Format("2006-01-02 15:04:05Z"),
		Version: opt.Version, Style: template.CSS(style)}
	for i := len(t.Attempts) - 1; i >= 0; i-- {
		p.Attempts = append(p.Attempts, ReadAttempt(ctx, run.Dir, t.Attempts[i], opt.Limits))
	}
	for _, r := range LatestTries(t) {
		a := ReadAttempt(ctx, run.Dir, r, opt.Limits)
		a.Chosen = r.Try == t.Latest().Kept
		p.Tries = append(p.Tries, a)
	}
	return render(filepath.Join(opt.Dir(run.Dir), PagePath(t.ID)), "task.html", p)
}

// render executes a page and replaces the file at path with it.
func render(path, name string, data any) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return replaceFile(path, buf.Bytes())
}

// replaceFile writes data to a temporary file beside path and renames it
// over path: a reader sees the old file or the new one, never a part.
// The report is made again from the out directory at will, so it is not
// synced to disk, which would cost a report of many tasks dearly.
func replaceFile(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
