package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/internal/egress"
	"github.com/runner-dev/runner/internal/egress/dockernet"
	"github.com/runner-dev/runner/sandbox"
)

// startEgress starts the proxy and the internal network of cfg.Egress
// and returns cfg set to join them: Network is the internal network's
// name, and the proxy variables come last in Env (they win). The proxy
// carries the sandbox's labels, so cleanup removes it with the sandbox.
func (e *Engine) startEgress(ctx context.Context, cfg sandbox.Config, name string, deadline time.Time) (sandbox.Config, *dockernet.Egress, error) {
	report := cfg.EgressReport
	eg, err := dockernet.Start(ctx, e.cli, dockernet.Options{
		Allow: cfg.Egress, Name: name, Labels: labels(cfg, e.owner, deadline), Upstream: cfg.EgressUpstream,
		Report: report,
	})
	if err != nil {
		return cfg, nil, err
	}
	if report != nil {
		go func() {
			<-eg.Done()
			if err := eg.Err(); err != nil {
				report(egress.Event{Time: time.Now().UTC(), Method: egress.Stopped, Decision: egress.Refused, Reason: err.Error()})
			}
		}()
	}
	cfg.Network = eg.Network()
	cfg.Env = append(append([]string(nil), cfg.Env...), eg.Env()...)
	return cfg, eg, nil
}

// egressError is the error of a sandbox whose proxy stopped, or nil; it
// wraps sandbox.ErrEgressStopped.
func (d *Sandbox) egressError() error {
	if d.egress == nil {
		return nil
	}
	if err := d.egress.Err(); err != nil {
		return fmt.Errorf("sandbox %s: %w: %w", d.name, sandbox.ErrEgressStopped, err)
	}
	return nil
}

// removeEgressNetworks removes the internal networks matching labels for
// which why gives a reason, once their containers are gone.
func (e *Engine) removeEgressNetworks(ctx context.Context, labels []string, why func(sandbox.Leftover) string) error {
	_, err := dockernet.RemoveNetworks(ctx, e.cli, append([]string{LabelTool + "=" + toolName}, labels...), func(l map[string]string) bool {
		owner, deadline, _ := ownerFromLabels(l)
		return why(sandbox.Leftover{Run: l[LabelRun], Task: l[LabelTask], Owner: owner, Deadline: deadline}) != ""
	})
	if err != nil {
		return errors.Join(errors.New("remove egress networks"), err)
	}
	return nil
}
