// Package dockernet runs the egress allowlist of a Docker sandbox: an
// internal network (no route out) for the sandbox, and on it a proxy
// container, runner's own binary running package egress's proxy, that is
// also attached to a bridge network with a route out. The sandbox's only
// way out is the proxy; when the proxy stops, there is no way out at all.
package dockernet

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// binaryPath is where the executable sits in the proxy image.
const binaryPath = "/runner"

// imageRepo names the proxy images; the tag is a digest of their content.
const imageRepo = "runner-egress-proxy"

// ensureImage returns the tag of an image holding the executable bin (and,
// if it is dynamically linked, its loader and libraries, from this host),
// importing it into the engine unless it is there already. Nothing is
// pulled: the image is made from files of this machine.
func ensureImage(ctx context.Context, cli *client.Client, bin string) (string, error) {
	rootfs, err := imageRootfs(bin)
	if err != nil {
		return "", fmt.Errorf("egress proxy image: %w", err)
	}
	sum := sha256.Sum256(rootfs)
	tag := imageRepo + ":" + hex.EncodeToString(sum[:8])
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("egress proxy image: %w", err)
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(rootfs), SourceName: "-"}, tag,
		client.ImageImportOptions{Changes: []string{`ENTRYPOINT ["` + binaryPath + `"]`, "USER 65534:65534"}})
	if err != nil {
		return "", fmt.Errorf("egress proxy image: import: %w", err)
	}
	defer res.Close()
	if err := jsonStreamError(res); err != nil {
		return "", fmt.Errorf("egress proxy image: import: %w", err)
	}
	removeOtherImages(ctx, cli, tag)
	return tag, nil
}

// staleImageAge is how old the proxy image of another build must be before
// removeOtherImages removes it: another runner (another version, a test
// binary) may have just made its own and be about to use it.
const staleImageAge = time.Hour

// removeOtherImages removes the proxy images of other builds of the
// binary made over staleImageAge ago, so that they do not pile up. One
// still in use is left (the engine refuses to remove it), as is any
// error: they are only space.
func removeOtherImages(ctx context.Context, cli *client.Client, keep string) {
	list, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", imageRepo)})
	if err != nil {
		return
	}
	for _, img := range list.Items {
		if time.Since(time.Unix(img.Created, 0)) < staleImageAge {
			continue
		}
		for _, ref := range img.RepoTags {
			if ref != keep && strings.HasPrefix(ref, imageRepo+":") {
				cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
			}
		}
	}
}

// imageRootfs is a tar of bin at binaryPath, plus the ELF interpreter and
// the shared libraries it names when it is not static, at their paths on
// this host.
func imageRootfs(bin string) ([]byte, error) {
	files := map[string]string{binaryPath: bin}
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return nil, err
		}
		interp := string(bytes.TrimRight(b, "\x00"))
		files[interp] = interp
		libs, err := f.ImportedLibraries()
		if err != nil {
			return nil, err
		}
		for _, lib := range libs {
			path, err := findLibrary(lib, f.Machine)
			if err != nil {
				return nil, err
			}
			files[path] = path
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, name := range sortedKeys(files) {
		for d := filepath.Dir(name); d != "/" && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedKeys(dirs) {
		tw.WriteHeader(&tar.Header{Name: d[1:] + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777})
	for _, name := range sortedKeys(files) {
		body, err := os.ReadFile(files[name]) // follows symlinks: the file itself goes in
		if err != nil {
			return nil, err
		}
		tw.WriteHeader(&tar.Header{Name: name[1:], Mode: 0o755, Size: int64(len(body))})
		tw.Write(body)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// libDirs are searched for the libraries a dynamic executable needs.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

func findLibrary(name string, machine elf.Machine) (string, error) {
	for _, d := range libDirs {
		p := filepath.Join(d, name)
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		ok := f.Machine == machine
		f.Close()
		if ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("library %s needed by the runner binary not found in %v", name, libDirs)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// jsonStreamError returns the error an engine progress stream reports.
func jsonStreamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return errors.New(m.Error.Message)
		}
	}
}
