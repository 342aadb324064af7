package main

import (
	"log/slog"
	"strings"
	"testing"
)

// The channel is on unless RUNNER_CHANNEL=0; another value is an error
// naming the variable.
func TestChannelWanted(t *testing.T) {
	for _, tt := range []struct {
		value   string
		on      bool
		wantErr string
	}{
		{"", true, ""},
		{"1", true, ""},
		{"0", false, ""},
		{"yes", false, `RUNNER_CHANNEL="yes": want 1`},
	} {
		on, err := channelWanted(func(k string) string {
			if k == channelEnv {
				return tt.value
			}
			return ""
		})
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("RUNNER_CHANNEL=%q: error %v, want %q", tt.value, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || on != tt.on):
			t.Errorf("RUNNER_CHANNEL=%q: on %v, error %v; want on %v", tt.value, on, err, tt.on)
		}
	}
}

// The Kubernetes backend reads the same switch: a bad RUNNER_CHANNEL is a
// usage error naming it, and without the sandbox helper beside runner (as
// beside a test binary) the channel stays off.
func TestKubernetesOptionsChannel(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == channelEnv {
				return v
			}
			return ""
		}
	}
	log := slog.New(slog.DiscardHandler)
	if _, err := kubernetesOptions(&backendFlags{}, env("yes"), log); err == nil || !strings.Contains(err.Error(), "RUNNER_CHANNEL") {
		t.Errorf("RUNNER_CHANNEL=yes: error %v, want one naming RUNNER_CHANNEL", err)
	}
	opt, err := kubernetesOptions(&backendFlags{}, env("1"), log)
	if err != nil || opt.Channel || opt.Helper != "" {
		t.Errorf("RUNNER_CHANNEL=1 without a helper: channel %v, helper %q, error %v; want off, none, nil", opt.Channel, opt.Helper, err)
	}
}
