package fakellm

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// recorded holds response bodies recorded from real services; their
// sources are listed in recordings/README.md.
//
//go:embed recordings
var recorded embed.FS

// RecordedProviders lists the providers with recorded replies.
func RecordedProviders() []string {
	entries, _ := fs.ReadDir(recorded, "recordings")
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// RecordedBodies returns the recorded replies of provider, in order
// (1.json, 2.json, ...).
func RecordedBodies(provider string) ([]string, error) {
	dir := path.Join("recordings", provider)
	entries, err := fs.ReadDir(recorded, dir)
	if err != nil {
		return nil, fmt.Errorf("recordings of %q: %w", provider, err)
	}
	type numbered struct {
		n    int
		name string
	}
	var files []numbered
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		if err != nil || !strings.HasSuffix(e.Name(), ".json") {
			return nil, fmt.Errorf("recordings of %q: %s is not named N.json", provider, e.Name())
		}
		files = append(files, numbered{n, e.Name()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].n < files[j].n })
	bodies := make([]string, len(files))
	for i, f := range files {
		b, err := fs.ReadFile(recorded, path.Join(dir, f.name))
		if err != nil {
			return nil, err
		}
		bodies[i] = string(b)
	}
	return bodies, nil
}

// Recordings returns the recorded replies of provider as Recorded turns,
// in order. It panics if there are none: a test names a provider that was
// recorded.
func Recordings(provider string) []Turn {
	bodies, err := RecordedBodies(provider)
	if err != nil || len(bodies) == 0 {
		panic(fmt.Sprintf("fakellm: no recordings of %q: %v", provider, err))
	}
	turns := make([]Turn, len(bodies))
	for i, b := range bodies {
		turns[i] = Recorded(b)
	}
	return turns
}
