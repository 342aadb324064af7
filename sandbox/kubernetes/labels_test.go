package kubernetes

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/runner-dev/runner/sandbox"
)

// Every id becomes a valid label value, the same each time, and two ids
// that differ only in characters a label cannot hold stay apart.
func TestLabelValue(t *testing.T) {
	for _, id := range []string{"", "task-1", "a/b", "a_b", "-x-", strings.Repeat("long", 30), "tâche ünicode", "x."} {
		v := labelValue(id)
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("labelValue(%q) = %q: %v", id, v, errs)
		}
		if labelValue(id) != v {
			t.Errorf("labelValue(%q) is not stable", id)
		}
	}
	if labelValue("task-1") != "task-1" {
		t.Errorf("a valid value was changed: %q", labelValue("task-1"))
	}
	if labelValue("a/b") == labelValue("a_b") {
		t.Error("a/b and a_b meet")
	}
	for _, c := range []sandbox.Config{{TaskID: "Some Task/42"}, {RunID: "run"}, {TaskID: "///"}, {TaskID: strings.Repeat("x", 300)}} {
		n := podName(c)
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 || len(n) > 63 {
			t.Errorf("podName(%+v) = %q: %v", c, n, errs)
		}
	}
}
