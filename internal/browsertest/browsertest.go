// Package browsertest drives a real browser, Debian's headless Chromium,
// for tests of what runner shows in one: it records every console
// message, uncaught exception, dialog and network request of the pages.
//
// A test that needs the browser fails when Chromium cannot be found or
// started; setting RUNNER_SKIP_BROWSER=1 turns that into a skip, for
// machines without it. CI never sets it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Browser is a headless Chromium tab and what its pages did.
type Browser struct {
	// Ctx runs chromedp actions in the tab.
	Ctx context.Context

	mu       sync.Mutex
	console  []string
	dialogs  []string
	requests []string
}

// executables are the names Chromium goes by.
var executables = []string{"chromium", "chromium-browser", "google-chrome", "chrome"}

// findChromium returns the path of Chromium, or "".
func findChromium() string {
	if p := os.Getenv("RUNNER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range executables {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a headless Chromium with a window of width x height pixels,
// for the time of the test, or ends the test (see the package comment).
// Every action run with Ctx has a deadline of a few minutes.
func New(t testing.TB, width, height int) *Browser {
	t.Helper()
	path := findChromium()
	if path == "" {
		if os.Getenv("RUNNER_SKIP_BROWSER") == "1" {
			t.Skip("no Chromium (RUNNER_SKIP_BROWSER=1)")
		}
		t.Fatalf("this test needs Chromium (apt-get install chromium; set RUNNER_SKIP_BROWSER=1 to skip); looked for %s",
			strings.Join(executables, ", "))
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(width, height),
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		// Pages on file:// must not reach anything else, and nothing
		// may be fetched behind the test's back.
		chromedp.Flag("disable-background-networking", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{}
	ctx, cancelTab := chromedp.NewContext(alloc, chromedp.WithListener(b.listen))
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	b.mu.Lock()
	b.Ctx = ctx
	b.mu.Unlock()
	// Starts the browser, opens the tab, and reports its requests.
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		if os.Getenv("RUNNER_SKIP_BROWSER") == "1" {
			t.Skipf("Chromium does not start (RUNNER_SKIP_BROWSER=1): %v", err)
		}
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	return b
}

// listen records what the pages do. It runs on the tab's reading
// goroutine: it must be quick and run no command.
func (b *Browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		b.dialogs = append(b.dialogs, fmt.Sprintf("%s: %q", e.Type, e.Message))
		go chromedp.Call(b.Ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false}) // the page may be gone by then
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	}
}

// Watch records the console of the tab (console API calls, uncaught
// exceptions, entries of the browser log such as a Content-Security-Policy
// violation) until the test ends.
func (b *Browser) Watch(t testing.TB) {
	messages := chromedp.Console(b.Ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m.String())
			b.mu.Unlock()
		}
	}()
}

// Console returns the console messages so far.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// Dialogs returns the dialogs (alert, confirm, prompt) pages opened.
func (b *Browser) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// Requests returns the URL of every request the pages made.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// Run runs an action in the tab and fails the test on error.
func Run[T any](t testing.TB, b *Browser, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(b.Ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Do runs actions in the tab and fails the test on error.
func Do(t testing.TB, b *Browser, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.Ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
