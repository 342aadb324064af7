package dockernet

import (
	"context"
	"errors"
	"fmt"

	"github.com/moby/moby/client"
)

// RemoveNetworks removes the internal networks of this package that carry
// every label of filters ("key=value") and for which remove says so. The
// proxy containers are the caller's to remove first (they carry the
// caller's labels); a network that still has a container attached is
// reported in the error and left for a later cleanup.
func RemoveNetworks(ctx context.Context, cli *client.Client, filters []string, remove func(labels map[string]string) bool) (removed []string, err error) {
	f := make(client.Filters).Add("label", append([]string{LabelRole + "=" + roleNet}, filters...)...)
	list, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list egress networks: %w", err)
	}
	var errs []error
	for _, n := range list.Items {
		if !remove(n.Labels) {
			continue
		}
		if err := removeNetwork(ctx, cli, n.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n.Name)
	}
	return removed, errors.Join(errs...)
}
