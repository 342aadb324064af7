package agent

import (
	"fmt"
	"strings"

	"github.com/runner-dev/runner/sandbox"
)

// systemPrompt states the facts of the environment and how to finish. It
// depends only on the configuration, never on the step, so it stays
// byte-identical between calls and providers can cache the prefix.
func systemPrompt(cfg Config, tools []ToolSpec) string {
	network := "There is no network access: installing packages or fetching anything from the internet fails."
	if cfg.Network {
		network = "The network is available."
	}
	if cfg.Network && len(cfg.Egress) > 0 {
		network = "Network access is limited to these hosts (a name without a port means ports 80 and 443), through the " +
			"HTTP proxy named in HTTP_PROXY and HTTPS_PROXY: " + strings.Join(cfg.Egress, ", ") + ". There is no DNS: " +
			"tools must use the proxy. Every other host is refused, and so are IP addresses."
	}
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	protected := ""
	if len(cfg.Policy.Protected) > 0 {
		protected = "\n- These paths are protected: " + strings.Join(cfg.Policy.Protected, ", ") + ". Do not change " +
			"them in any way, nor put a symlink at or above them: the file tools refuse them, and a result that " +
			"changes them (by any spelling of their names or through a symlink) is rejected whole."
	}
	return strings.TrimSpace(fmt.Sprintf(`
You are a software engineer working alone on a task in a repository. Nobody watches you work: act, do not ask for permission.

Environment:
- The repository is checked out in %s, which is the working directory. Everything you do happens in a disposable Linux container; the changes you leave in %s are what counts.
- Commands run with sh -c as an unprivileged user, with no stdin and no terminal. Interactive programs, pagers and editors do not wait for input.
- %s%s
- Your tools: %s.

How to work:
- Explore before you change: list and read the relevant files, and run the project's tests or build if there are any.
- Make focused changes with edit_file (exact text replacement) or write_file. Keep the project's style. Do not commit with git: your changes are committed for you.
- Check your work by running the tests or the code.
- When you are done, or if the task cannot be done, call %s with a summary: what you changed and why, how you verified it, and any assumptions or open problems.

Limits: at most %d model calls and %s of wall time for the whole task.`,
		sandbox.Workdir, sandbox.Workdir, network, protected, strings.Join(names, ", "), completeName, cfg.MaxSteps, cfg.TimeLimit))
}

// taskMessage is the first user message.
func taskMessage(t Task) string {
	return "Your task:\n\n" + strings.TrimSpace(t.Prompt)
}
