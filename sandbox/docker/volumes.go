package docker

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/moby/moby/api/types/container"

	"github.com/runner-dev/runner/sandbox"
)

// limitImageVolumes puts a memory-backed file system of the disk limit on
// each VOLUME the image declares. Left alone, the engine would make each
// an anonymous volume on the host's disk, writable past the disk limit of
// an otherwise read-only root. An image that cannot be inspected is left
// to ContainerCreate, which reports it.
func (e *Engine) limitImageVolumes(ctx context.Context, cfg sandbox.Config, hc *container.HostConfig) {
	res, err := e.cli.ImageInspect(ctx, cfg.Image)
	if err != nil || res.Config == nil {
		return
	}
	for v := range res.Config.Volumes {
		p := path.Clean(v)
		if !path.IsAbs(p) || p == "/" || strings.ContainsAny(p, ":,") || covered(hc, p) {
			continue
		}
		hc.Tmpfs[p] = fmt.Sprintf("rw,nosuid,nodev,size=%d,mode=1777", cfg.Disk)
	}
}

// covered reports whether p is already one of the sandbox's own mounts.
func covered(hc *container.HostConfig, p string) bool {
	if _, ok := hc.Tmpfs[p]; ok {
		return true
	}
	for _, m := range hc.Mounts {
		if m.Target == p {
			return true
		}
	}
	return false
}
