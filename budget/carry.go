package budget

import "fmt"

// Carry records spending made before the meter existed, such as the
// attempts of a task that an earlier, stopped run finished and this run
// takes over: it counts in m and its ancestors as spent, with its calls,
// so that a cap covers it. It may leave a meter over its cap, which then
// refuses every further call.
func (m *Meter) Carry(cost Nanodollars, u Usage, calls int64) error {
	if cost < 0 || calls < 0 {
		return fmt.Errorf("carry: negative amount %s or calls %d", cost, calls)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for a := m; a != nil; a = a.parent {
		a.spent = addSat(a.spent, cost)
		a.usage = a.usage.Add(u)
		a.calls += calls
	}
	return nil
}
