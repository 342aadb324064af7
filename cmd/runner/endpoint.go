package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/internal/cli"
)

// The model endpoint is checked before any sandbox starts, and watched
// while the run goes: this file builds its gate and says in one line what
// is wrong with it.

// endpoint returns the gate of the run's model endpoint: at most
// concurrency calls at once, outages waited for up to --outage-wait, every
// change told to report.
func (m *modelFlags) endpoint(concurrency int, report func(agent.EndpointChange)) (*agent.Endpoint, error) {
	prober, err := agent.NewOpenAI(m.openAIConfig(nil))
	if err != nil {
		return nil, &cli.ExitError{Code: cli.ExitUsage, Err: err}
	}
	return agent.NewEndpoint(agent.EndpointConfig{
		Name: agent.EndpointName(m.baseURL), MaxCalls: concurrency, OutageWait: m.outageWait,
		Probe: m.probe(prober), OnChange: report,
	}), nil
}

// openAIConfig is the configuration of every model of the run.
func (m *modelFlags) openAIConfig(gate *agent.Endpoint) agent.OpenAIConfig {
	// The key is read from the variable --api-key-env names, and from
	// nowhere else: when it is empty, no key is sent (not OPENAI_API_KEY,
	// which the client would read by itself).
	return agent.OpenAIConfig{
		BaseURL: m.baseURL, APIKey: m.apiKey, NoKey: m.apiKey == "", RequestTimeout: m.timeout, MaxRetries: m.maxRetries,
		UseMaxTokens: m.useMaxTokens, Endpoint: gate,
	}
}

// probe checks that the endpoint can be called: a key is set, unless the
// endpoint is on this machine (Ollama or vLLM may need none), and GET
// {base}/models answers without refusing it. Its errors are one line
// naming the endpoint (without credentials) and what to change.
func (m *modelFlags) probe(prober *agent.OpenAIModel) func(context.Context) error {
	name := agent.EndpointName(m.baseURL)
	return func(ctx context.Context) error {
		if m.apiKey == "" && !agent.IsLoopback(m.baseURL) {
			return fmt.Errorf("no API key for the model endpoint %s: %s is not set "+
				"(set it, to any value if the server needs none, or name another variable with --api-key-env)", name, m.apiKeyEnv)
		}
		err := prober.Probe(ctx)
		var refusal *agent.ModelError
		switch {
		case err == nil:
			return nil
		case errors.Is(err, agent.ErrAuth) && errors.As(err, &refusal):
			why := fmt.Sprintf("%d %s", refusal.StatusCode, http.StatusText(refusal.StatusCode))
			if refusal.Code != "" {
				why += ", " + refusal.Code
			}
			return fmt.Errorf("the model endpoint %s refused the API key in %s (%s)", name, m.apiKeyEnv, why)
		case errors.Is(err, agent.ErrUnreachable):
			return fmt.Errorf("the model endpoint %s %s: is the server running, and are --base-url or OPENAI_BASE_URL right?",
				name, oneLine(err.Error()))
		}
		return fmt.Errorf("the model endpoint %s: %s", name, oneLine(err.Error()))
	}
}

// oneLine joins the lines of s.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// endpointCheck is the opt-in check of the model endpoint by runner
// validate: the preflight of runner run, on demand.
type endpointCheck struct {
	enabled bool
	model   modelFlags
	ctx     context.Context
}

func (c *endpointCheck) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&c.enabled, "check-endpoint", false, "also check that the model endpoint answers and takes the API key (needs the network)")
	f.StringVar(&c.model.baseURL, "base-url", "", "Chat Completions API base `URL` to check (default $OPENAI_BASE_URL, else OpenAI)")
	f.StringVar(&c.model.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment `variable` holding the API key")
}

// complete reads what the environment gives.
func (c *endpointCheck) complete(ctx context.Context, getenv func(string) string) {
	c.ctx = ctx
	if c.model.baseURL == "" {
		c.model.baseURL = getenv("OPENAI_BASE_URL")
	}
	c.model.apiKey = getenv(c.model.apiKeyEnv)
}

// endpointResult is what the check found, as --json shows it.
type endpointResult struct {
	URL   string `json:"url"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// run checks the endpoint if asked to; nil when not.
func (c *endpointCheck) run() *endpointResult {
	if !c.enabled {
		return nil
	}
	r := &endpointResult{URL: agent.EndpointName(c.model.baseURL), OK: true}
	prober, err := agent.NewOpenAI(c.model.openAIConfig(nil))
	if err == nil {
		gate := agent.NewEndpoint(agent.EndpointConfig{Probe: c.model.probe(prober)})
		err = gate.Check(c.ctx)
		gate.Close()
	}
	if err != nil {
		r.OK, r.Error = false, err.Error()
	}
	return r
}

// ok is true unless the check was made and failed.
func (r *endpointResult) ok() bool { return r == nil || r.OK }

// report prints the result (unless in JSON, already printed) and turns a
// failure into exit code 2.
func (r *endpointResult) report(p *cli.Printer, json bool) error {
	switch {
	case r == nil:
		return nil
	case !r.OK:
		return &cli.ExitError{Code: cli.ExitUsage, Err: errors.New(r.Error)}
	case !json:
		p.Success("model endpoint %s answers", r.URL)
	}
	return nil
}
