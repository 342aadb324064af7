package report

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// node is an element of a parsed page.
type page struct {
	elements []*html.Node
	text     string // all text nodes outside script and style, joined by "\n"
}

func parsePage(t *testing.T, path string) page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var p page
	var text []string
	var walk func(n *html.Node, raw bool)
	walk = func(n *html.Node, raw bool) {
		switch n.Type {
		case html.ElementNode:
			p.elements = append(p.elements, n)
			raw = n.Data == "script" || n.Data == "style"
		case html.TextNode:
			if !raw {
				text = append(text, n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, raw)
		}
	}
	walk(doc, false)
	p.text = strings.Join(text, "")
	return p
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func innerText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// The elements the report's templates make; anything else came from the
// data.
var ownElements = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "style": true, "script": true, "body": true,
	"header": true, "main": true, "footer": true, "section": true, "h1": true, "h2": true, "h3": true,
	"div": true, "span": true, "p": true, "a": true, "pre": true, "code": true, "strong": true,
	"dl": true, "dt": true, "dd": true, "ol": true, "ul": true, "li": true, "table": true, "thead": true, "tbody": true,
	"tr": true, "th": true, "td": true, "details": true, "summary": true, "button": true, "label": true,
	"select": true, "option": true, "input": true, "noscript": true, "meter": true,
}

// checkInert fails when a page holds an element or an attribute the
// templates do not make, an event handler, or a script other than the
// allowed count; and when its inline style and script do not match the
// hashes of its Content-Security-Policy.
func checkInert(t *testing.T, name string, p page, scripts int) {
	t.Helper()
	var csp string
	var inline []string
	gotScripts := 0
	for _, n := range p.elements {
		if !ownElements[n.Data] {
			t.Errorf("%s: an element <%s> the report does not make", name, n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" || a.Key == "src" {
				t.Errorf("%s: <%s %s=%q>", name, n.Data, a.Key, a.Val)
			}
			if a.Key == "href" && (strings.Contains(a.Val, ":") || strings.HasPrefix(a.Val, "/")) {
				t.Errorf("%s: a link out of the report: %q", name, a.Val)
			}
		}
		switch n.Data {
		case "meta":
			if v, _ := attr(n, "http-equiv"); v == "Content-Security-Policy" {
				csp, _ = attr(n, "content")
			}
		case "script":
			gotScripts++
			if typ, _ := attr(n, "type"); typ != "application/json" {
				inline = append(inline, innerText(n))
			}
		case "style":
			inline = append(inline, innerText(n))
		}
	}
	if gotScripts != scripts {
		t.Errorf("%s: %d script elements, want %d", name, gotScripts, scripts)
	}
	if !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("%s: Content-Security-Policy %q does not forbid loading", name, csp)
	}
	for _, s := range inline {
		sum := sha256.Sum256([]byte(s))
		if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, h) {
			t.Errorf("%s: an inline element whose hash %s the policy %q does not allow", name, h, csp)
		}
	}
}

// Everything from the agent or the repository is text on the pages: no
// element, attribute or script comes from it, and it reads as it was
// written. The index's data is JSON that reads back exactly.
func TestReportIsInert(t *testing.T) {
	out, commit := fixtureOut(t)
	if err := Write(context.Background(), out, Options{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "report")
	index := parsePage(t, filepath.Join(dir, "index.html"))
	checkInert(t, "index", index, 2)
	task := parsePage(t, filepath.Join(dir, "tasks", "hostile.html"))
	checkInert(t, "task page", task, 0)

	for _, want := range []string{hostileFile, hostileContent, hostileSummary, hostileError, hostileBranch + " at " + commit,
		"</script><img src=x onerror=alert(8)>", "<svg onload=alert(6)>", "</pre></div><script>alert(7)</script>",
		hostilePrompt, "<b>which</b> one?", "the command matches the deny rule <push>", "500 <i>Internal</i>", "test -f </script>",
		"Left out of the commit", "9 untracked file(s)", hostileExcluded, "__pycache__/", "… 3 more",
		"Warnings", hostileWarning, "25% of its $0.05 budget"} {
		if !strings.Contains(task.text, want) {
			t.Errorf("the task page does not show %q as text", want)
		}
	}
	for _, want := range []string{"refused by the policy", "History compacted (elide)", "Retry of step 1", "Step 2", "exit 1",
		"+1 −1", "−0", "Earlier attempt"} {
		if want == "Earlier attempt" {
			continue // the hostile task has one attempt
		}
		if !strings.Contains(task.text, want) {
			t.Errorf("the task page lacks %q", want)
		}
	}
	for _, n := range index.elements {
		if id, _ := attr(n, "id"); id == "runner-data" {
			var data struct{ Rows []Row }
			if err := json.Unmarshal([]byte(innerText(n)), &data); err != nil {
				t.Fatalf("the index's data is not JSON: %v", err)
			}
			if len(data.Rows) != 2 || data.Rows[0].Why != hostileError || data.Rows[0].Branch != hostileBranch ||
				data.Rows[0].Page != "tasks/hostile.html" || data.Rows[1].Attempts != 2 || data.Rows[1].Status != "succeeded" ||
				data.Rows[0].BudgetUSD != 0.05 || data.Rows[0].Share != 0.246 || data.Rows[1].BudgetUSD != 0 {
				t.Errorf("the index's rows read back as %+v", data.Rows)
			}
			if strings.Contains(innerText(n), "</script") || strings.Contains(innerText(n), "<!--") {
				t.Errorf("the index's data can end its script element: %s", innerText(n))
			}
		}
	}
	plain := parsePage(t, filepath.Join(dir, "tasks", "plain.html"))
	checkInert(t, "plain page", plain, 0)
	if !strings.Contains(plain.text, "Earlier attempt 1: interrupted") || !strings.Contains(plain.text, "Nothing was committed.") {
		t.Errorf("the page of a task with two attempts: %s", plain.text)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
