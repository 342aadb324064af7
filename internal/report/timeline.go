package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/runner-dev/runner/agent"
	"github.com/runner-dev/runner/tasks"
)

// Limits on what a timeline holds: a trajectory is written by the run, but
// what is in it came from the agent and the repository, and may be huge.
const (
	// maxText is how much of one text (a tool's output, a reply, the
	// arguments of a call) a timeline keeps.
	maxText = 8 << 10
	// maxEntries is how many entries a timeline keeps.
	maxEntries = 5000
	// maxLine is the longest trajectory line read; longer ones are skipped.
	maxLine = 16 << 20
)

// Text is an untrusted text cut to a size, with what was cut counted.
type Text struct {
	Text string
	// Omitted counts the bytes left out at the end.
	Omitted int
}

func (t Text) empty() bool { return t.Text == "" && t.Omitted == 0 }

// clip keeps the first max bytes of s, cut at a character boundary.
func clip(s string, max int) Text {
	if len(s) <= max {
		return Text{Text: s}
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return Text{Text: s[:cut], Omitted: len(s) - cut}
}

// Entry kinds of a timeline.
const (
	KindMessage    = "message"    // a user or system message: the task, a check's feedback
	KindStep       = "step"       // a model call, its reply and the tool calls of the reply
	KindRetry      = "retry"      // a failed attempt of a model call, retried
	KindCompaction = "compaction" // the history compacted
	KindCheck      = "check"      // the task's check ran
	KindSetup      = "setup"      // the task's setup ran, or its cached result was taken
	KindEnd        = "end"        // the agent's run ended
)

// Entry is one event of a timeline, in the order it happened.
type Entry struct {
	Kind string
	Time time.Time
	Step int
	// Agent is the sub-agent the entry is of ("1", "1.2"), "" for the
	// task's agent; Depth is how deeply it is nested (0 for the task's).
	Agent string
	Depth int

	// message
	Role string
	// message, step (the reply), end (the summary), check (the output)
	Text Text

	// step
	Purpose      string // "" or "compaction"
	Model        string
	FinishReason string
	Tokens       agent.Usage
	Estimated    bool
	CostUSD      float64
	ReservedUSD  float64
	Latency      time.Duration
	Calls        []Call

	// retry, step, end: what went wrong
	Error   string
	Attempt int
	Wait    time.Duration

	// compaction
	Stage                     string
	Replaced                  int
	TokensBefore, TokensAfter int64

	// check: the command and how it exited; end: the status
	Command string
	Status  string
	Failed  bool
}

// Call is a tool call of a step and what came of it.
type Call struct {
	ID, Name string
	// Args are the arguments, when they are a JSON object, in their
	// order; Arguments is their text otherwise.
	Args      []Arg
	Arguments Text
	// Result is what the tool returned to the model; HasResult is false
	// when the trajectory ends before it.
	Result    Text
	HasResult bool
	IsError   bool
	Malformed bool
	// Blocked says why the policy refused the call, which did not run.
	Blocked  string
	Duration time.Duration
}

// Timeline is a trajectory made readable: the agent's run as a sequence of
// entries, with the texts cut to a size.
type Timeline struct {
	// Start is the time of the first event.
	Start  time.Time
	Prompt Text
	Model  string
	Tools  []string
	// Entries are in the order of the trajectory.
	Entries []Entry
	// Steps, Retries, Compactions and Refusals count what the timeline
	// holds; CostUSD adds up its model calls.
	Steps, Retries, Compactions, Refusals int
	CostUSD                               float64
	// Notes say what was left out.
	Notes []string
}

// TrajectoryPath is where a run writes the trajectory of an attempt.
func TrajectoryPath(out, id string, attempt int) string {
	return filepath.Join(out, "trajectories", tasks.TrajectoryName(id, attempt, 0))
}

// ReadTimeline reads the trajectory at path.
func ReadTimeline(path string) (*Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read trajectory: %w", err)
	}
	defer f.Close()
	tl, err := readTimeline(f)
	if err != nil {
		return nil, fmt.Errorf("read trajectory %s: %w", path, err)
	}
	return tl, nil
}

func readTimeline(r io.Reader) (*Timeline, error) {
	tl := &Timeline{}
	br := bufio.NewReaderSize(r, 64<<10)
	skipped, unreadable := 0, 0
	for n := 1; ; n++ {
		line, err := readLine(br, maxLine)
		if errors.Is(err, errLongLine) {
			skipped++
			continue
		}
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		var e agent.Event
		if jerr := json.Unmarshal(line, &e); jerr != nil {
			if err != io.EOF { // the last line may be being written
				unreadable++
			}
		} else {
			tl.add(e)
		}
		if err == io.EOF {
			break
		}
	}
	if skipped > 0 {
		tl.Notes = append(tl.Notes, fmt.Sprintf("%d event(s) longer than %d bytes are left out", skipped, maxLine))
	}
	if unreadable > 0 {
		tl.Notes = append(tl.Notes, fmt.Sprintf("%d line(s) of the trajectory cannot be read and are left out", unreadable))
	}
	if len(tl.Entries) >= maxEntries {
		tl.Notes = append(tl.Notes, fmt.Sprintf("the timeline is cut after %d entries", maxEntries))
	}
	return tl, nil
}

var errLongLine = errors.New("line too long")

// readLine reads one line without its end; a line over max bytes is
// read to its end and reported as errLongLine.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			return nil, errLongLine
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return line, err
		}
		return line[:len(line)-1], nil
	}
}

// add takes one event into the timeline.
func (tl *Timeline) add(e agent.Event) {
	if len(tl.Entries) >= maxEntries && e.Type != agent.EventStatus {
		return
	}
	if tl.Start.IsZero() {
		tl.Start = e.Time
	}
	// A sub-agent's entries are marked as its own, and its steps are
	// kept apart from its parent's.
	defer tl.markAgent(len(tl.Entries), e.Agent)
	switch e.Type {
	case agent.EventTask:
		if e.Agent != "" {
			return // its task comes as its first message
		}
		tl.Prompt, tl.Model, tl.Tools = clip(e.Text, maxText), e.Model, e.Tools
	case agent.EventContinue:
		if e.Agent != "" {
			return
		}
		// The history goes on from the earlier attempt's; the message
		// telling the agent to go on comes next, shown as a message.
		tl.Model, tl.Tools = e.Model, e.Tools
	case agent.EventMessage:
		if e.Message == nil || e.Message.Role == "system" {
			return // the system prompt is runner's own, the same for every task
		}
		if e.Agent == "" && e.Step == 0 && len(tl.Entries) == 0 && !tl.Prompt.empty() {
			return // the task's prompt, shown as Prompt
		}
		tl.Entries = append(tl.Entries, Entry{Kind: KindMessage, Time: e.Time, Step: e.Step, Role: e.Message.Role,
			Text: clip(e.Message.Content, maxText)})
	case agent.EventRequest:
		tl.Entries = append(tl.Entries, Entry{Kind: KindStep, Time: e.Time, Step: e.Step, Purpose: e.Purpose, ReservedUSD: e.ReservedUSD})
		tl.Steps++
	case agent.EventResponse:
		s := tl.step(e.Agent, e.Step)
		if s == nil {
			tl.Entries = append(tl.Entries, Entry{Kind: KindStep, Time: e.Time, Step: e.Step, Purpose: e.Purpose})
			s = &tl.Entries[len(tl.Entries)-1]
			tl.Steps++
		}
		s.Model, s.FinishReason, s.Estimated, s.CostUSD = e.Model, e.FinishReason, e.UsageEstimated, e.CostUSD
		s.Latency, s.Error = time.Duration(e.LatencyMS)*time.Millisecond, e.Error
		if e.Usage != nil {
			s.Tokens = *e.Usage
		}
		tl.CostUSD += e.CostUSD
		if e.Message != nil {
			s.Text = clip(e.Message.Content, maxText)
			for _, c := range e.Message.ToolCalls {
				s.Calls = append(s.Calls, newCall(c.ID, c.Name, c.Arguments))
			}
		}
	case agent.EventToolResult:
		c := tl.call(e)
		c.HasResult, c.IsError, c.Malformed, c.Blocked = true, e.IsError, e.Malformed, e.Blocked
		c.Duration = time.Duration(e.DurationMS) * time.Millisecond
		if e.Message != nil {
			c.Result = clip(e.Message.Content, maxText)
		}
		if e.Blocked != "" {
			tl.Refusals++
		}
	case agent.EventRetry:
		if e.Step == 0 { // the model's retries do not know the step: it is the one under way
			e.Step = tl.lastStep(e.Agent)
		}
		tl.Entries = append(tl.Entries, Entry{Kind: KindRetry, Time: e.Time, Step: e.Step, Attempt: e.Attempt,
			Wait: time.Duration(e.WaitMS) * time.Millisecond, Error: e.Error})
		tl.Retries++
	case agent.EventCompaction:
		tl.Entries = append(tl.Entries, Entry{Kind: KindCompaction, Time: e.Time, Step: e.Step, Stage: e.Stage,
			Replaced: e.Replaced, TokensBefore: e.TokensBefore, TokensAfter: e.TokensAfter})
		tl.Compactions++
	case agent.EventCheck:
		tl.Entries = append(tl.Entries, Entry{Kind: KindCheck, Time: e.Time, Command: e.Text, Status: string(e.Status),
			Text: clip(e.Summary, maxText), Failed: e.IsError})
	case agent.EventSetup:
		tl.Entries = append(tl.Entries, Entry{Kind: KindSetup, Time: e.Time, Command: e.Text, Status: string(e.Status),
			Text: clip(e.Summary, maxText), Failed: e.IsError})
	case agent.EventStatus:
		tl.Entries = append(tl.Entries, Entry{Kind: KindEnd, Time: e.Time, Step: e.Step, Status: string(e.Status),
			Text: clip(e.Summary, maxText), Error: e.Error})
	}
}

// step returns the latest entry of model call n of an agent, if it is
// still open.
func (tl *Timeline) step(agent string, n int) *Entry {
	for i := len(tl.Entries) - 1; i >= 0; i-- {
		e := &tl.Entries[i]
		if e.Kind == KindStep && e.Agent == agent {
			if e.Step == n {
				return e
			}
			return nil
		}
	}
	return nil
}

// lastStep is the number of the latest model call of an agent.
func (tl *Timeline) lastStep(agent string) int {
	for i := len(tl.Entries) - 1; i >= 0; i-- {
		if tl.Entries[i].Kind == KindStep && tl.Entries[i].Agent == agent {
			return tl.Entries[i].Step
		}
	}
	return 0
}

// call returns the call a tool result answers: the latest step's call
// with its id, or a call added for it when the reply is not in the
// trajectory.
func (tl *Timeline) call(e agent.Event) *Call {
	id := ""
	if e.Message != nil {
		id = e.Message.ToolCallID
	}
	s := tl.step(e.Agent, e.Step)
	if s == nil {
		tl.Entries = append(tl.Entries, Entry{Kind: KindStep, Time: e.Time, Step: e.Step})
		s = &tl.Entries[len(tl.Entries)-1]
	}
	for i := range s.Calls {
		if s.Calls[i].ID == id && !s.Calls[i].HasResult {
			return &s.Calls[i]
		}
	}
	s.Calls = append(s.Calls, newCall(id, e.Tool, e.Arguments))
	return &s.Calls[len(s.Calls)-1]
}

// Checks returns the timeline's check runs.
func (tl *Timeline) Checks() []Entry {
	var out []Entry
	for _, e := range tl.Entries {
		if e.Kind == KindCheck {
			out = append(out, e)
		}
	}
	return out
}

// Arg is one argument of a tool call: a string as it is, any other value
// as JSON.
type Arg struct {
	Key   string
	Value Text
}

func newCall(id, name, arguments string) Call {
	c := Call{ID: id, Name: name}
	if c.Args = objectArgs(arguments); c.Args == nil {
		c.Arguments = clip(arguments, maxText)
	}
	return c
}

// objectArgs splits a JSON object into its members, in order; nil when
// args is not a JSON object.
func objectArgs(args string) []Arg {
	dec := json.NewDecoder(strings.NewReader(args))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []Arg
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		var text string
		if json.Unmarshal(raw, &text) != nil {
			text = string(raw)
		}
		out = append(out, Arg{Key: key, Value: clip(text, maxText)})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil
	}
	if out == nil {
		out = []Arg{}
	}
	return out
}
