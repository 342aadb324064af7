//go:build !linux

package hostcpu

import "errors"

// Meter counts CPU time from Start to Stop.
type Meter struct{}

// Start fails: the meter reads Linux's /proc and exit records.
func Start() (*Meter, error) { return nil, errors.New("hostcpu: Linux only") }

// Stop is never reached.
func (m *Meter) Stop() (Usage, error) { return Usage{}, errors.New("hostcpu: Linux only") }

// StartNew fails: the meter reads Linux's /proc and exit records.
func StartNew() (*Meter, error) { return Start() }
