package tasks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.md")
	tests := []struct {
		data []byte
		perm os.FileMode
	}{
		{[]byte("first\n"), 0o644},
		{[]byte("second, replacing the first\n"), 0o600},
		{nil, 0o640},
	}
	for _, tt := range tests {
		if err := WriteFileAtomic(path, tt.data, tt.perm); err != nil {
			t.Fatalf("WriteFileAtomic: %v", err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, tt.data) {
			t.Errorf("content: got %q, %v; want %q", got, err, tt.data)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != tt.perm {
			t.Errorf("mode: got %v, want %v", fi.Mode().Perm(), tt.perm)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temp files)", len(entries))
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "x"), []byte("x"), 0o644); err == nil {
		t.Errorf("WriteFileAtomic into a missing directory: got nil error")
	}
}
