package docker_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/runner-dev/runner/sandbox"
)

// BenchmarkFiles measures one ReadFile, one WriteFile and one ListFiles of
// a small file on a running sandbox, on the busybox test image and on the
// Debian sandbox image.
func BenchmarkFiles(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 256)
	for _, img := range fileImages {
		sb := start(b, sandbox.Config{Image: img.image(b), TaskID: "bench-files-" + img.name})
		ctx := context.Background()
		if err := sb.WriteFile(ctx, "src/file.txt", data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run("image="+img.name+"/op=read", func(b *testing.B) {
			for b.Loop() {
				if got, err := sb.ReadFile(ctx, "src/file.txt"); err != nil || len(got) != len(data) {
					b.Fatalf("ReadFile: %d bytes, %v", len(got), err)
				}
			}
		})
		b.Run("image="+img.name+"/op=write", func(b *testing.B) {
			for b.Loop() {
				if err := sb.WriteFile(ctx, "src/file.txt", data, 0); err != nil {
					b.Fatalf("WriteFile: %v", err)
				}
			}
		})
		b.Run("image="+img.name+"/op=list", func(b *testing.B) {
			for b.Loop() {
				if _, err := sb.ListFiles(ctx, "", true); err != nil {
					b.Fatalf("ListFiles: %v", err)
				}
			}
		})
	}
}
