package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/budget"
	"github.com/runner-dev/runner/sandbox"
)

// Agent works on one task in one sandbox. Run starts the work; Continue
// resumes it with feedback (a failed check, say) within the same limits.
// An Agent is not safe for concurrent use.
type Agent struct {
	cfg    Config
	model  Model
	sb     sandbox.Sandbox
	task   Task
	tools  map[string]Tool
	specs  []ToolSpec
	system string

	history     []Message
	start       time.Time
	limit       *timeLimit    // the time limit of the loop running
	heldBefore  time.Duration // held time credited in earlier loops
	steps       int
	questions   []string
	malformed   int // malformed tool calls in a row
	compactions int
	// known is the exact prompt token count the server reported for
	// history[:knownLen]; knownLen 0 means none is known.
	known    int64
	knownLen int
	bounds   promptBounds
	fellBack bool // the tokenizer was dropped and the event recorded
	// finalNoticed: the model was told that the budget left pays only
	// for a final call.
	finalNoticed bool
	sub          delegation // see delegate.go
}

// New prepares an agent; nothing runs until Run.
func New(model Model, sb sandbox.Sandbox, task Task, cfg Config) *Agent {
	cfg = cfg.withDefaults()
	a := &Agent{cfg: cfg, model: model, sb: sb, task: task, tools: map[string]Tool{},
		bounds: newPromptBounds(cfg.Price.Tokenizer)}
	tools := []Tool{
		listFiles{}, readFile{}, writeFile{}, editFile{},
		runCommand{limit: a.timeLeft},
		askQuestion{ask: cfg.Ask, asked: &a.questions},
	}
	tools = append(append(append(tools, a.delegationTools()...), cfg.HostTools...), completeTool{})
	for _, t := range tools {
		spec := t.Spec()
		if _, dup := a.tools[spec.Name]; dup {
			continue // a host tool never shadows a built-in one
		}
		a.tools[spec.Name] = t
		a.specs = append(a.specs, spec)
	}
	a.system = systemPrompt(cfg, a.specs)
	return a
}

// Run works on the task until it is complete or a limit is reached.
func (a *Agent) Run(ctx context.Context) Outcome {
	a.start = a.cfg.Now()
	names := make([]string, len(a.specs))
	for i, s := range a.specs {
		names[i] = s.Name
	}
	a.cfg.Trajectory.Record(Event{Type: EventTask, Text: a.task.Prompt, Tools: names, Model: a.cfg.Model,
		Protocol: protocolOf(a.model)})
	a.add(Message{Role: RoleSystem, Content: a.system})
	a.add(Message{Role: RoleUser, Content: taskMessage(a.task)})
	return a.loop(ctx)
}

// Continue gives the model feedback on its finished work (for instance a
// failed check) and lets it work again, within what is left of the limits.
func (a *Agent) Continue(ctx context.Context, feedback string) Outcome {
	if a.start.IsZero() {
		return a.Run(ctx)
	}
	a.add(Message{Role: RoleUser, Content: feedback})
	return a.loop(ctx)
}

// History returns the current history (compacted, if it was).
func (a *Agent) History() []Message { return append([]Message(nil), a.history...) }

func (a *Agent) add(m Message) {
	a.history = append(a.history, m)
	if m.Role == RoleSystem || m.Role == RoleUser {
		a.cfg.Trajectory.Record(Event{Type: EventMessage, Step: a.steps, Message: wireMessage(m)})
	}
}

func (a *Agent) timeLeft() time.Duration {
	return a.start.Add(a.cfg.TimeLimit + a.heldTime()).Sub(a.cfg.Now())
}

// heldTime is how long model calls were held by the endpoint gate, as far
// as it does not count against the time limit.
func (a *Agent) heldTime() time.Duration {
	if a.limit != nil {
		return a.heldBefore + a.limit.heldTime()
	}
	return a.heldBefore
}

// withTimeLimit returns the context of one loop: it ends at the time limit,
// pushed later by the time calls are held by the endpoint gate.
func (a *Agent) withTimeLimit(parent context.Context) (context.Context, func()) {
	credit := a.cfg.MaxHeldTime - a.heldBefore
	limit, stop := newTimeLimit(parent, a.start.Add(a.cfg.TimeLimit+a.heldBefore), credit, a.cfg.Trajectory.Record)
	a.limit = limit
	return limit, func() {
		stop()
		a.heldBefore += limit.heldTime()
		a.limit = nil
	}
}

func (a *Agent) loop(parent context.Context) Outcome {
	ctx, cancel := a.withTimeLimit(parent)
	defer cancel()
	contextRetries := 0
	for {
		if err := a.compact(ctx, false); err != nil {
			return a.finish(parent, err, "")
		}
		resp, err := a.call(ctx, a.history, a.specs, a.cfg.MaxCompletionTokens, "")
		if errors.Is(err, ErrContextLength) && !a.cfg.NoCompaction && contextRetries < 2 {
			contextRetries++
			if cerr := a.compact(ctx, true); cerr != nil {
				return a.finish(parent, cerr, "")
			}
			continue
		}
		if err != nil {
			return a.finish(parent, err, "")
		}
		contextRetries = 0
		a.history = append(a.history, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			if resp.FinishReason == FinishLength {
				a.malformed++
				if a.malformed >= a.cfg.MaxMalformed {
					return a.finish(parent, a.tooManyMalformed(), "")
				}
				a.add(Message{Role: RoleUser, Content: "Your reply was cut off at the length limit. Continue, in shorter steps."})
				continue
			}
			return a.finish(parent, nil, resp.Message.Content)
		}
		summary, done, err := a.runTools(ctx, resp.Message.ToolCalls, resp.FinishReason == FinishLength)
		if err != nil {
			return a.finish(parent, err, "")
		}
		if done {
			return a.finish(parent, nil, summary)
		}
	}
}

// errStepLimit and errTimeLimit end a run at a limit.
var (
	errStepLimit = errors.New("step limit reached")
	errTimeLimit = errors.New("time limit reached")
)

// admit is the one place where the limits are checked before a model call:
// steps, wall time and money. It returns the budget reservation to settle,
// never nil unless err is set. prefixKnown tells whether msgs is the history
// (see promptBound).
func (a *Agent) admit(ctx context.Context, msgs []Message, tools []ToolSpec, maxCompletion int64, prefixKnown bool) (held, error) {
	if a.steps >= a.cfg.MaxSteps {
		return held{}, fmt.Errorf("%w: %d model calls", errStepLimit, a.steps)
	}
	if err := ctx.Err(); err != nil {
		return held{}, err
	}
	// The run's clock may pass the limit before the context's deadline,
	// which runs on the real clock, fires.
	if a.timeLeft() <= 0 {
		return held{}, fmt.Errorf("%w: %s", errTimeLimit, a.cfg.TimeLimit)
	}
	bound, newPart, trial := a.promptBound(msgs, tools, prefixKnown)
	most, least := a.completionReserve(maxCompletion)
	res, err := a.cfg.Meter.ReserveLeaving(a.finalReserve(), a.cfg.Price, bound, most, least)
	if err != nil {
		return held{}, err
	}
	return held{res: res, bound: bound, newPart: newPart, trial: trial}, nil
}

// held is a call's reservation with the prompt bound it was made for, and
// the part of that bound no count of the server's covered.
type held struct {
	res                   *budget.Reservation
	bound, newPart, trial int64
}

// requestEvent is the trajectory's record of a reservation.
func (a *Agent) requestEvent(h held, msgs int, maxCompletion int64, attempt int, purpose string) Event {
	by, margin := a.bounds.method()
	return Event{
		Type: EventRequest, Step: a.steps, Attempt: attempt, Messages: msgs, PromptBound: h.bound,
		BoundTokenizer: by, BoundMargin: margin,
		MaxCompletionTokens: min(h.res.CompletionTokens(), maxCompletion), ReservedUSD: h.res.Amount().USD(), Purpose: purpose,
	}
}

// call makes one model call, reserving its cost first and charging the
// reported usage after. purpose is "" for a step of the task, and msgs is
// then the history. Every attempt the model makes is paid for before it is
// sent (see attempts), and a failed attempt that may have been billed is
// charged at its bound. A reply that cost more than its reservation ends
// the run: the error wraps budget.ErrExhausted and budget.ErrOverrun.
//
// When a step no longer fits the budget without the reserve kept for the
// final call (Config.FinalReserve), the model is told once how much is
// left, in a user message added to the history, and this and later calls
// may use the reserve.
func (a *Agent) call(ctx context.Context, msgs []Message, tools []ToolSpec, maxCompletion int64, purpose string) (Response, error) {
	h, err := a.admit(ctx, msgs, tools, maxCompletion, purpose == "")
	if err != nil && purpose == "" && a.cfg.Delegate.depth == 0 && a.finalReserve() > 0 && errors.Is(err, budget.ErrExhausted) && !errors.Is(err, budget.ErrOverrun) {
		a.finalNoticed = true
		a.add(Message{Role: RoleUser, Content: a.finalNotice()})
		msgs = a.history
		h, err = a.admit(ctx, msgs, tools, maxCompletion, true)
	}
	if err != nil {
		return Response{}, err
	}
	res, bound := h.res, h.bound
	a.steps++
	a.cfg.Trajectory.Record(a.requestEvent(h, len(msgs), maxCompletion, 0, purpose))
	pay := &attempts{a: a, res: res, held: h, maxCompletion: maxCompletion, purpose: purpose}
	defer pay.abandon()
	begin := a.cfg.Now()
	resp, err := a.model.Complete(ctx, Request{
		Model: a.cfg.Model, Messages: msgs, Tools: tools, MaxCompletionTokens: min(res.CompletionTokens(), maxCompletion),
		Attempts: pay,
	})
	if err != nil {
		if pay.res != nil {
			// No attempt reported this failure (a model that does not
			// report its attempts, or one that failed before sending).
			reserved := pay.res.Amount()
			cost, atBound := pay.settle(err)
			a.cfg.Trajectory.Record(Event{Type: EventResponse, Step: a.steps, Error: err.Error(), Purpose: purpose,
				CostUSD: cost.USD(), ReservedUSD: reserved.USD(), ChargedAtBound: atBound})
		}
		return Response{}, err
	}
	res, pay.res = pay.res, nil
	if res == nil {
		return Response{}, fmt.Errorf("model %s: a reply came for an attempt that was not paid for", a.cfg.Model)
	}
	charged := budget.Usage{
		PromptTokens: resp.Usage.PromptTokens, CachedTokens: resp.Usage.CachedTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
	}
	var overrun error
	var ratio float64
	cost := a.cfg.Price.Cost(charged)
	if resp.UsageEstimated {
		// No usage from the server: charge the bounds, which are safe
		// (reasoning tokens are billed but not seen in the reply).
		charged = budget.Usage{PromptTokens: bound, CompletionTokens: res.CompletionTokens()}
		cost = res.Amount()
		res.CommitBound()
	} else {
		ratio = a.calibrate(resp.Usage.PromptTokens, bound, h.newPart, h.trial)
		if purpose == "" {
			a.known, a.knownLen = resp.Usage.PromptTokens, len(msgs)
		}
		overrun = res.Commit(charged)
	}
	generated := assignCallIDs(a.history, &resp.Message, a.steps)
	ev := Event{
		Type: EventResponse, Step: a.steps, Message: wireMessage(resp.Message), FinishReason: resp.FinishReason,
		Usage: &resp.Usage, UsageEstimated: resp.UsageEstimated, ChargedAtBound: resp.UsageEstimated,
		CostUSD: cost.USD(), ReservedUSD: res.Amount().USD(), PromptBound: bound, PromptCountRatio: ratio,
		Model: resp.Model, LatencyMS: a.cfg.Now().Sub(begin).Milliseconds(), Purpose: purpose,
		GeneratedCallIDs: generated,
	}
	if pay.n > 1 {
		ev.Attempt = pay.n
	}
	if overrun != nil {
		ev.Error = overrun.Error()
		if over := (*budget.OverrunError)(nil); errors.As(overrun, &over) {
			ev.OverrunUSD = over.Excess.USD()
		}
		a.cfg.Trajectory.Record(ev)
		return Response{}, fmt.Errorf("%w: the model API reported more usage than the call's bound, so no further call is made: %w",
			budget.ErrExhausted, overrun)
	}
	a.cfg.Trajectory.Record(ev)
	return resp, nil
}

// attempts pays for the attempts of one model call (see AttemptBudget): the
// first with the reservation admit made, each retry with a reservation of
// its own made before it is sent, so that charging a failed attempt that may
// have been billed never takes spending past a cap.
type attempts struct {
	a       *Agent
	res     *budget.Reservation // for the attempt in flight or next; nil once settled
	held    held                // the first attempt's reservation and bound
	purpose string
	// maxCompletion is the completion limit asked for, before the budget
	// lowers it.
	maxCompletion int64
	n             int // attempts begun
}

// Begin implements AttemptBudget.
func (p *attempts) Begin() (int64, error) {
	p.n++
	if p.res == nil {
		most, least := p.a.completionReserve(p.maxCompletion)
		res, err := p.a.cfg.Meter.ReserveLeaving(p.a.finalReserve(), p.a.cfg.Price, p.held.bound, most, least)
		if err != nil {
			return 0, fmt.Errorf("attempt %d: %w", p.n, err)
		}
		p.res = res
		p.a.cfg.Trajectory.Record(p.a.requestEvent(held{res: res, bound: p.held.bound}, 0, p.maxCompletion, p.n, p.purpose))
	}
	return min(p.res.CompletionTokens(), p.maxCompletion), nil
}

// Failed implements AttemptBudget: it settles the failed attempt and
// records what it cost.
func (p *attempts) Failed(err error) {
	if p.res == nil {
		return
	}
	reserved := p.res.Amount()
	cost, atBound := p.settle(err)
	p.a.cfg.Trajectory.Record(Event{Type: EventResponse, Step: p.a.steps, Attempt: p.n, Error: err.Error(),
		Purpose: p.purpose, CostUSD: cost.USD(), ReservedUSD: reserved.USD(), ChargedAtBound: atBound})
}

// abandon settles a reservation still held when the call ends other than
// by returning (a panic): at its bound, as the attempt may have been sent.
func (p *attempts) abandon() {
	if p.res != nil {
		p.res.CommitBound()
		p.res = nil
	}
}

// settle charges the reservation held at its bound when the attempt that
// failed with err may have been billed, and releases it otherwise.
func (p *attempts) settle(err error) (cost budget.Nanodollars, atBound bool) {
	res := p.res
	p.res = nil
	if mayHaveBeenBilled(err) {
		res.CommitBound()
		return res.Amount(), true
	}
	res.Release()
	return 0, false
}

// completionReserve is the range of completion tokens a call's reservation
// may grant: the limit asked for, lowered to what the budget can pay down to
// the least worth calling for. For a model whose server does not keep to the
// limit it is sent (see CapKeeper), the limit is still sent, but the
// reservation covers a reply as long as the whole context window, and
// nothing less: a reply cannot be longer than the window unless the server
// shifts its context, and a reply longer than the reservation is an
// overrun that ends the run.
func (a *Agent) completionReserve(asked int64) (most, least int64) {
	if k, ok := a.model.(CapKeeper); ok && !k.KeepsCompletionCap() {
		w := max(a.cfg.ContextWindow, asked)
		return w, w
	}
	return asked, a.cfg.MinCompletionTokens
}

// messageSizes returns the JSON size of each message, which bounds its
// tokens (see budget.TokensUpperBound).
func messageSizes(msgs []Message) []int {
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		b, _ := json.Marshal(wireMessage(m))
		sizes[i] = len(b)
	}
	return sizes
}

// runTools runs the calls of one reply in order and appends their results.
// done is set when the model called complete; err ends the run.
func (a *Agent) runTools(ctx context.Context, calls []ToolCall, cutOff bool) (summary string, done bool, err error) {
	for _, c := range calls {
		begin := a.cfg.Now()
		var out, blocked, approval string
		isErr, malformed := false, false
		tool, known := a.tools[c.Name]
		switch {
		case done:
			out, isErr = "Not run: the task was already marked complete by an earlier call.", true
		case cutOff:
			out, isErr, malformed = "Error: your reply was cut off at the length limit, so this call was not run. "+
				"Make the call again with shorter arguments (write a large file in parts, for example).", true, true
		case c.Unreadable != "":
			out, isErr, malformed = "Error: "+c.Unreadable+". The call was not run.", true, true
		case !known:
			out, isErr, malformed = fmt.Sprintf("Error: there is no tool %q. The tools are: %s.", c.Name, a.toolNames()), true, true
		case !json.Valid([]byte(orEmptyObject(c.Arguments))):
			out, isErr, malformed = "Error: the arguments are not valid JSON; the call was not run. Send a JSON object.", true, true
		default:
			if blocked = a.refusal(ctx, c); ctx.Err() != nil {
				return "", false, ctx.Err()
			}
			if blocked != "" {
				out, isErr = "Blocked by the task's policy: "+blocked+". The call was not run; do not retry it, "+
					"find another way or explain in your summary why the task needs it.", true
				break
			}
			req, ans, aerr := a.approval(ctx, c)
			if aerr != nil {
				return "", false, aerr
			}
			if req != nil {
				approval = approvalRecord(ans)
			}
			if !ans.Allow {
				reason := strings.TrimSpace(ans.Reason)
				if reason == "" {
					reason = "no reason given"
				}
				blocked = "not approved by the person attending the run: " + reason
				out, isErr = "Not approved by the person attending the run, who said: "+reason+
					". The call was not run; take that into account and go on.", true
				break
			}
			var cerr error
			a.sub.callID = c.ID
			out, cerr = tool.Call(ctx, a.sb, json.RawMessage(orEmptyObject(c.Arguments)))
			var argErr *errArgs
			switch {
			case ctx.Err() != nil:
				return "", false, ctx.Err()
			case errors.Is(cerr, ErrSandbox), errors.Is(cerr, ErrNotApproved):
				return "", false, cerr
			case errors.As(cerr, &argErr):
				out, isErr, malformed = "Error: "+argErr.msg+"; the call was not run.", true, true
			case cerr != nil:
				out, isErr = "Error: "+cerr.Error(), true
			case c.Name == completeName:
				summary, done = out, true
				out = "Task marked complete."
			}
		}
		if malformed {
			a.malformed++
		} else {
			a.malformed = 0
		}
		msg := Message{Role: RoleTool, ToolCallID: c.ID, Name: c.Name, Content: capOutput(out, a.cfg.MaxToolOutput)}
		a.history = append(a.history, msg)
		a.cfg.Trajectory.Record(Event{
			Type: EventToolResult, Step: a.steps, Message: wireMessage(msg), Tool: c.Name, Arguments: c.Arguments,
			IsError: isErr, Malformed: malformed, Blocked: blocked, Approval: approval, DurationMS: a.cfg.Now().Sub(begin).Milliseconds(),
		})
	}
	if a.malformed >= a.cfg.MaxMalformed && !done {
		return "", false, a.tooManyMalformed()
	}
	return summary, done, nil
}

func (a *Agent) tooManyMalformed() error {
	return fmt.Errorf("%w: %d malformed tool calls in a row", errMalformed, a.malformed)
}

var errMalformed = errors.New("the model keeps sending malformed tool calls")

func (a *Agent) toolNames() string {
	names := make([]string, len(a.specs))
	for i, s := range a.specs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

func orEmptyObject(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// finish turns how the loop ended into an Outcome and records it.
func (a *Agent) finish(parent context.Context, err error, summary string) Outcome {
	out := Outcome{
		Status: StatusCompleted, Summary: summary, Steps: a.steps,
		Questions: append([]string(nil), a.questions...), Compactions: a.compactions,
	}
	switch {
	case err == nil:
	case parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded), errors.Is(err, ErrNotApproved):
		out.Status = StatusInterrupted
	case errors.Is(err, errStepLimit):
		out.Status = StatusStepLimit
	case parent.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, errTimeLimit):
		// The caller's deadline passing is a time limit too, not a stop.
		out.Status = StatusTimeLimit
		err = fmt.Errorf("%w: %s", errTimeLimit, a.cfg.TimeLimit)
	case errors.Is(err, budget.ErrExhausted):
		out.Status = StatusBudgetExhausted
	case errors.Is(err, ErrSandbox):
		out.Status = StatusSandboxError
	default:
		out.Status = StatusModelError
	}
	if err != nil {
		out.Error = err.Error()
	}
	out.Spend = a.cfg.Meter.Summary()
	a.cfg.Trajectory.Record(Event{Type: EventStatus, Step: a.steps, Status: out.Status, Summary: out.Summary, Error: out.Error, Outcome: &out})
	return out
}
