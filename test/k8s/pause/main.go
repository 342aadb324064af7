// Command pause is the pod sandbox ("infra") container of the test cluster
// that test/k8s/up brings up: it holds the pod's namespaces and does nothing
// else. It reaps the zombies re-parented to it (it is PID 1 of a pod that
// shares its PID namespace) and exits 0 on SIGINT or SIGTERM. Built static
// (CGO_ENABLED=0) and imported as the cluster's sandbox_image, so the
// cluster needs no registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var st syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &st, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
