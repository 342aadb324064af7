package docker

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
)

// caTimeout bounds the installation of the trusted certificates.
const caTimeout = time.Minute

// installCACerts writes sandbox.CABundle, as root: the image's system
// bundle, if it has one, then cfg.CACerts, given on stdin. A directory or
// link already at that place (an image's /tmp when the disk limit is off)
// is replaced.
func (d *Sandbox) installCACerts(ctx context.Context, pem []byte) error {
	ctx, cancel := context.WithTimeout(ctx, caTimeout)
	defer cancel()
	dir := path.Dir(sandbox.CABundle)
	script := `set -e; umask 022; d="$1"; f="$2"; shift 2
rm -rf "$d"; mkdir -m 0755 "$d"
for b in "$@"; do if [ -f "$b" ] && [ -r "$b" ]; then cat "$b"; echo; break; fi; done > "$f.new"
cat >> "$f.new"; mv "$f.new" "$f"`
	cmd := append([]string{"sh", "-c", script, "runner-ca", dir, sandbox.CABundle}, sandbox.ImageCABundles...)
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: "0:0", AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: cmd,
	})
	if err != nil {
		return fmt.Errorf("install ca_certs: %w", d.execError(ctx, err))
	}
	att, err := d.e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return fmt.Errorf("install ca_certs: %w", d.execError(ctx, err))
	}
	defer att.Close()
	go func() {
		att.Conn.Write(pem)
		att.CloseWrite()
	}()
	var out tailBuffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return fmt.Errorf("install ca_certs: %w", err)
	}
	code, _, err := d.exitCode(ctx, created.ID)
	if err != nil {
		return fmt.Errorf("install ca_certs: %w", d.execError(ctx, err))
	}
	if code != 0 {
		return fmt.Errorf("install ca_certs in %s: exit code %d: %s", sandbox.CABundle, code, out.String())
	}
	return nil
}
