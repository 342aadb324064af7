package tasks

import (
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ImageBuild is an image made from the task's repository, at the task's
// ref: `image: dockerfile:PATH` builds the repository's Dockerfile at
// PATH with the repository as its context; `image: devcontainer` takes
// the image or the build of the repository's devcontainer.json.
type ImageBuild struct {
	// Dockerfile is PATH of dockerfile:PATH: slash-separated, clean,
	// relative to the repository's root. Empty for Devcontainer.
	Dockerfile string `json:",omitempty"`
	// Devcontainer is set by image: devcontainer.
	Devcontainer bool `json:",omitempty"`
	// Source is where the image key was written.
	Source Source
}

// String is the image key's value.
func (b *ImageBuild) String() string {
	if b.Devcontainer {
		return imageDevcontainer
	}
	return imageDockerfile + b.Dockerfile
}

// The image values that build from the repository.
const (
	imageDockerfile   = "dockerfile:"
	imageDevcontainer = "devcontainer"
)

// ParseImageBuild reads image: dockerfile:PATH or image: devcontainer;
// ok is false for an ordinary image reference.
func ParseImageBuild(img string) (b *ImageBuild, ok bool, err error) {
	if img == imageDevcontainer {
		return &ImageBuild{Devcontainer: true}, true, nil
	}
	p, ok := strings.CutPrefix(img, imageDockerfile)
	if !ok {
		return nil, false, nil
	}
	switch {
	case p == "":
		return nil, true, fmt.Errorf("want dockerfile:PATH, the Dockerfile's path in the repository (dockerfile:Dockerfile)")
	case strings.Contains(p, `\`) || strings.ContainsRune(p, 0):
		return nil, true, fmt.Errorf("dockerfile:%s: want a slash-separated path in the repository", p)
	case path.IsAbs(p):
		return nil, true, fmt.Errorf("dockerfile:%s: want a path relative to the repository's root, not an absolute one", p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return nil, true, fmt.Errorf("dockerfile:%s: the Dockerfile must be a file in the repository", p)
	}
	return &ImageBuild{Dockerfile: clean}, true, nil
}

// checkImage validates the image key's value at v; a build from the
// repository is kept in s.build.
func checkImage(r *reader, v *yaml.Node, a at, s *spec, img string) {
	b, ok, err := ParseImageBuild(img)
	if err != nil {
		r.addField(v, a, "%v", err)
		return
	}
	if ok {
		b.Source = Source{File: r.file, Line: v.Line}
	}
	s.build = b
}

// mergeImage is the image the task names and the build it asks for: the
// task's image key if set, else the defaults'.
func mergeImage(d, s *spec) (string, *ImageBuild) {
	from := d
	if s.Image != nil {
		from = s
	}
	if from.build != nil {
		b := *from.build
		return "", &b
	}
	return deref(from.Image), nil
}
