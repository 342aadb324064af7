package kubernetes_test

import (
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/sandboxtest"
)

// The Kubernetes backend passes the conformance suite on the test cluster,
// with what Kubernetes does differently declared in Caps.
func TestConformance(t *testing.T) {
	b := k8stest.Backend(t)
	sandboxtest.Run(t, sandboxtest.Target{
		Backend: b, Image: k8stest.Image(t), RunID: runID,
		OwnedBy: func(o sandbox.Owner) sandbox.Backend { return b.OwnedBy(o) },
		Swapper: dockertest.Swapper(t),
		Caps: sandboxtest.Caps{
			Processes: true, Isolation: true, Leftovers: true,
			NoNewPrivsShown: true,
			OOMReported:     true,
			// network none is a deny-all egress NetworkPolicy around the
			// pod's interface; the pids limit is the kubelet's.
			NetworkByPolicy: true,
			PidsByCluster:   true,
		},
	})
}
