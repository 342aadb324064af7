package batch

import "strings"

// ConfigError lists the problems found before a run started, one a line;
// errors.Is(err, ErrConfig) holds for it.
type ConfigError struct {
	Problems []string
}

// Error is "configuration error:" and the problems, each on a line of its
// own, indented.
func (e *ConfigError) Error() string { return strings.Join(e.ErrorLines(), "\n") }

// ErrorLines returns the lines of Error, for a printer that escapes each
// line on its own.
func (e *ConfigError) ErrorLines() []string {
	lines := []string{ErrConfig.Error() + ":"}
	for _, p := range e.Problems {
		lines = append(lines, "  "+p)
	}
	return lines
}

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }
