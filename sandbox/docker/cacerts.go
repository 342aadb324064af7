package docker

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// caTimeout bounds the installation of the trusted certificates.
const caTimeout = time.Minute

// installCACerts writes sandbox.CABundle, as root, with
// fileops.CACertsCommand: the image's system bundle, if it has one, then
// cfg.CACerts, given on stdin.
func (d *Sandbox) installCACerts(ctx context.Context, pem []byte) error {
	ctx, cancel := context.WithTimeout(ctx, caTimeout)
	defer cancel()
	created, err := d.e.cli.ExecCreate(ctx, d.id, client.ExecCreateOptions{
		User: "0:0", AttachStdin: true, AttachStdout: true, AttachStderr: true, Cmd: fileops.CACertsCommand(),
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
