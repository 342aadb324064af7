package docker

import (
	"context"
	"slices"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// Labels of an environment image. The cache is the set of images with
// LabelEnvKey set: it lives in the engine, so that runs on any machine
// sharing the engine share it. The last use is the image's LastTagTime,
// refreshed by tagging it again at each use.
const (
	LabelEnvKey     = "dev.runner.env.key"  // the full key; empty for an uncached environment
	LabelEnvBase    = "dev.runner.env.base" // the id of the image setup ran on
	LabelEnvCreated = "dev.runner.env.created"
	envRepo         = "runner-env"
)

type imageInfo = image.InspectResponse

var _ sandbox.EnvironmentCache = (*Engine)(nil)

// envTag is the tag of the environment of key.
func envTag(key string) string { return envRepo + ":" + key }

// buildLocks lets one Prepare per key build at a time in this process; the
// others wait, then find the image it made. Processes sharing an engine
// do not see each other's locks: two runs may then build the same key
// once each, and the later tag wins (both images are correct).
var buildLocks = keyLocks{m: map[string]*keyLock{}}

type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch    chan struct{}
	users int
}

// lock waits for key's lock or for ctx to end.
func (l *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	k := l.m[key]
	if k == nil {
		k = &keyLock{ch: make(chan struct{}, 1)}
		l.m[key] = k
	}
	k.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if k.users--; k.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
	select {
	case k.ch <- struct{}{}:
		return func() { <-k.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// cachedEnvironment returns the id of the cached environment of key, and
// marks it used. An entry is trusted only if its labels name the key and
// the base image, and its layers are the base's plus one: one that is not
// is untagged, to be built again.
func (e *Engine) cachedEnvironment(ctx context.Context, key string, base imageInfo) (string, bool) {
	tag := envTag(key)
	res, err := e.cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", false
	}
	img := res.InspectResponse
	if !validEntry(img, key, base) {
		_, _ = e.cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{})
		return "", false
	}
	// Tagging again refreshes LastTagTime: the least recently used entry
	// is the first to go.
	if _, err := e.cli.ImageTag(ctx, client.ImageTagOptions{Source: img.ID, Target: tag}); err != nil {
		return "", false
	}
	return img.ID, true
}

// validEntry checks the labels and layers of a cache entry.
func validEntry(img imageInfo, key string, base imageInfo) bool {
	if img.Config == nil || img.Config.Labels[LabelEnvKey] != key || img.Config.Labels[LabelEnvBase] != base.ID {
		return false
	}
	layers, baseLayers := img.RootFS.Layers, base.RootFS.Layers
	return len(layers) == len(baseLayers)+1 && slices.Equal(layers[:len(baseLayers)], baseLayers)
}

// Environments lists the cached environments, most recently used first.
func (e *Engine) Environments(ctx context.Context) ([]sandbox.CacheEntry, error) {
	list, err := e.cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label", LabelEnvKey)})
	if err != nil {
		return nil, e.explain("list environments", "", err)
	}
	var out []sandbox.CacheEntry
	for _, s := range list.Items {
		key := s.Labels[LabelEnvKey]
		if key == "" || !slices.Contains(s.RepoTags, envTag(key)) {
			continue
		}
		ins, err := e.cli.ImageInspect(ctx, s.ID)
		if err != nil {
			continue
		}
		ent := sandbox.CacheEntry{Key: key, Image: s.ID, Base: s.Labels[LabelEnvBase], Size: ins.Size, Used: ins.Metadata.LastTagTime, InUse: s.Containers > 0}
		if b, err := e.cli.ImageInspect(ctx, ent.Base); err == nil {
			ent.Size -= b.Size
		}
		out = append(out, ent)
	}
	slices.SortFunc(out, func(a, b sandbox.CacheEntry) int { return b.Used.Compare(a.Used) })
	return out, nil
}

// PruneEnvironments removes cached environments, least recently used
// first, until the rest take at most keep bytes (0 removes all). An
// environment a container uses is left in place. It returns what it
// removed.
func (e *Engine) PruneEnvironments(ctx context.Context, keep int64) ([]sandbox.CacheEntry, error) {
	return e.pruneEnvironments(ctx, keep, "")
}

// pruneEnvironments is PruneEnvironments sparing the environment of key
// spare, which a task is about to start from (its size still counts).
func (e *Engine) pruneEnvironments(ctx context.Context, keep int64, spare string) ([]sandbox.CacheEntry, error) {
	list, err := e.Environments(ctx)
	if err != nil {
		return nil, err
	}
	var total int64
	var removed []sandbox.CacheEntry
	for _, ent := range list {
		total += ent.Size
		if total <= keep && keep > 0 || ent.Key == spare && spare != "" {
			continue
		}
		_, err := e.cli.ImageRemove(ctx, envTag(ent.Key), client.ImageRemoveOptions{PruneChildren: true})
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			removed = append(removed, ent)
			total -= ent.Size
		case cerrdefs.IsConflict(err):
			// in use by a running task: it stays
		default:
			return removed, e.explain("remove environment", "", err)
		}
	}
	return removed, nil
}

// RemoveEnvironment removes the cached environment of key, unless a
// container uses it.
func (e *Engine) RemoveEnvironment(ctx context.Context, key string) error {
	_, err := e.cli.ImageRemove(ctx, envTag(key), client.ImageRemoveOptions{PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return e.explain("remove environment", "", err)
	}
	return nil
}

// trimCache applies a Setup's CacheLimit after a build; errors are left
// for the next build or `runner cache prune` to meet again.
func (e *Engine) trimCache(ctx context.Context, limit int64, spare string) {
	if limit < 0 {
		return
	}
	if limit == 0 {
		limit = sandbox.DefaultCacheLimit
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, _ = e.pruneEnvironments(ctx, limit, spare)
}
