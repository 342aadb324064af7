package main

import "testing"

// --final-reserve 0 means no reserve, which the agent spells as a negative
// share (its zero is the default).
func TestFinalReserveFlag(t *testing.T) {
	for _, tt := range []struct{ flag, want float64 }{{0, -1}, {0.03, 0.03}, {0.5, 0.5}} {
		m := modelFlags{finalReserve: tt.flag, contextWindow: 128000, compactAt: 0.8}
		if got := m.agentConfig().FinalReserve; got != tt.want {
			t.Errorf("--final-reserve %v: Config.FinalReserve = %v, want %v", tt.flag, got, tt.want)
		}
	}
}
