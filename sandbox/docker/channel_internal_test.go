package docker

import "testing"

// Sandboxes under gVisor run without the channel, under whichever of its
// names the engine declares it.
func TestIsGVisor(t *testing.T) {
	for name, want := range map[string]bool{
		"runsc": true, "runsc-kvm": true, "runsc-debug": true,
		"runc": false, "": false, "io.containerd.runc.v2": false, "runscx": false,
	} {
		if got := isGVisor(name); got != want {
			t.Errorf("isGVisor(%q) = %v, want %v", name, got, want)
		}
	}
}
