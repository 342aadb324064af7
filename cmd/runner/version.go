package main

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/internal/cli"
)

// version is set when releasing: go build -ldflags "-X main.version=v1.2.3".
// Otherwise the module version recorded by the Go toolchain is used.
var version string

// buildInfo says which runner this is.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readBuildInfo combines the release version with what the Go toolchain
// recorded in the binary (module version, VCS revision).
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: version, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if bi.Version == "" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.time":
				bi.Time = s.Value
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
	}
	if bi.Version == "" || bi.Version == "(devel)" {
		bi.Version = "devel"
	}
	return bi
}

// String is the one line `runner version` prints.
func (b buildInfo) String() string {
	var extra []string
	if b.Commit != "" {
		c := b.Commit[:min(12, len(b.Commit))]
		if b.Modified {
			c += "-modified"
		}
		extra = append(extra, c)
	}
	if b.Time != "" {
		extra = append(extra, b.Time)
	}
	extra = append(extra, b.Go)
	return "runner " + b.Version + " (" + strings.Join(extra, ", ") + ")"
}

func versionLine() string { return readBuildInfo().String() }

type versionOptions struct {
	printer *cli.Printer
	json    bool
}

func newVersionCmd(d *deps, runF func(*versionOptions) error) *cobra.Command {
	opts := &versionOptions{}
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of runner",
		Long:  `Print runner's version, the commit it was built from and the Go version. With --json, print {"version", "commit", "commit_time", "modified", "go"}.`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.printer, opts.json = d.printer, d.globals.json
			if runF != nil {
				return runF(opts)
			}
			return runVersion(opts)
		},
	}
}

func runVersion(opts *versionOptions) error {
	bi := readBuildInfo()
	if opts.json {
		return opts.printer.JSON(bi)
	}
	opts.printer.Line("%s", bi)
	return nil
}
