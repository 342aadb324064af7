package tasks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadProblems loads the task file at path and returns the lines of its
// ValidationError.
func loadProblems(t *testing.T, path string) []string {
	t.Helper()
	q, err := loadWithin(t, path)
	if err == nil {
		t.Fatalf("Load succeeded with %d tasks, want a ValidationError", len(q.Tasks))
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T %v, want *ValidationError", err, err)
	}
	return strings.Split(ve.Error(), "\n")
}

// loadWithin loads path, failing the test if Load has not returned within
// a minute: the cases below used to block forever or read without end.
func loadWithin(t *testing.T, path string) (*Queue, error) {
	t.Helper()
	type loaded struct {
		q   *Queue
		err error
	}
	ch := make(chan loaded, 1)
	go func() {
		q, err := Load(context.Background(), path)
		ch <- loaded{q, err}
	}()
	select {
	case l := <-ch:
		return l.q, l.err
	case <-time.After(time.Minute):
		t.Fatalf("Load(%s) still running after a minute", path)
		return nil, nil
	}
}

// A prompt_file must be a regular file of at most max_prompt_size: a FIFO
// is refused without waiting for a writer, a device without reading it, a
// large file without reading it whole.
func TestPromptFileMustBeRegularAndCapped(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.md")
	if err := os.WriteFile(big, bytes.Repeat([]byte("word "), 1<<20+1), 0o644); err != nil { // 5m and 5 bytes
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "small.md"), []byte("Fix it.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "latin1.md"), []byte("Fix it.\nCaf\xe9\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	file := filepath.Join(dir, "q.yaml")
	os.WriteFile(file, []byte(`tasks:
  - {id: fifo, repo: /r, prompt_file: fifo}
  - {id: zero, repo: /r, prompt_file: /dev/zero}
  - {id: dir, repo: /r, prompt_file: sub}
  - {id: big, repo: /r, prompt_file: big.md}
  - {id: latin1, repo: /r, prompt_file: latin1.md}
  - {id: small, repo: /r, prompt_file: small.md}
`), 0o644)
	got := loadProblems(t, file)
	assertLines(t, got, []string{
		file + `:2:39: task "fifo": prompt_file: read prompt: ` + filepath.Join(dir, "fifo") + ` is a FIFO; want a regular file`,
		file + `:3:39: task "zero": prompt_file: read prompt: /dev/zero is a device; want a regular file`,
		file + `:4:38: task "dir": prompt_file: read prompt: ` + filepath.Join(dir, "sub") + ` is a directory; want a regular file`,
		file + `:5:38: task "big": prompt_file: big.md is 5.0m, over the 4m cap (raise max_prompt_size in defaults if this prompt is meant)`,
		file + `:6:41: task "latin1": prompt_file: latin1.md:2:4: invalid UTF-8 (byte 0xe9); task files must be UTF-8 text`,
	})

	// max_prompt_size raises the cap for the whole file.
	os.WriteFile(file, []byte("defaults: {max_prompt_size: 6m}\ntasks:\n  - {id: big, repo: /r, prompt_file: big.md}\n"), 0o644)
	q, err := loadWithin(t, file)
	if err != nil {
		t.Fatalf("with max_prompt_size 6m: %v", err)
	}
	if got := len(q.Tasks[0].Prompt); got != 5<<20+5 {
		t.Errorf("with max_prompt_size 6m: a prompt of %d bytes, want %d", got, 5<<20+5)
	}
}

// An inline prompt has the same cap.
func TestPromptSizeCap(t *testing.T) {
	long := strings.Repeat("x", 2048)
	_, got := parseProblems(t, "q.yaml", "defaults: {max_prompt_size: 1k}\ntasks:\n  - {id: a, repo: /r, prompt: "+long+"}\n")
	assertLines(t, got, []string{
		`q.yaml:3:31: task "a": prompt: the prompt is 2k, over the 1k cap (raise max_prompt_size in defaults if this prompt is meant)`,
	})
	_, got = parseProblems(t, "q.jsonl", `{"defaults": {"max_prompt_size": "1k"}}`+"\n"+`{"id": "a", "repo": "/r", "prompt": "`+long+`"}`+"\n")
	assertLines(t, got, []string{
		`q.jsonl:2:37: task "a": prompt: the prompt is 2k, over the 1k cap (raise max_prompt_size in defaults if this prompt is meant)`,
	})
	_, got = parseProblems(t, "q.yaml", `
defaults: {max_prompt_size: 0}
tasks:
  - {id: a, repo: /r, prompt: p, max_prompt_size: 1m}
  - {id: b, repo: /r, prompt: p}
`)
	assertLines(t, got, []string{
		`q.yaml:2:29: defaults.max_prompt_size: must be positive, got 0`,
		`q.yaml:4:34: task "a": "max_prompt_size" can only be set in defaults: it applies to the whole file`,
	})
	// The default cap applies without max_prompt_size.
	huge := strings.Repeat("y", DefaultMaxPromptSize+1)
	_, got = parseProblems(t, "q.jsonl", `{"id": "a", "repo": "/r", "prompt": "`+huge+`"}`+"\n")
	assertLines(t, got, []string{
		`q.jsonl:1:37: task "a": prompt: the prompt is 4.0m, over the 4m cap (raise max_prompt_size in defaults if this prompt is meant)`,
	})
}

// Invalid UTF-8 is reported with its line and column in both formats:
// YAML's decoder gives no position, and JSON's would silently turn it into
// U+FFFD in the prompt.
func TestInvalidUTF8(t *testing.T) {
	_, got := parseProblems(t, "q.yaml", "tasks:\n  - {id: a, repo: /r, prompt: \"caf\xe9 au lait\"}\n")
	assertLines(t, got, []string{`q.yaml:2:35: invalid UTF-8 (byte 0xe9); task files must be UTF-8 text`})

	_, got = parseProblems(t, "q.jsonl", `{"id": "a", "repo": "/r", "prompt": "ok"}`+"\n"+
		`{"id": "b", "repo": "/r", "prompt": "é then `+"\xff"+`"}`+"\n"+
		`{"id": "c", "repo": "/r", "prompt": "\ud800 is a lone surrogate, escaped: fine"}`+"\n"+
		`{"id": "d", "repo": "/r", "prompt": "`+"\xed\xa0\x80"+` is one, raw"}`+"\n")
	assertLines(t, got, []string{
		`q.jsonl:2:45: invalid UTF-8 (byte 0xff); task files must be UTF-8 text`,
		`q.jsonl:4:38: invalid UTF-8 (byte 0xed); task files must be UTF-8 text`,
	})
}

// A UTF-8 byte order mark is skipped in JSON Lines as YAML skips it.
func TestJSONLByteOrderMark(t *testing.T) {
	for name, text := range map[string]string{
		"q.jsonl": `{"id": "a", "repo": "/r", "prompt": "p"}`,
		"q.yaml":  `[{"id": "a", "repo": "/r", "prompt": "p"}]`,
	} {
		q, err := Parse(name, []byte("\xef\xbb\xbf"+text+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if q.Tasks[0].ID != "a" || q.Tasks[0].Source.Line != 1 {
			t.Errorf("%s: got %+v", name, q.Tasks[0])
		}
	}
}

// A JSON Lines file is read one line at a time: a line far over the cap
// costs neither its size in memory nor the rest of the file, which is still
// checked.
func TestJSONLReadAsStream(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	const lineSize = 64 << 20
	f.WriteString(`{"defaults": {"repo": "/r", "max_prompt_size": "64k"}}` + "\n")
	f.WriteString(`{"id": "huge", "prompt": "`)
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	for range lineSize >> 20 {
		f.Write(chunk)
	}
	f.WriteString("\"}\n" + `{"id": "after", "prompt": "p", "branch": "-x"}` + "\n")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := loadProblems(t, file)
	runtime.ReadMemStats(&after)
	assertLines(t, got, []string{
		file + `:2: the line is over 1.4m, more than a task with a prompt of max_prompt_size (64k) can need`,
		file + `:3:42: task "after": branch name "-x" must not start with "-"`,
	})
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > lineSize/4 {
		t.Errorf("loading allocated %d bytes for a file of %d; want a fraction of it", alloc, lineSize)
	}
}

// Devices and directories are refused as task files at once; a FIFO is read
// as a pipe, and Load gives up waiting for its writer when ctx ends.
func TestTaskFileKinds(t *testing.T) {
	for _, path := range []string{"/dev/zero", t.TempDir()} {
		_, err := loadWithin(t, path)
		if err == nil || !strings.Contains(err.Error(), "; want a regular file or a pipe") {
			t.Errorf("Load(%s) = %v, want a refusal", path, err)
		}
	}

	fifo := newFIFO(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	stopped := errors.New("stopped by the test")
	done := make(chan error, 1)
	go func() {
		_, err := Load(ctx, fifo)
		done <- err
	}()
	cancel(stopped) // Load waits for a writer that never comes
	if err := <-done; !errors.Is(err, stopped) {
		t.Errorf("Load of a FIFO without a writer, cancelled: %v, want the cause", err)
	}

	// With a writer, the FIFO is read to its end; a writer that stalls
	// is given up on when ctx ends. Each part has a FIFO of its own: the
	// open that the cancelled Load abandoned above still waits on the
	// first one, and a writer would wake it too.
	fifo = newFIFO(t)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.WriteString("- {id: a, repo: /r, prompt: p}\n")
			w.Close()
		}
	}()
	q, err := loadWithin(t, fifo)
	if err != nil || len(q.Tasks) != 1 {
		t.Fatalf("Load of a FIFO: %v", err)
	}
	fifo = newFIFO(t)
	ctx, cancel = context.WithCancelCause(context.Background())
	writing := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			w.WriteString("- {id: a, repo: /r, prompt: p}\n")
		}
		writing <- w
	}()
	go func() {
		_, err := Load(ctx, fifo)
		done <- err
	}()
	w := <-writing // Load has the FIFO open; the writer stalls
	defer w.Close()
	cancel(stopped)
	if err := <-done; !errors.Is(err, stopped) {
		t.Errorf("Load of a stalled FIFO, cancelled: %v, want the cause", err)
	}
}

// newFIFO makes a FIFO named like a task file in a directory of its own.
func newFIFO(t *testing.T) string {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "q.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	return fifo
}
