package main

import (
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
