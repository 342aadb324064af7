package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/runner-dev/runner/internal/provider"
	"github.com/runner-dev/runner/internal/redact"
)

// OpenAIConfig configures an OpenAIModel. Zero values select the defaults
// documented on each field.
type OpenAIConfig struct {
	// BaseURL of a Chat Completions API, including the version path
	// ("https://api.openai.com/v1"). Empty means OPENAI_BASE_URL, else the
	// OpenAI API.
	BaseURL string
	// APIKey is sent as a bearer token. Empty means OPENAI_API_KEY, unless
	// NoKey is set.
	APIKey string
	// NoKey sends no key at all, whatever the environment holds: for a
	// server that needs none, when the variable the caller reads the key
	// from is empty. It cannot be combined with APIKey.
	NoKey bool
	// RequestTimeout bounds each attempt, response body included; an attempt
	// that outlives it is abandoned and retried. Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRetries is how many times a failed attempt is retried; zero means
	// none (DefaultMaxRetries suits unattended runs).
	MaxRetries int
	// MaxRetryWait caps the wait before a retry, whether it comes from
	// backoff or from the server's Retry-After. Zero means
	// DefaultMaxRetryWait.
	MaxRetryWait time.Duration
	// HTTPClient carries the requests; nil means the SDK's default client.
	HTTPClient *http.Client
	// Provider selects the request rules of the service behind BaseURL
	// (see internal/provider): where the completion limit goes, what
	// reasoning and per-call data go back with the history. Empty or
	// provider.Auto names the service from BaseURL's host.
	Provider provider.Name
	// UseMaxTokens sends the reply cap as max_tokens only, whatever the
	// provider's rule, for compatible servers that only know the older
	// field.
	UseMaxTokens bool
	// Adaptations holds what the run learned from the server's refusals
	// (a field it does not accept, one it says is missing); models of a run
	// that share an endpoint should share it. Nil means one of the model's
	// own.
	Adaptations *Adaptations
	// OnAdapt, if set, is told each change of the request rules made in
	// answer to a refusal, before the request is sent again.
	OnAdapt func(note string)
	// OnRetry, if set, is called after each failed attempt that will be
	// retried: attempt counts from 1, err is why it failed (free of the API
	// key), wait is the pause before the next attempt.
	OnRetry func(attempt int, err error, wait time.Duration)
	// Sleep waits between attempts; nil means a timer that stops early when
	// ctx ends. Tests replace it to avoid real waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter turns a backoff into the actual wait; nil keeps half of it and
	// randomises the rest. It is not applied to a server's Retry-After.
	Jitter func(d time.Duration) time.Duration
	// Endpoint is the run's gate for this endpoint, shared by the models of
	// every task: it holds calls while the endpoint is down and spaces them
	// while it rate-limits. Nil lets every attempt through.
	Endpoint *Endpoint
}

// OpenAIModel is a Model served by an OpenAI Chat Completions endpoint
// (OpenAI itself or a compatible server). It is safe for concurrent use.
type OpenAIModel struct {
	client  openai.Client
	policy  retryPolicy
	profile provider.Profile
	learned *Adaptations
	onAdapt func(string)
	// secret hides the API key, and anything shaped like a key, from the
	// errors and the server's messages.
	secret *redact.Redactor
}

var _ Model = (*OpenAIModel)(nil)

// NewOpenAI returns a client for cfg. Explicit config values win over the
// environment; the SDK's own retries are disabled in favour of the policy
// described on OpenAIConfig.
func NewOpenAI(cfg OpenAIConfig) (*OpenAIModel, error) {
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("new openai model: max retries %d is negative", cfg.MaxRetries)
	}
	if cfg.RequestTimeout < 0 || cfg.MaxRetryWait < 0 {
		return nil, fmt.Errorf("new openai model: negative timeout or retry wait")
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("new openai model: base URL %q is not an http(s) URL", cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	key := cfg.APIKey
	switch {
	case cfg.NoKey && key != "":
		return nil, fmt.Errorf("new openai model: an API key was given with NoKey")
	case cfg.NoKey:
		// The client reads keys from the environment first; drop them.
		opts = append(opts, option.WithAPIKey(""), option.WithAdminAPIKey(""),
			option.WithHeaderDel("Authorization"))
	case key != "":
		opts = append(opts, option.WithAPIKey(key))
	default:
		key = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	m := &OpenAIModel{
		client:  openai.NewClient(opts...),
		profile: provider.Resolve(cfg.Provider, baseURL),
		learned: cfg.Adaptations,
		onAdapt: cfg.OnAdapt,
		secret:  redact.New(key),
	}
	if cfg.UseMaxTokens {
		m.profile.Cap = provider.CapMaxTokens
	}
	if m.learned == nil {
		m.learned = &Adaptations{}
	}
	m.policy = retryPolicy{
		maxRetries:     cfg.MaxRetries,
		attemptTimeout: orDefault(cfg.RequestTimeout, DefaultRequestTimeout),
		maxWait:        orDefault(cfg.MaxRetryWait, DefaultMaxRetryWait),
		firstWait:      firstRetryWait,
		jitter:         cfg.Jitter,
		sleep:          cfg.Sleep,
		onRetry:        cfg.OnRetry,
		redact:         m.secret.Error,
		gate:           cfg.Endpoint,
	}
	if m.policy.jitter == nil {
		m.policy.jitter = equalJitter
	}
	if m.policy.sleep == nil {
		m.policy.sleep = sleepContext
	}
	return m, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Complete implements Model. A refusal (400 or 422) that names a request
// field the provider's rules can change — a completion-limit field the
// server does not accept, reasoning it wants back or refuses — is answered
// once by the change, which holds for the rest of the run (see
// Adaptations), and the request is sent again.
func (m *OpenAIModel) Complete(ctx context.Context, req Request) (Response, error) {
	for {
		rules := m.learned.rules(m.profile)
		params, sent, err := m.params(req, rules)
		if err != nil {
			return Response{}, notSent{fmt.Errorf("chat completion: %w", err)}
		}
		body, err := json.Marshal(params)
		if err != nil {
			return Response{}, notSent{fmt.Errorf("chat completion: encode request: %w", err)}
		}
		cc, err := retry(ctx, m.policy, func(actx context.Context) (*wireCompletion, error) {
			if req.Attempts == nil {
				return m.send(actx, params)
			}
			limit, err := req.Attempts.Begin()
			if err != nil {
				return nil, err
			}
			p := params
			setCompletionLimit(&p, rules.cap, limit)
			cc, err := m.send(actx, p)
			if err != nil {
				req.Attempts.Failed(m.secret.Error(err))
			}
			return cc, err
		})
		if err == nil {
			return cc.toResponse(len(body)), nil
		}
		var me *ModelError
		if errors.As(err, &me) && ctx.Err() == nil {
			if note, ok := m.learned.adapt(me, sent, rules); ok {
				if m.onAdapt != nil {
					m.onAdapt(note)
				}
				continue
			}
		}
		return Response{}, m.secret.Error(fmt.Errorf("chat completion: %w", err))
	}
}

// KeepsCompletionCap implements CapKeeper from the provider's profile.
func (m *OpenAIModel) KeepsCompletionCap() bool { return m.profile.CapHonoured }

// send makes one attempt and sorts its failure into a *ModelError (the
// server refused), ErrBadResponse (success status, unusable body) or the
// transport's error.
func (m *OpenAIModel) send(ctx context.Context, params openai.ChatCompletionNewParams) (*wireCompletion, error) {
	var raw []byte
	var res *http.Response
	_, err := m.client.Chat.Completions.New(ctx, params,
		option.WithResponseBodyInto(&raw), option.WithResponseInto(&res))
	if res != nil && res.StatusCode >= 400 {
		return nil, m.refusal(res)
	}
	if err != nil && res != nil && ctx.Err() == nil {
		// The status came, the body did not arrive whole.
		return nil, fmt.Errorf("%w: the body was cut short: %w", ErrBadResponse, err)
	}
	if err != nil {
		return nil, err
	}
	cc, err := decodeCompletion(raw)
	if err != nil {
		if len(raw) == 0 {
			return nil, fmt.Errorf("%w: the body is empty", ErrBadResponse)
		}
		return nil, fmt.Errorf("%w: %v; body starts %q (is the base URL a Chat Completions API?)",
			ErrBadResponse, err, m.secret.String(excerpt(raw)))
	}
	if len(cc.Choices) == 0 {
		return nil, fmt.Errorf("%w: no choices in body starting %q", ErrBadResponse, m.secret.String(excerpt(raw)))
	}
	if cc.Choices[0].Message == nil {
		return nil, fmt.Errorf("%w: no message in the first choice of body starting %q", ErrBadResponse, m.secret.String(excerpt(raw)))
	}
	return cc, nil
}

// refusal turns an HTTP error response into a *ModelError.
func (m *OpenAIModel) refusal(res *http.Response) *ModelError {
	var body []byte
	if res.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(res.Body, 64<<10))
	}
	e := parseErrorBody(body)
	e.StatusCode = res.StatusCode
	e.Message = m.secret.String(e.Message)
	e.body = m.secret.String(string(body[:min(len(body), 4<<10)]))
	e.RetryAfter, e.HasRetryAfter = retryAfter(res.Header, time.Now())
	e.kind = refusalKind(e)
	return e
}

// params maps req onto the SDK's request parameters under rules, and says
// which adaptable fields it sent.
func (m *OpenAIModel) params(req Request, rules wireRules) (openai.ChatCompletionNewParams, sentFields, error) {
	var sent sentFields
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, sent, errors.New("request names no model")
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, sent, errors.New("request has no messages")
	}
	p := openai.ChatCompletionNewParams{Model: req.Model}
	for i, msg := range req.Messages {
		wire, err := messageParam(msg, rules, &sent)
		if err != nil {
			return p, sent, fmt.Errorf("message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, wire)
	}
	for _, spec := range req.Tools {
		tool, err := toolParam(spec)
		if err != nil {
			return p, sent, fmt.Errorf("tool %q: %w", spec.Name, err)
		}
		p.Tools = append(p.Tools, tool)
	}
	setCompletionLimit(&p, rules.cap, req.MaxCompletionTokens)
	if req.MaxCompletionTokens > 0 || req.Attempts != nil {
		sent.maxTokens = rules.cap != provider.CapMaxCompletionTokens
		sent.maxCompletionTokens = rules.cap != provider.CapMaxTokens
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	return p, sent, nil
}

// setCompletionLimit caps the reply at limit tokens, in the field(s) the
// server reads; zero leaves the cap to the server.
func setCompletionLimit(p *openai.ChatCompletionNewParams, field provider.CapField, limit int64) {
	p.MaxTokens, p.MaxCompletionTokens = param.Opt[int64]{}, param.Opt[int64]{} // omitted
	if limit <= 0 {
		return
	}
	if field != provider.CapMaxCompletionTokens {
		p.MaxTokens = openai.Int(limit)
	}
	if field != provider.CapMaxTokens {
		p.MaxCompletionTokens = openai.Int(limit)
	}
}

func messageParam(msg Message, rules wireRules, sent *sentFields) (openai.ChatCompletionMessageParamUnion, error) {
	switch msg.Role {
	case RoleSystem:
		p := openai.ChatCompletionSystemMessageParam{}
		p.Content.OfString = openai.String(msg.Content)
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfSystem: &p}, nil
	case RoleUser:
		p := openai.ChatCompletionUserMessageParam{}
		p.Content.OfString = openai.String(msg.Content)
		if msg.Name != "" {
			p.Name = openai.String(msg.Name)
		}
		return openai.ChatCompletionMessageParamUnion{OfUser: &p}, nil
	case RoleAssistant:
		p := openai.ChatCompletionAssistantMessageParam{}
		// The API wants content unless the message calls tools.
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			p.Content.OfString = openai.String(msg.Content)
		}
		for _, call := range msg.ToolCalls {
			if call.ID == "" {
				return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool call %q has no id", call.Name)
			}
			fn := &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: wireCallID(call.ID, rules),
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      call.Name,
					Arguments: call.Arguments,
				},
			}
			if rules.echoExtra && len(call.Extra) > 0 {
				fn.SetExtraFields(map[string]any{"extra_content": call.Extra})
				sent.extra = true
			}
			p.ToolCalls = append(p.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: fn})
		}
		if extra := reasoningFields(msg, rules, sent); len(extra) > 0 {
			p.SetExtraFields(extra)
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &p}, nil
	case RoleTool:
		if msg.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, errors.New("tool message answers no tool call id")
		}
		return openai.ToolMessage(msg.Content, wireCallID(msg.ToolCallID, rules)), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// reasoningFields are the fields that carry an assistant message's
// reasoning back under rules: its text in the field it came in, exactly as
// received (and reasoning_content, empty, on a message that came with none,
// when the provider wants it on every turn), and reasoning_details and the
// message's extra_content byte for byte.
func reasoningFields(msg Message, rules wireRules, sent *sentFields) map[string]any {
	extra := map[string]any{}
	if rules.echoReasoning {
		switch {
		case msg.ReasoningField != "":
			extra[msg.ReasoningField] = msg.Reasoning
		case rules.reasoningOnEveryTurn:
			extra["reasoning_content"] = ""
		}
		for f := range extra {
			if !slices.Contains(sent.reasoning, f) {
				sent.reasoning = append(sent.reasoning, f)
			}
		}
	}
	if rules.echoDetails && len(msg.ReasoningDetails) > 0 {
		extra["reasoning_details"] = msg.ReasoningDetails
		sent.details = true
	}
	if rules.echoExtra && len(msg.Extra) > 0 {
		extra["extra_content"] = msg.Extra
		sent.extra = true
	}
	return extra
}

func toolParam(spec ToolSpec) (openai.ChatCompletionToolUnionParam, error) {
	if spec.Name == "" {
		return openai.ChatCompletionToolUnionParam{}, errors.New("tool has no name")
	}
	def := shared.FunctionDefinitionParam{Name: spec.Name}
	if spec.Description != "" {
		def.Description = openai.String(spec.Description)
	}
	if len(spec.Parameters) > 0 {
		var schema shared.FunctionParameters
		if err := json.Unmarshal(spec.Parameters, &schema); err != nil || schema == nil {
			return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters are not a JSON schema object: %v", err)
		}
		def.Parameters = schema
	}
	return openai.ChatCompletionFunctionTool(def), nil
}

// tokensOf estimates the tokens in n bytes of text at four bytes a token.
func tokensOf(n int) int64 { return int64(n+3) / 4 }
