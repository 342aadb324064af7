// Package kubernetes holds example manifests for running runner on a
// cluster; its test decodes them so that a typo fails CI.
package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Every document of every manifest decodes with client-go's scheme,
// strictly: an unknown or misspelt field, a duplicate key or an unknown
// kind is an error.
func TestManifestsDecode(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for n := 1; ; n++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", file, n, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, gvk, err := strict.Decode(doc, nil, nil)
			if err != nil {
				t.Errorf("%s: document %d: %v", file, n, err)
				continue
			}
			if job, ok := obj.(*batchv1.Job); ok {
				checkShardJob(t, file, job)
			}
			t.Logf("%s: document %d: %s", file, n, gvk)
		}
	}
}

// checkShardJob checks what an Indexed Job of runner shards must keep
// consistent: N pods, one per index, each running its shard.
func checkShardJob(t *testing.T, file string, job *batchv1.Job) {
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("%s: job %s is not an Indexed Job", file, job.Name)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		t.Errorf("%s: job %s: completions and parallelism must both be N", file, job.Name)
	}
	if got := s.Template.Spec.ServiceAccountName; got != "runner" {
		t.Errorf("%s: job %s runs as service account %q, want runner (role.yaml)", file, job.Name, got)
	}
	want := "--shard=auto/" + strconv.Itoa(int(*s.Completions))
	found := false
	for _, a := range s.Template.Spec.Containers[0].Args {
		found = found || a == want
	}
	if !found {
		t.Errorf("%s: job %s: its runner has no %s", file, job.Name, want)
	}
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
